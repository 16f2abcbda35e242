"""Stage nccl, plan side: /etc/nccl.conf from discovered facts, what it must never contain, building nccl-tests."""

from __future__ import annotations

from typing import Any

import pytest

from steps.discovery.facts import DiscoveryFacts, Gpu
from steps.nccl.conf import parse_conf
from steps.nccl.facts import Binary, NcclFacts, RdmaPortState, cuda_of_package, parse_apt_candidate, parse_ldd
from steps.nccl.probe import rdma_ports
from steps.nccl.stage import Nccl, desired
from tests.fixture_files import real_output
from tests.steps.facts_builder import REFERENCE_PORTS, answers, port, reference_host, view
from wizard.engine.step import ClusterView

STEP = Nccl()
RAILS = ("192.168.11", "192.168.12", "192.168.13", "192.168.14")
BUILT = Binary(path="/opt/nccl-tests/build/all_reduce_perf", exists=True, mpi=True, libnccl="/usr/lib/libnccl.so.2")
INSTALLED = {"libnccl2": "2.21.5-1+cuda12.4", "libnccl-dev": "2.21.5-1+cuda12.4", "openmpi-bin": "4.1.2-2ubuntu1"}


def host_disc(name: str = "server1", host_id: int = 1) -> DiscoveryFacts:
    """The reference server (OFED names) with one IPv4 per rail and MTU 9000, as the network stage leaves it."""
    disc = reference_host(name, ofed_names=True, ssh_address=f"10.0.0.{10 + host_id}")
    disc.ports = [
        port(pci, netdev, ofed, ipv4=[f"{RAILS[i]}.{host_id}/24"], numa=i // 2, mtu=9000)
        for i, (pci, netdev, _, ofed) in enumerate(REFERENCE_PORTS)
    ]
    disc.nccl_version = "2.21.5"
    disc.gpus = [Gpu(index=i, name="NVIDIA L20", bus_id=f"00000000:{0x38 + i:02X}:00.0") for i in range(8)]
    return disc


def nccl_facts(disc: DiscoveryFacts, **extra: Any) -> NcclFacts:
    """What the nccl probe reads on a host whose RDMA ports match ``disc``."""
    rdma = [
        RdmaPortState(
            device=p.rdma_device or "",
            port=p.rdma_port or 1,
            state=p.rdma_state or "ACTIVE",
            physical_state=p.physical_state,
            netdev=p.netdev,
            link_layer="Ethernet",
            roce_v2_ipv4_gids=[g.index for g in p.gids if g.version == "v2" and g.ipv4],
        )
        for p in disc.rdma_ports()
    ]
    fields: dict[str, Any] = {
        "rdma": rdma,
        "packages": dict(INSTALLED),
        "all_reduce_perf": BUILT,
        "mpirun": "mpirun (Open MPI) 4.1.2",
        "nproc": 64,
        "mtus": {p.netdev: 9000 for p in disc.rdma_ports() if p.netdev} | {"eno1": 1500},
        "modules": ["ib_core", "mlx5_core", "mlx5_ib", "nvidia", "nvidia_peermem"],
        "ssh_user": "ubuntu",
        "memlock": "unlimited",  # `bash -c 'ulimit -l'` over SSH on a host set up for RDMA
    }
    fields.update(extra)
    return NcclFacts(**fields)


def cluster(yaml: str = "", **per_host: tuple[DiscoveryFacts, NcclFacts]) -> ClusterView:
    hosts = per_host or {"server1": _pair("server1", 1), "server2": _pair("server2", 2)}
    facts = {name: {"discovery": d, "nccl": n} for name, (d, n) in hosts.items()}
    return view(answers(yaml, tuple(hosts)), facts)


def _pair(name: str, host_id: int, **extra: Any) -> tuple[DiscoveryFacts, NcclFacts]:
    disc = host_disc(name, host_id)
    return disc, nccl_facts(disc, **extra)


def conf_of(v: ClusterView, host: str = "server1") -> str:
    plan = STEP.plan(v, host)
    assert not plan.blockers, plan.blockers
    files = [f for c in plan.changes for f in c.files if f.path == "/etc/nccl.conf"]
    assert files, "no nccl.conf in the plan"
    return files[0].content


def settings(text: str) -> dict[str, str]:
    return {e.key: e.value for e in parse_conf(text)}


def configured(v: ClusterView) -> ClusterView:
    """The same cluster after the plan's files were written (the state a second run sees)."""
    for host, stages in v.facts.items():
        disc, facts = DiscoveryFacts.model_validate(stages["discovery"]), NcclFacts.model_validate(stages["nccl"])
        stages["nccl"]["conf"] = desired(v, host, disc, facts, facts.nccl_version).content
    return v


# --- what nccl.conf contains -----------------------------------------------------------------------------


def test_ib_hca_lists_exactly_the_active_roce_ports_with_exact_match_prefix() -> None:
    assert settings(conf_of(cluster()))["NCCL_IB_HCA"] == "=mlx5_0:1,mlx5_1:1,mlx5_2:1,mlx5_3:1"


def test_ib_hca_uses_inbox_rocep_names_when_the_host_has_them() -> None:
    disc = reference_host("server1", ofed_names=False)
    pair = (disc, nccl_facts(host_disc("server1", 1)))
    for state, inbox in zip(pair[1].rdma, disc.rdma_ports(), strict=True):
        state.device = inbox.rdma_device or ""  # inbox rdma-core names come from the host, never from a list
    text = conf_of(cluster(server1=pair, server2=_pair("server2", 2)))
    assert settings(text)["NCCL_IB_HCA"] == "=rocep59s0f0:1,rocep59s0f1:1,rocep134s0f0:1,rocep134s0f1:1"


def test_a_port_without_link_is_left_out_of_ib_hca_and_named_in_the_notes() -> None:
    disc = host_disc("server1", 1)
    facts = nccl_facts(disc)
    facts.rdma[3].state, facts.rdma[3].physical_state = "DOWN", "DISABLED"
    v = cluster(server1=(disc, facts), server2=_pair("server2", 2))
    assert settings(conf_of(v))["NCCL_IB_HCA"] == "=mlx5_0:1,mlx5_1:1,mlx5_2:1"
    assert any("mlx5_3:1" in note and "DOWN" in note for note in STEP.plan(v, "server1").notes)


def test_lag_devices_appear_only_where_the_host_has_them() -> None:
    disc = host_disc("server1", 1)
    facts = nccl_facts(disc, bonds={"bond0": ["ens1f0np0", "ens1f1np1"]})
    facts.rdma = [
        RdmaPortState(device="mlx5_bond_0", port=1, state="ACTIVE", netdev="bond0", link_layer="Ethernet",
                      roce_v2_ipv4_gids=[3]),
        *facts.rdma[2:],
    ]  # fmt: skip
    with_lag = settings(conf_of(cluster(server1=(disc, facts), server2=_pair("server2", 2))))["NCCL_IB_HCA"]
    assert with_lag == "=mlx5_2:1,mlx5_3:1,mlx5_bond_0:1"
    assert "bond" not in settings(conf_of(cluster()))["NCCL_IB_HCA"]


def test_infiniband_ports_are_skipped_with_a_reason() -> None:
    disc = host_disc("server1", 1)
    facts = nccl_facts(disc)
    facts.rdma[0].link_layer = "InfiniBand"
    v = cluster(server1=(disc, facts), server2=_pair("server2", 2))
    assert "mlx5_0" not in settings(conf_of(v))["NCCL_IB_HCA"]
    assert any("mlx5_0:1 (InfiniBand" in note for note in STEP.plan(v, "server1").notes)


def test_socket_ifname_is_the_management_interface_with_exact_match() -> None:
    assert settings(conf_of(cluster()))["NCCL_SOCKET_IFNAME"] == "=eno1"


def test_socket_ifname_answer_overrides_discovery() -> None:
    disc = host_disc("server1", 1)
    disc.other_interfaces["eno2"] = ["10.1.0.11/24"]
    v = cluster("nccl:\n  socket_ifname: eno2\n", server1=(disc, nccl_facts(disc)), server2=_pair("server2", 2))
    assert settings(conf_of(v))["NCCL_SOCKET_IFNAME"] == "=eno2"


def test_cross_nic_is_zero_for_back_to_back_rails() -> None:
    assert settings(conf_of(cluster()))["NCCL_CROSS_NIC"] == "0"


def test_ib_tc_comes_from_roce_tos() -> None:
    assert settings(conf_of(cluster()))["NCCL_IB_TC"] == "106"
    assert settings(conf_of(cluster("roce:\n  tos: 98\n")))["NCCL_IB_TC"] == "98"


def test_gid_index_is_never_set_for_nccl_2_21_and_later() -> None:
    assert "NCCL_IB_GID_INDEX" not in settings(conf_of(cluster()))


def test_gid_index_is_the_discovered_roce_v2_ipv4_entry_for_older_nccl() -> None:
    hosts = {}
    for name, host_id in (("server1", 1), ("server2", 2)):
        disc, facts = _pair(name, host_id)
        facts.packages["libnccl2"] = "2.18.3-1+cuda12.2"
        for state in facts.rdma:
            state.roce_v2_ipv4_gids = [5]  # extra addresses shift the table: 5, not the seed's hard-coded 3
        hosts[name] = (disc, facts)
    assert settings(conf_of(cluster(**hosts)))["NCCL_IB_GID_INDEX"] == "5"


def test_old_nccl_with_different_gid_indexes_per_hca_is_a_blocker() -> None:
    disc, facts = _pair("server1", 1)
    facts.packages["libnccl2"] = "2.18.3-1+cuda12.2"
    facts.rdma[2].roce_v2_ipv4_gids = [5]
    plan = STEP.plan(cluster(server1=(disc, facts), server2=_pair("server2", 2)), "server1")
    assert plan.blockers and "mlx5_2:1 -> 5" in plan.blockers[0] and not plan.changes


def test_no_active_roce_port_is_a_blocker_naming_the_host() -> None:
    disc, facts = _pair("server1", 1)
    for state in facts.rdma:
        state.state = "DOWN"
    plan = STEP.plan(cluster(server1=(disc, facts), server2=_pair("server2", 2)), "server1")
    assert plan.blockers and plan.blockers[0].startswith("server1: no RoCE port NCCL can use (mlx5_0:1 (state DOWN")


def test_file_is_nccl_key_value_format_with_comments_in_column_zero() -> None:
    for line in conf_of(cluster()).splitlines():
        assert line.startswith("#") or (
            "=" in line and line.split("=", 1)[0].startswith("NCCL_") and " " not in line
        ), line


# --- the seed's wrong list: never written, removed when found -------------------------------------------------

SEED_CONF = """export NCCL_DEBUG=INFO
NCCL_IB_RETRY_CNT=15
NCCL_IB_CUDA_SUPPORT=1
NCCL_NET_GDR_LEVEL=5
NCCL_P2P_LEVEL=5
NCCL_MIN_NCHANNELS=4
NCCL_ALGO=COLLNET_CHAIN
NCCL_IB_GID_INDEX=3
NCCL_SOCKET_IFNAME=bond0
NCCL_IB_TIMEOUT=22
"""


@pytest.fixture(scope="module")
def from_seed() -> dict[str, str]:
    disc, facts = _pair("server1", 1, conf=SEED_CONF)
    return settings(conf_of(cluster(server1=(disc, facts), server2=_pair("server2", 2))))


def test_retry_count_above_seven_is_never_kept(from_seed: dict[str, str]) -> None:
    assert "NCCL_IB_RETRY_CNT" not in from_seed


def test_removed_cuda_support_variable_is_never_kept(from_seed: dict[str, str]) -> None:
    assert "NCCL_IB_CUDA_SUPPORT" not in from_seed


def test_integer_gdr_level_five_is_never_kept(from_seed: dict[str, str]) -> None:
    assert "NCCL_NET_GDR_LEVEL" not in from_seed


def test_integer_p2p_level_five_is_never_kept(from_seed: dict[str, str]) -> None:
    assert "NCCL_P2P_LEVEL" not in from_seed


def test_deprecated_min_nchannels_is_never_kept(from_seed: dict[str, str]) -> None:
    assert "NCCL_MIN_NCHANNELS" not in from_seed


def test_collnet_algorithm_is_never_kept(from_seed: dict[str, str]) -> None:
    assert "NCCL_ALGO" not in from_seed


def test_debug_info_is_never_permanent(from_seed: dict[str, str]) -> None:
    assert from_seed["NCCL_DEBUG"] == "WARN"
    assert "NCCL_DEBUG=INFO" not in conf_of(cluster())


def test_no_line_is_exported_or_quoted() -> None:
    for line in conf_of(cluster()).splitlines():
        if not line.startswith("#"):
            assert not line.startswith("export") and '"' not in line and "'" not in line


def test_seed_gid_index_and_bond_bootstrap_are_replaced(from_seed: dict[str, str]) -> None:
    assert "NCCL_IB_GID_INDEX" not in from_seed and from_seed["NCCL_SOCKET_IFNAME"] == "=eno1"


def test_unrelated_operator_settings_are_kept(from_seed: dict[str, str]) -> None:
    assert from_seed["NCCL_IB_TIMEOUT"] == "22"


def test_every_removed_setting_is_explained_in_the_notes() -> None:
    disc, facts = _pair("server1", 1, conf=SEED_CONF)
    notes = " ".join(STEP.plan(cluster(server1=(disc, facts), server2=_pair("server2", 2)), "server1").notes)
    for key in ("NCCL_IB_RETRY_CNT=15", "NCCL_IB_CUDA_SUPPORT", "NCCL_NET_GDR_LEVEL=5", "NCCL_ALGO=COLLNET_CHAIN"):
        assert key in notes


def test_bashrc_that_sources_nccl_conf_is_cleaned() -> None:
    bashrc = "# System-wide .bashrc\nalias ll='ls -l'\nsource /etc/nccl.conf\n"
    disc, facts = _pair("server1", 1, bashrc=bashrc)
    plan = STEP.plan(cluster(server1=(disc, facts), server2=_pair("server2", 2)), "server1")
    files = [f for c in plan.changes for f in c.files if f.path == "/etc/bash.bashrc"]
    assert files and files[0].content == "# System-wide .bashrc\nalias ll='ls -l'\n"
    assert files[0].before == bashrc


# --- idempotence and the diff -----------------------------------------------------------------------------------


def test_plan_shows_a_diff_against_the_current_file() -> None:
    disc, facts = _pair("server1", 1, conf="NCCL_IB_HCA=mlx5_0:1,mlx5_0:2\n")
    plan = STEP.plan(cluster(server1=(disc, facts), server2=_pair("server2", 2)), "server1")
    diff = plan.changes[0].files[0].diff()
    assert "-NCCL_IB_HCA=mlx5_0:1,mlx5_0:2" in diff and "+NCCL_IB_HCA==mlx5_0:1,mlx5_1:1,mlx5_2:1,mlx5_3:1" in diff


def test_second_run_plans_nothing_and_says_why() -> None:
    plan = STEP.plan(configured(cluster()), "server1")
    assert plan.changes == [] and not plan.blockers
    assert plan.noop_reason and "NCCL_IB_HCA==mlx5_0:1" in plan.noop_reason and "MPI build" in plan.noop_reason


# --- nccl-tests: locate or build --------------------------------------------------------------------------------


def _build_plan(yaml: str = "", **extra: Any) -> Any:
    disc, facts = _pair("server1", 1, **extra)
    return STEP.plan(configured(cluster(yaml, server1=(disc, facts), server2=_pair("server2", 2))), "server1")


def test_missing_nccl_tests_without_source_or_git_ref_is_a_blocker_with_the_ways_out() -> None:
    plan = _build_plan(all_reduce_perf=Binary(path="/opt/nccl-tests/build/all_reduce_perf"))
    assert len(plan.blockers) == 1
    assert "nccl.tests_git_ref" in plan.blockers[0] and "nccl.test: torch" in plan.blockers[0]


def test_missing_nccl_tests_with_a_git_ref_is_cloned_at_that_tag_and_built_with_mpi() -> None:
    plan = _build_plan(
        "nccl:\n  tests_git_ref: v2.17.9\n",
        all_reduce_perf=Binary(path="/opt/nccl-tests/build/all_reduce_perf"),
        nvcc="/usr/local/cuda",
    )
    commands = [c.argv for change in plan.changes for c in change.commands]
    assert commands[0][-3:] == ["libopenmpi-dev", "build-essential", "git"]  # libnccl-dev is already installed
    assert any(a[:2] == ["git", "clone"] and "v2.17.9" in a and a[-1] == "/opt/nccl-tests" for a in commands)
    make = next(a for a in commands if a[0] == "make")
    assert make[:3] == ["make", "-C", "/opt/nccl-tests"]
    for arg in ("MPI=1", "MPI_HOME=/usr/lib/x86_64-linux-gnu/openmpi", "CUDA_HOME=/usr/local/cuda",
                "NCCL_HOME=/usr", "BUILDDIR=/opt/nccl-tests/build"):  # fmt: skip
        assert arg in make


def test_build_installs_nccl_from_the_cuda_repository_and_the_matching_compiler() -> None:
    plan = _build_plan(
        packages={},
        libnccl2_candidate="2.23.4-1+cuda12.6",
        all_reduce_perf=Binary(path="/opt/nccl-tests/build/all_reduce_perf"),
        mpirun=None,
        tests_source="tree",
    )
    install = plan.changes[0].commands[0].argv
    assert install[:5] == ["env", "DEBIAN_FRONTEND=noninteractive", "apt-get", "install", "-y"]
    for package in ("libnccl2", "libnccl-dev", "openmpi-bin", "libopenmpi-dev", "cuda-nvcc-12-6",
                    "cuda-cudart-dev-12-6"):  # fmt: skip
        assert package in install
    make = plan.changes[-1].commands[0].argv
    assert "CUDA_HOME=/usr/local/cuda-12.6" in make


def test_nccl_without_a_cuda_repository_is_a_blocker_naming_the_repository() -> None:
    plan = _build_plan(packages={}, all_reduce_perf=Binary(path="/x"), tests_source="tree", nvcc="/usr/local/cuda")
    assert any("libnccl2" in b and "CUDA apt repository" in b for b in plan.blockers)


def test_a_build_without_mpi_is_rebuilt() -> None:
    plan = _build_plan(all_reduce_perf=BUILT.model_copy(update={"mpi": False}), tests_source="tree", nvcc="/c")
    assert any("MPI=1" in c.argv for change in plan.changes for c in change.commands)
    assert any("not linked against MPI" in note for note in plan.notes)


def test_a_foreign_directory_at_the_source_path_is_a_blocker() -> None:
    plan = _build_plan(all_reduce_perf=Binary(path="/x"), tests_source="other", nvcc="/usr/local/cuda")
    assert any("not an nccl-tests source tree" in b for b in plan.blockers)


def test_torch_test_installs_the_smoke_script_and_needs_torchrun() -> None:
    plan = _build_plan("nccl:\n  test: torch\n", torchrun=True)
    assert [f.path for c in plan.changes for f in c.files] == ["/opt/roce-wizard/nccl_allreduce_smoke.py"]
    blocked = _build_plan("nccl:\n  test: torch\n", torchrun=False)
    assert blocked.blockers and "torchrun" in blocked.blockers[0]


def test_plan_tells_the_operator_what_mpirun_needs_between_hosts() -> None:
    notes = " ".join(STEP.plan(configured(cluster()), "server2").notes)
    assert "mpirun starts on server1 as root" in notes and "ssh -o BatchMode=yes" in notes


def test_a_connectx_port_carrying_ssh_is_management_not_a_rail() -> None:
    disc, facts = _pair("server1", 1)
    disc.ssh_interface = "ens2f1np1"
    disc.other_interfaces = {}
    text = conf_of(cluster(server1=(disc, facts), server2=_pair("server2", 2)))
    assert settings(text)["NCCL_IB_HCA"] == "=mlx5_0:1,mlx5_1:1,mlx5_2:1"
    assert settings(text)["NCCL_SOCKET_IFNAME"] == "=ens2f1np1"


def test_soft_roce_devices_are_used_only_without_hardware_roce_and_then_gdr_is_not_expected() -> None:
    disc, facts = _pair("server1", 1)
    disc.other_interfaces["eno2"] = ["192.168.50.1/24"]
    facts.rdma.append(RdmaPortState(device="rxe0", port=1, state="ACTIVE", netdev="eno2", link_layer="Ethernet",
                                    roce_v2_ipv4_gids=[1]))  # fmt: skip
    v = cluster(server1=(disc, facts), server2=_pair("server2", 2))
    assert "rxe0" not in settings(conf_of(v))["NCCL_IB_HCA"]
    facts.rdma = facts.rdma[-1:]
    v = cluster(server1=(disc, facts), server2=_pair("server2", 2))
    assert settings(conf_of(v))["NCCL_IB_HCA"] == "=rxe0:1"
    assert any("Soft-RoCE" in note and "GPUDirect RDMA is impossible" in note for note in STEP.plan(v, "server1").notes)


def test_lag_device_in_real_rdma_link_output_gets_its_gid_from_sysfs() -> None:
    links = real_output("rdma_link", "ocp-roce-lag-bond1-down-disabled-4.txt")
    base = "/sys/class/infiniband/mlx5_bond_0/ports/1"
    gids = (
        f"{base}/gids/3:0000:0000:0000:0000:0000:ffff:c0a8:0b01\n{base}/gid_attrs/types/3:RoCE v2\n"
        f"{base}/gid_attrs/ndevs/3:bond0\n"
    )
    layers = "".join(f"/sys/class/infiniband/mlx5_bond_{i}/ports/1/link_layer:Ethernet\n" for i in (0, 1))
    ports = rdma_ports(links, layers, gids)
    assert [(p.name, p.state, p.roce_v2_ipv4_gids) for p in ports] == [
        ("mlx5_bond_0:1", "ACTIVE", [3]),
        ("mlx5_bond_1:1", "DOWN", []),
    ]


# --- probe parsers ------------------------------------------------------------------------------------------------


def test_ldd_tells_an_mpi_build_and_a_missing_libnccl() -> None:
    text = (
        "\tlinux-vdso.so.1 (0x00007ffc8a5f2000)\n"
        "\tlibmpi.so.40 => /lib/x86_64-linux-gnu/libmpi.so.40 (0x00007f0f7c1a2000)\n"
        "\tlibnccl.so.2 => not found\n"
        "\tlibcudart.so.12 => /usr/local/cuda/lib64/libcudart.so.12 (0x00007f0f7be00000)\n"
    )
    binary = parse_ldd("/opt/nccl-tests/build/all_reduce_perf", text, 0)
    assert binary.exists and binary.mpi and binary.libnccl is None and binary.missing == ["libnccl.so.2"]
    absent = parse_ldd("/x", "", 1)
    assert not absent.exists and not absent.mpi


def test_apt_candidate_is_read_from_apt_cache_policy() -> None:
    policy = (
        "libnccl2:\n  Installed: (none)\n  Candidate: 2.23.4-1+cuda12.6\n  Version table:\n"
        "     2.23.4-1+cuda12.6 600\n        600 https://developer.download.nvidia.com/compute/cuda/repos/ubuntu2204"
        "/x86_64  Packages\n"
    )
    assert parse_apt_candidate(policy) == "2.23.4-1+cuda12.6"
    assert parse_apt_candidate("libnccl2:\n  Installed: (none)\n  Candidate: (none)\n") is None
    assert cuda_of_package("2.23.4-1+cuda12.6") == "12.6"


# --- what NCCL inherits besides /etc/nccl.conf (issue 13 item 7) ---------------------------------------------
def _checks(v: ClusterView, host: str = "server1") -> dict[str, Any]:
    return {c.id: c for c in STEP.checks(v, host)}


def test_a_users_nccl_conf_with_a_conflicting_key_fails_naming_file_key_and_both_values() -> None:
    """NVIDIA/nccl src/misc/param.cc: ~/.nccl.conf (of the process's user) is read before /etc/nccl.conf and the
    first value wins; root's file applies to the services, the SSH user's to mpirun."""
    v = configured(cluster(server1=_pair("server1", 1, user_conf_path="/home/ubuntu/.nccl.conf",
                                         user_conf="NCCL_IB_GID_INDEX=0\nNCCL_NSOCKS_PERTHREAD=4\n",
                                         root_conf_path="/root/.nccl.conf", root_conf="NCCL_IB_TC=0\n")))  # fmt: skip
    item = _checks(v)["user_conf"]
    assert item.status == "fail"
    assert item.evidence == (
        "/home/ubuntu/.nccl.conf sets NCCL_IB_GID_INDEX=0 but /etc/nccl.conf leaves it unset; "
        "/root/.nccl.conf sets NCCL_IB_TC=0 but /etc/nccl.conf sets NCCL_IB_TC=106"
    )
    assert item.fix and item.fix.startswith("delete the line")


def test_a_users_nccl_conf_that_agrees_or_sets_unrelated_keys_passes() -> None:
    v = configured(cluster(server1=_pair("server1", 1, root_conf_path="/root/.nccl.conf",
                                         root_conf="NCCL_IB_TC=106\nNCCL_NSOCKS_PERTHREAD=4\n")))  # fmt: skip
    assert _checks(v)["user_conf"].status == "pass"


@pytest.mark.parametrize("limit", ["8192", "65536", "64"])
def test_memlock_below_unlimited_in_a_non_interactive_ssh_session_fails_with_the_limits_fix(limit: str) -> None:
    v = configured(cluster(server1=_pair("server1", 1, memlock=limit, ssh_user="ubuntu")))
    item = _checks(v)["memlock"]
    assert item.status == "fail"
    assert item.evidence.startswith(f"server1: ulimit -l in a non-interactive SSH session as ubuntu is {limit} KB")
    assert "'ubuntu soft memlock unlimited'" in item.fix and "/etc/security/limits.d/90-nccl-memlock.conf" in item.fix
    assert "LimitMEMLOCK=infinity" in item.fix


def test_memlock_unlimited_passes() -> None:
    v = configured(cluster(server1=_pair("server1", 1, memlock="unlimited", ssh_user="ubuntu")))
    assert _checks(v)["memlock"].status == "pass"


def test_a_pinned_gid_index_that_a_flap_moved_fails_naming_the_old_and_the_new_index() -> None:
    """NCCL < 2.21 gets NCCL_IB_GID_INDEX; after a flap the RoCE v2 IPv4 GID can come back at another index
    (NVIDIA/nccl#2157), and the file written before it points at the wrong entry."""
    before = {}
    for name, host_id in (("server1", 1), ("server2", 2)):
        disc, facts = _pair(name, host_id)
        facts.packages["libnccl2"] = "2.18.3-1+cuda12.2"
        before[name] = (disc, facts)
    written = conf_of(cluster(**before))
    assert settings(written)["NCCL_IB_GID_INDEX"] == "3"
    disc, facts = before["server1"]
    facts.conf = written
    for state in facts.rdma:
        state.roce_v2_ipv4_gids = [5]  # the flap: the old slots are still held, the address came back higher

    items = {c.id: c for c in STEP.checks(cluster(**before), "server1")}

    assert items["conf"].status == "fail"
    assert items["conf"].evidence.startswith("NCCL_IB_GID_INDEX=3, but the RoCE v2 IPv4 GID of mlx5_0:1")
    assert items["conf"].evidence.endswith("is now at index 5")
    assert "restart the NCCL jobs" in (items["conf"].fix or "")
