"""Stage gpudirect, pure: DMA-BUF where it works, nvidia-peermem otherwise, and evidence it is really usable."""

from __future__ import annotations

from steps.gpudirect.facts import GpuDirectFacts, choose_mode, gpu_paths, kernel_version, peermem_kernel_lines
from steps.gpudirect.plan import PEERMEM_CONF_TEXT, build_plan, host_checks
from steps.gpudirect.stage import GpuDirect
from steps.gpudirect.verify import nccl_gdr_check, path_check, perftest_check
from tests.fixture_files import real_output
from tests.steps.facts_builder import answers, view
from wizard.parsers import parse

OPEN = dict(license="Dual MIT/GPL", driver_version="550.127.05")
PROPRIETARY = dict(license="NVIDIA", driver_version="550.127.05")


def facts(**fields) -> GpuDirectFacts:
    base = dict(gpus=8, kernel="5.15.0-125-generic", ofed_stack="doca", peermem_available=True, **PROPRIETARY)
    base.update(fields)
    return GpuDirectFacts(**base)


def test_dmabuf_is_chosen_with_open_kernel_modules_on_kernel_5_12_or_later():
    plan = build_plan("server1", facts(**OPEN), "auto")
    assert plan.changes == [] and not plan.blockers
    assert plan.noop_reason.startswith("DMA-BUF: kernel 5.15.0-125-generic (>= 5.12) and the open GPU kernel modules")


def test_dmabuf_needs_kernel_5_12():
    mode, blockers = choose_mode(facts(kernel="5.4.0-150-generic", **OPEN), "dmabuf")
    assert mode == "dmabuf"
    assert blockers == ["DMA-BUF is not available: kernel 5.4.0-150-generic is older than 5.12"]
    assert kernel_version("6.8.0-45-generic") == (6, 8)


def test_proprietary_modules_on_doca_fall_back_to_nvidia_peermem_loaded_and_persisted():
    plan = build_plan("server1", facts(), "auto")
    assert [c.summary for c in plan.changes] == [
        "load nvidia-peermem",
        "load nvidia-peermem at every boot (/etc/modules-load.d/nvidia-peermem.conf)",
    ]
    load = plan.changes[0].commands[0]
    assert load.argv == ["modprobe", "nvidia-peermem"] and load.ok_exit_codes == [0, 1]
    assert plan.changes[1].files[0].content.splitlines()[-1] == "nvidia-peermem"
    assert "proprietary kernel modules" in plan.notes[0]


def test_never_the_deprecated_nv_peer_mem_and_no_udev_rule():
    plan = build_plan("server1", facts(), "peermem")
    text = " ".join(c.shell() for ch in plan.changes for c in ch.commands)
    paths = [f.path for ch in plan.changes for f in ch.files]
    assert "nv_peer_mem" not in text
    assert paths == ["/etc/modules-load.d/nvidia-peermem.conf"]


def test_inbox_stack_refuses_peermem_explaining_unknown_symbol_and_suggesting_dmabuf():
    plan = build_plan("server1", facts(ofed_stack=None), "auto")
    assert plan.changes == []
    (blocker,) = plan.blockers
    assert "Unknown symbol ib_register_peer_memory_client" in blocker
    assert "open GPU kernel modules" in blocker  # why DMA-BUF is not available either


def test_forced_dmabuf_with_proprietary_modules_is_a_blocker():
    plan = build_plan("server1", facts(), "dmabuf")
    assert plan.blockers == [
        "server1: DMA-BUF is not available: the NVIDIA driver uses the proprietary kernel modules (modinfo license "
        "'NVIDIA'); DMA-BUF export needs the open GPU kernel modules"
    ]


def test_missing_nvidia_driver_is_a_blocker_with_the_fix():
    plan = build_plan("server1", facts(license=None, driver_version=None), "auto")
    assert "install the NVIDIA data-center driver" in plan.blockers[0]


def test_loaded_and_persisted_peermem_plans_nothing():
    plan = build_plan("server1", facts(peermem_loaded=True, peermem_conf=PEERMEM_CONF_TEXT), "auto")
    assert plan.changes == [] and plan.noop_reason == (
        "nvidia-peermem is loaded and listed in /etc/modules-load.d/nvidia-peermem.conf"
    )


def test_off_and_gpu_less_hosts_do_nothing():
    assert build_plan("server1", facts(), "off").noop_reason == "gpudirect.mode is off"
    assert build_plan("server1", facts(gpus=0), "auto").noop_reason == "no NVIDIA GPU on this host"


def test_peermem_that_failed_to_load_fails_with_the_kernel_log_and_the_fix():
    log = peermem_kernel_lines(
        "[  1.0] Linux version 5.15\n[ 42.1] nvidia_peermem: Unknown symbol ib_register_peer_memory_client (err -2)\n"
    )
    items = {i.id: i for i in host_checks(facts(kernel_log=log, peermem_conf=PEERMEM_CONF_TEXT), "auto", None)}
    loaded = items["peermem_loaded"]
    assert loaded.status == "fail"
    assert "Unknown symbol ib_register_peer_memory_client" in loaded.evidence
    assert "reinstall the NVIDIA driver after DOCA-OFED" in loaded.fix and "DMA-BUF" in loaded.fix
    assert items["peermem_persisted"].status == "pass"


def test_gpu_nic_paths_from_real_topology_say_which_gpus_nccl_uses_gdr_for():
    topo = parse("nvidia_smi_topo", real_output("nvidia_smi_topo", "l40s-tp8-normalized-nic0-8.txt"))
    paths = gpu_paths(topo, set())
    assert {p.gpu: p.path for p in paths} == {0: "NODE", 1: "NODE", 2: "NODE", 3: "NODE",
                                              4: "SYS", 5: "SYS", 6: "SYS", 7: "SYS"}  # fmt: skip
    item = path_check(paths)
    assert item.status == "warn"
    assert "for no GPU" in item.evidence and "via NODE/SYS" in item.evidence


def test_gpus_behind_the_nics_pcie_switch_pass():
    topo = parse(
        "nvidia_smi_topo",
        "\tGPU0\tGPU1\tNIC0\tNIC1\tCPU Affinity\n"
        "GPU0\t X \tSYS\tPIX\tSYS\t0-31\nGPU1\tSYS\t X \tSYS\tPXB\t32-63\n"
        "NIC0\tPIX\tSYS\t X \tSYS\nNIC1\tSYS\tPXB\tSYS\t X \n\nNIC Legend:\n\n  NIC0: mlx5_0\n  NIC1: mlx5_2\n",
    )
    paths = gpu_paths(topo, {"mlx5_0", "mlx5_2"})
    assert [(p.gpu, p.nics, p.path) for p in paths] == [(0, ["mlx5_0"], "PIX"), (1, ["mlx5_2"], "PXB")]
    assert path_check(paths).status == "pass"


def test_perftest_pair_verdicts():
    assert perftest_check(None, "dmabuf").status == "skip"
    assert perftest_check({"skipped": "perftest on server1 is built without CUDA"}, "dmabuf").status == "skip"
    ok = perftest_check({"device": "mlx5_0", "gpu": 0, "peer": "server2", "peer_device": "mlx5_0", "peer_gpu": 0,
                         "gbps": 23.1, "flags": "--use_cuda 0 --use_cuda_dmabuf"}, "dmabuf")  # fmt: skip
    assert ok.status == "pass" and "23.1 Gb/s" in ok.evidence
    bad = perftest_check({"device": "mlx5_0", "error": "Couldn't allocate MR"}, "peermem")
    assert bad.status == "fail" and "nvidia_peermem" in bad.fix


def test_nccl_log_is_the_definitive_proof():
    enabled = parse(
        "nccl_debug",
        "node1:1:1 [0] NCCL INFO NET/IB : GPU Direct RDMA (DMABUF) enabled for HCA 0 'mlx5_0'\n"
        "node1:1:1 [0] NCCL INFO Channel 00/0 : 0[0] -> 8[0] [send] via NET/IB/0/GDRDMA\n",
    )
    item = nccl_gdr_check(enabled)
    assert item.status == "pass" and "DMA-BUF" in item.evidence and "NET/IB/0/GDRDMA" in item.evidence
    disabled = parse("nccl_debug", "node1:1:1 [0] NCCL INFO NET/IB : GPU Direct RDMA Disabled for HCA 0 'mlx5_0'\n")
    assert nccl_gdr_check(disabled).status == "fail"
    sockets = parse("nccl_debug", real_output("nccl_debug", "nccl-issue226-aws-socket-noib-6.txt"))
    assert nccl_gdr_check(sockets).status == "fail"


def test_step_reads_stored_facts_and_cluster_results():
    ans = answers()
    stored = facts(**OPEN).model_dump(mode="json") | {"cluster": {"gdr_test": {"skipped": "no CUDA perftest"}}}
    items = GpuDirect().checks(view(ans, {"server1": {"gpudirect": stored}}), "server1")
    assert [i.id for i in items] == ["gpudirect_mode", "gpu_nic_paths", "gdr_perftest"]
    assert items[0].status == "pass" and items[2].status == "skip"


class PairHost:
    """A host that answers ib_write_bw with a canned output and records the argv it got."""

    def __init__(self, name: str, output: str, status: int = 0) -> None:
        self.name, self.output, self.status, self.argv = name, output, status, None

    async def run(self, argv, **kwargs):
        from wizard.executors.base import CommandResult

        self.argv = list(argv)
        return CommandResult(" ".join(argv), self.status, self.output, "", 0.1)


def pair_facts(ipv4: str, **fields) -> GpuDirectFacts:
    from steps.gpudirect.facts import GpuPath, Rail

    base = dict(
        perftest_cuda=True,
        perftest_dmabuf=True,
        paths=[GpuPath(gpu=0, nics=["mlx5_0"], path="PXB")],
        rails=[Rail(device="mlx5_0", netdev="ens1f0np0", ipv4=ipv4, gpu=0, gid_index=3)],
        **OPEN,
    )
    return facts(**(base | fields))


async def test_cluster_probe_runs_one_cuda_dmabuf_pair_on_a_shared_rail():
    ans = answers()
    v = view(ans, {"server1": {"gpudirect": pair_facts(ipv4="192.168.11.1/24")},
                   "server2": {"gpudirect": pair_facts(ipv4="192.168.11.2/24")}})  # fmt: skip
    client = PairHost("server1", real_output("ib_write_bw", "k8s-multus-roce-client-a-gbits-10.txt"))
    server = PairHost("server2", "")
    result = await GpuDirect().cluster_probe(v, {"server1": client, "server2": server})
    assert server.argv == ["ib_write_bw", "-d", "mlx5_0", "--use_cuda=0", "--use_cuda_dmabuf", "-x", "3",
                           "--tclass=106", "-F", "--report_gbits", "-D", "5", "-p", "18515"]  # fmt: skip
    assert client.argv == server.argv + ["192.168.11.2"]
    test = result["server1"]["gdr_test"]
    assert test["gbps"] == 196.07 and test["error"] is None and test["peer"] == "server2"
    assert result["server2"]["gdr_test"]["peer"] == "server1"
    assert perftest_check(test, "dmabuf").status == "pass"


async def test_cluster_probe_skips_with_the_reason_when_perftest_has_no_cuda():
    ans = answers()
    plain = pair_facts(ipv4="192.168.11.2/24", perftest_cuda=False)
    v = view(ans, {"server1": {"gpudirect": pair_facts(ipv4="192.168.11.1/24")}, "server2": {"gpudirect": plain}})
    result = await GpuDirect().cluster_probe(
        v, {"server1": PairHost("server1", ""), "server2": PairHost("server2", "")}
    )
    assert result["server1"]["gdr_test"]["skipped"].startswith("perftest on server2 is built without CUDA")


# NVIDIA driver README "GPUDirect RDMA Peer Memory Client": a GPU driver installed before MLNX_OFED/DOCA must be
# installed again; nvidia-peermem.Kbuild links the peer-memory API only when /usr/src/ofa_kernel existed at build.
BUILT_BEFORE_DOCA = dict(peermem_depends=[], nvidia_dkms_package="nvidia-dkms-550-server")


def test_driver_built_before_doca_is_rebuilt_by_reinstalling_its_dkms_package_before_peermem_loads():
    plan = build_plan("server1", facts(**BUILT_BEFORE_DOCA), "auto")
    rebuild, load, persist = plan.changes
    assert rebuild.summary == (
        "Rebuild the NVIDIA driver's kernel modules against the installed RDMA stack (nvidia-dkms-550-server reinstall)"
    )
    assert [c.shell() for c in rebuild.commands] == [
        "sudo env DEBIAN_FRONTEND=noninteractive apt-get install --reinstall -y nvidia-dkms-550-server"
    ]
    assert rebuild.impact == "disruptive" and not rebuild.reboot
    assert "no ib_core" in rebuild.why and "installed again" in rebuild.why
    assert (load.summary, persist.files[0].path) == ("load nvidia-peermem", "/etc/modules-load.d/nvidia-peermem.conf")
    assert any(n.startswith("alternative to the rebuild: DMA-BUF") for n in plan.notes)


def test_missing_kernel_headers_are_installed_before_the_rebuild():
    plan = build_plan("server1", facts(kernel_headers=False, **BUILT_BEFORE_DOCA), "auto")
    assert [c.argv[3:] for c in plan.changes[0].commands] == [
        ["install", "-y", "linux-headers-5.15.0-125-generic"],
        ["install", "--reinstall", "-y", "nvidia-dkms-550-server"],
    ]


def test_a_build_against_another_doca_release_is_rebuilt_too():
    log = ["[ 9.1] nvidia_peermem: disagrees about version of symbol ib_register_peer_memory_client"]
    plan = build_plan("server1", facts(peermem_depends=["ib_core", "nvidia"], kernel_log=log,
                                       nvidia_dkms_package="nvidia-dkms-550-server"), "auto")  # fmt: skip
    assert plan.changes[0].summary.startswith("Rebuild the NVIDIA driver's kernel modules")
    assert "another DOCA-OFED/MLNX_OFED release" in plan.changes[0].why


def test_a_driver_not_installed_from_a_dkms_package_is_a_blocker_with_the_manual_fix():
    plan = build_plan("server1", facts(peermem_depends=[]), "auto")
    (blocker,) = plan.blockers
    assert blocker.startswith("server1: nvidia-peermem was built without the peer-memory API")
    assert "re-run its .run installer" in blocker and "DMA-BUF" in blocker
    assert plan.changes == []


def test_peermem_built_against_doca_needs_no_rebuild_and_its_build_check_passes():
    good = facts(peermem_depends=["ib_core", "nvidia"], nvidia_dkms_package="nvidia-dkms-550-server",
                 peermem_loaded=True, peermem_conf=PEERMEM_CONF_TEXT)  # fmt: skip
    assert build_plan("server1", good, "auto").changes == []
    items = {i.id: i for i in host_checks(good, "auto", None)}
    assert items["peermem_build"].status == "pass"
    assert items["peermem_build"].evidence == "modinfo -F depends nvidia-peermem: ib_core,nvidia"
    stale = {i.id: i for i in host_checks(facts(**BUILT_BEFORE_DOCA), "auto", None)}
    assert stale["peermem_build"].status == "fail" and "reinstall the NVIDIA driver" in stale["peermem_build"].fix


def test_inbox_hosts_never_plan_a_rebuild_since_peermem_cannot_work_there():
    plan = build_plan("server1", facts(ofed_stack=None, **BUILT_BEFORE_DOCA), "auto")
    assert plan.changes == [] and "Unknown symbol ib_register_peer_memory_client" in plan.blockers[0]
