"""Stage nccl, verdict side: the NCCL log proves NET/IB with every HCA and GPUDirect RDMA, or names the cause."""

from __future__ import annotations

import py_compile
from pathlib import Path
from typing import Any

from steps.nccl.launch import run_cluster_test
from steps.nccl.run import (
    lines_by_host,
    mpirun_argv,
    parse_smoke_result,
    smoke_script,
    summarize_log,
    summarize_perf,
    torchrun_argv,
)
from steps.nccl.stage import Nccl
from steps.nccl.verdict import Expect, run_checks
from tests.fixture_files import real_output
from tests.steps.facts_builder import answers
from tests.steps.test_nccl import _pair, cluster, configured
from wizard.engine.step import CheckItem
from wizard.executors.base import CommandResult

HCAS = ["mlx5_0:1", "mlx5_1:1", "mlx5_2:1", "mlx5_3:1"]
ROCE_LOG = real_output("nccl_debug", "nccl-tests-issue185-dgxh100-roce-1.txt")
SOCKET_LOG = real_output("nccl_debug", "nccl-issue226-aws-socket-noib-6.txt")
TWO_NODE_PERF = real_output("nccl_all_reduce_perf", "spcx-rtx6000d-2node-16rank-4.txt")


def nccl_log(
    host: str, *, gdr: bool = True, net: str = "IB", devices: tuple[str, ...] = tuple(h[:-2] for h in HCAS)
) -> str:
    """NCCL_DEBUG=INFO lines in the formats of NCCL's source (init.cc, topo.cc, net.cc)."""
    p = f"{host}:4242:4300 [0]"
    using = " ".join(f"[{i}]{d}:1/RoCE" for i, d in enumerate(devices))
    lines = [
        "NCCL version 2.21.5+cuda12.4",
        f"{p} NCCL INFO NCCL_IB_HCA set to ={','.join(d + ':1' for d in devices)}",
        f"{p} NCCL INFO NET/IB : Using {using} [RO]; OOB eno1:10.0.0.11<0>",
        f"{p} NCCL INFO Using network {net}",
    ]
    lines += [
        f"{p} NCCL INFO NET/IB : GPU Direct RDMA {'Enabled' if gdr else 'Disabled'} for HCA {i} '{d}'"
        for i, d in enumerate(devices)
    ]
    suffix = "/GDRDMA" if gdr and net == "IB" else ""
    lines += [
        f"{p} NCCL INFO Channel 0{i}/0 : 0[0] -> 8[0] [send] via NET/{net}/{i}{suffix}" for i in range(len(devices))
    ]
    return "\n".join(lines) + "\n"


def verdict(log: str, expected: list[str] | None = None, **run: Any) -> dict[str, CheckItem]:
    disc, _ = _pair("server1", 1)
    facts = {"launcher": "mpirun", "log": summarize_log(log.splitlines()), **run}
    items = run_checks("server1", facts, Expect(hcas=expected or HCAS, modules=disc.modules))
    return {item.id: item for item in items}


# --- transport ------------------------------------------------------------------------------------------------


def test_real_roce_log_shows_net_ib_with_both_hcas() -> None:
    checks = verdict(ROCE_LOG, ["mlx5_10:1", "mlx5_11:1"])
    assert checks["transport"].status == "pass" and checks["hcas"].status == "pass"


def test_real_roce_log_missing_an_expected_hca_fails_naming_it() -> None:
    checks = verdict(ROCE_LOG, ["mlx5_10:1", "mlx5_11:1", "mlx5_12:1"])
    assert checks["hcas"].status == "fail" and "mlx5_12:1" in checks["hcas"].evidence


def test_real_socket_fallback_log_fails_naming_host_and_cause() -> None:
    item = verdict(SOCKET_LOG)["transport"]
    assert item.status == "fail"
    assert "server1" in item.evidence and "NET/IB found no device" in item.evidence and item.fix


def test_socket_channels_after_ib_init_are_a_fallback() -> None:
    item = verdict(nccl_log("server2", net="Socket"))["transport"]
    assert item.status == "fail" and "NET/Socket" in item.evidence and "mlx5_0" in item.evidence


# --- GPUDirect RDMA --------------------------------------------------------------------------------------------


def test_gdr_enabled_on_every_hca_with_gdrdma_channels_passes() -> None:
    item = verdict(nccl_log("server1"))["gdr"]
    assert item.status == "pass" and "4 channel(s) via GDRDMA" in item.evidence


def test_gdr_disabled_fails_naming_hcas_and_the_missing_peermem() -> None:
    item = verdict(nccl_log("server2", gdr=False))["gdr"]
    assert item.status == "fail"
    assert "mlx5_0, mlx5_1" in item.evidence and "nvidia_peermem is not loaded" in item.evidence
    assert item.fix and "gpudirect" in item.fix


def test_real_log_without_any_gdr_evidence_is_not_taken_as_gdr() -> None:
    assert verdict(ROCE_LOG, ["mlx5_10:1", "mlx5_11:1"])["gdr"].status == "fail"


def test_nccl_older_than_2_21_without_gid_index_fails() -> None:
    log = nccl_log("server1").replace("2.21.5", "2.18.3")
    assert verdict(log)["version"].status == "fail"
    assert verdict(nccl_log("server1"))["version"].status == "pass"


# --- bandwidth and results --------------------------------------------------------------------------------------


def test_real_two_node_result_is_read_at_one_gib_and_above() -> None:
    perf = summarize_perf(TWO_NODE_PERF)
    assert perf["busbw_1g"] == 35.29 and perf["nranks"] == 16 and perf["correct"]


def _checks_with_run(run: dict[str, Any], yaml: str = "") -> dict[str, CheckItem]:
    v = configured(cluster(yaml))
    for host in v.facts:
        v.facts[host]["nccl"]["cluster"] = run
    return {item.id: item for item in Nccl().checks(v, "server1")}


def test_low_busbw_fails_and_names_the_port_that_is_down() -> None:
    v = configured(cluster("nccl:\n  min_busbw_gbytes: 40\n"))
    v.facts["server2"]["nccl"]["rdma"][3]["state"] = "DOWN"
    run = {"launcher": "mpirun", "log": summarize_log(nccl_log("server1").splitlines()),
           "perf": summarize_perf(TWO_NODE_PERF)}  # fmt: skip
    for host in v.facts:
        v.facts[host]["nccl"]["cluster"] = run
    item = {i.id: i for i in Nccl().checks(v, "server1")}["busbw"]
    assert item.status == "fail" and "35.29" in item.evidence and "server2 ens2f1np1: link DOWN" in (item.fix or "")


def test_low_busbw_names_a_rail_port_whose_mtu_is_below_the_answer() -> None:
    v = configured(cluster("nccl:\n  min_busbw_gbytes: 40\n"))
    v.facts["server1"]["nccl"]["mtus"]["ens1f1np1"] = 1500
    run = {"launcher": "mpirun", "log": summarize_log(nccl_log("server1").splitlines()),
           "perf": summarize_perf(TWO_NODE_PERF)}  # fmt: skip
    for host in v.facts:
        v.facts[host]["nccl"]["cluster"] = run
    checks = {i.id: i for i in Nccl().checks(v, "server2")}
    assert checks["busbw"].status == "fail" and "server1 ens1f1np1: MTU 1500 < network.mtu 9000" in (
        checks["busbw"].fix or ""
    )
    server1 = {i.id: i for i in Nccl().checks(v, "server1")}["rails"]
    assert server1.status == "warn" and "ens1f1np1: MTU 1500" in server1.evidence


def test_full_run_on_configured_hosts_passes_every_check() -> None:
    run = {"launcher": "mpirun", "log": summarize_log(nccl_log("server1").splitlines()),
           "perf": summarize_perf(TWO_NODE_PERF)}  # fmt: skip
    checks = _checks_with_run(run)
    assert {i: c.status for i, c in checks.items()} == {
        "conf": "pass", "user_conf": "pass", "bashrc": "pass", "tests": "pass", "transport": "pass",
        "hcas": "pass", "gdr": "pass", "version": "pass", "busbw": "pass", "rails": "pass", "memlock": "pass",
    }  # fmt: skip


def test_non_mpi_build_under_mpirun_is_reported() -> None:
    perf = summarize_perf(real_output("nccl_all_reduce_perf", "nccl-tests-issue107-nonmpi-dup-header-5-partial.txt"))
    checks = _checks_with_run({"launcher": "mpirun", "log": summarize_log(nccl_log("server1").splitlines()),
                               "perf": perf})  # fmt: skip
    assert checks["mpi"].status == "fail" and checks["busbw"].status == "fail"


def test_a_users_nccl_conf_that_overrides_the_hca_list_is_named_as_the_cause() -> None:
    v = configured(cluster())
    v.facts["server1"]["nccl"] |= {"user_conf_path": "/home/ubuntu/.nccl.conf", "user_conf": "NCCL_IB_HCA=mlx4\n"}
    overridden = "ip-172-31-12-21:45361:45361 [0] NCCL INFO NCCL_IB_HCA set to mlx4\n" + SOCKET_LOG
    log = summarize_log(overridden.splitlines())
    for host in v.facts:
        v.facts[host]["nccl"]["cluster"] = {"launcher": "mpirun", "log": log}
    checks = {item.id: item for item in Nccl().checks(v, "server1")}
    assert checks["user_conf"].status == "fail" and "NCCL_IB_HCA=mlx4" in checks["user_conf"].evidence
    transport = checks["transport"]
    assert transport.status == "fail" and "NCCL saw NCCL_IB_HCA=mlx4" in transport.evidence
    assert "/home/ubuntu/.nccl.conf sets NCCL_IB_HCA=mlx4" in (transport.fix or "")


def test_a_job_killed_by_an_unreachable_rail_points_at_the_cabling() -> None:
    warn = "misc/ibvwrap.cc:187 NCCL WARN Call to ibv_modify_qp failed with error Network is unreachable"
    run = {
        "launcher": "mpirun",
        "log": summarize_log((nccl_log("server2") + "server2:41097:41168 [0] " + warn).splitlines()),
        "exit_status": 1,
        "error": "mpirun exited 1: " + warn,
        "perf": summarize_perf("# nThread 1 nGpus 1 minBytes 8 maxBytes 8589934592\n"),
    }
    checks = _checks_with_run(run)
    assert checks["run"].status == "fail" and "Network is unreachable" in checks["run"].evidence
    assert "cabling" in (checks["run"].fix or "") and checks["busbw"].status == "skip"  # the run item says why


def test_ssh_between_hosts_refused_fails_with_what_the_operator_must_provide() -> None:
    run = {"error": "server1 cannot ssh to server2 (10.0.0.12) without a password", "ssh": True, "ran_from": "server1"}
    item = _checks_with_run(run)["run"]
    assert item.status == "fail" and "ssh-copy-id" in (item.fix or "") and "nccl.test: torch" in (item.fix or "")


# --- launch lines and the torch script ---------------------------------------------------------------------------


def test_log_lines_are_grouped_by_the_host_nccl_printed() -> None:
    groups = lines_by_host(ROCE_LOG)
    assert set(groups) == {"dgxh100-4", "dgxh100-3"}
    assert summarize_log(groups["dgxh100-3"])["ib_devices"] == ["mlx5_10", "mlx5_11"]


def test_mpirun_runs_one_process_per_gpu_bound_to_numa_over_the_management_network() -> None:
    argv = mpirun_argv(answers().nccl, [("10.0.0.11", 8), ("10.0.0.12", 8)], "eno1", "ubuntu", "/etc/nccl.conf")
    line = " ".join(argv)
    assert argv[:5] == ["mpirun", "-np", "16", "-N", "8"] and "-H 10.0.0.11:8,10.0.0.12:8" in line
    assert "--bind-to numa" in line and "btl_tcp_if_include eno1" in line and "oob_tcp_if_include eno1" in line
    assert "-x NCCL_DEBUG=INFO -x NCCL_DEBUG_SUBSYS=INIT,NET,GRAPH,ENV" in line and "-x LD_LIBRARY_PATH" in line
    assert argv[-9:] == ["/opt/nccl-tests/build/all_reduce_perf", "-b", "8", "-e", "8G", "-f", "2", "-g", "1"]
    assert "--allow-run-as-root" not in argv


def test_torchrun_line_names_nodes_rank_gpus_and_the_first_hosts_management_address() -> None:
    argv = torchrun_argv(answers().nccl, 2, 1, 8, "10.0.0.11", "/opt/s.py", "/etc/nccl.conf")
    assert argv[:3] == ["env", "NCCL_DEBUG=INFO", "NCCL_DEBUG_SUBSYS=INIT,NET,GRAPH,ENV"]
    assert argv[3:] == ["torchrun", "--nnodes", "2", "--node-rank", "1", "--nproc-per-node", "8",
                        "--master-addr", "10.0.0.11", "--master-port", "29500", "/opt/s.py"]  # fmt: skip


def test_smoke_script_is_valid_python(tmp_path: Path) -> None:
    path = tmp_path / "smoke.py"
    path.write_text(smoke_script(), encoding="utf-8")
    py_compile.compile(str(path), doraise=True)
    assert "dist.all_reduce" in smoke_script() and 'init_process_group("nccl")' in smoke_script()


def test_smoke_result_line_is_read() -> None:
    text = "noise\nroce-wizard-allreduce: world=16 bytes=1073741824 time_us=201234.0 algbw_gbytes=5.34 " \
           "busbw_gbytes=10.01 correct=True\n"  # fmt: skip
    assert parse_smoke_result(text) == {"world": 16, "bytes": 1073741824, "busbw_gbytes": 10.01, "correct": True}
    assert parse_smoke_result("Traceback (most recent call last):") is None


class FakeFirstHost:
    """The first host's executor: answers the ssh check and mpirun with canned output, records commands."""

    def __init__(self, ssh_status: int, output: str) -> None:
        self.ssh_status, self.output, self.commands = ssh_status, output, []

    async def run(self, argv: list[str], **_: Any) -> CommandResult:
        self.commands.append(argv)
        if argv[0] == "ssh":
            err = "" if self.ssh_status == 0 else "Host key verification failed."
            return CommandResult(" ".join(argv), self.ssh_status, "", err, 0.1)
        return CommandResult(" ".join(argv), 0, self.output, "", 1.0)


async def test_cluster_run_stops_before_mpirun_when_ssh_between_hosts_fails() -> None:
    first = FakeFirstHost(255, "")
    result = await run_cluster_test(configured(cluster()), {"server1": first, "server2": FakeFirstHost(0, "")})
    assert [c[0] for c in first.commands] == ["ssh"]
    assert result["server2"]["ssh"] and "Host key verification failed." in result["server2"]["error"]


async def test_cluster_run_splits_the_log_per_host_and_shares_the_result() -> None:
    output = TWO_NODE_PERF + nccl_log("server1") + nccl_log("server2", gdr=False)
    first = FakeFirstHost(0, output)
    result = await run_cluster_test(configured(cluster()), {"server1": first, "server2": FakeFirstHost(0, "")})
    assert first.commands[-1][0] == "mpirun" and first.commands[-1][2] == "16"
    assert result["server1"]["log"]["gdr_enabled"] and result["server2"]["log"]["gdr_disabled_hcas"]
    assert result["server1"]["perf"]["busbw_1g"] == result["server2"]["perf"]["busbw_1g"] == 35.29


async def test_torch_test_starts_torchrun_on_every_host_with_its_rank_and_reads_rank_zero() -> None:
    result_line = "roce-wizard-allreduce: world=16 bytes=1073741824 time_us=1.0 algbw_gbytes=5.5 busbw_gbytes=10.3 "
    hosts = {
        "server1": FakeFirstHost(0, result_line + "correct=True\n" + nccl_log("server1")),
        "server2": FakeFirstHost(0, nccl_log("server2")),
    }
    v = configured(cluster("nccl:\n  test: torch\n"))
    result = await run_cluster_test(v, hosts)  # type: ignore[arg-type]
    for rank, (name, fake) in enumerate(hosts.items()):
        argv = fake.commands[-1]
        assert argv[argv.index("--node-rank") + 1] == str(rank) and argv[argv.index("--master-addr") + 1] == "10.0.0.11"
        assert result[name]["log"]["transport"] == "IB" and result[name]["perf"]["busbw_1g"] == 10.3


async def test_a_host_left_alone_by_its_peers_gets_a_warning_not_a_pass() -> None:
    result = await run_cluster_test(configured(cluster()), {"server1": FakeFirstHost(0, "")})
    item = {i.id: i for i in run_checks("server1", result["server1"], Expect(hcas=HCAS))}["run"]
    assert item.status == "warn" and "server2 stopped at an earlier stage" in item.evidence


# --- named causes of a failed run (issue 13 item 5) -------------------------------------------------------------
# Real lines: NVIDIA/nccl#1814 (status=12 then status=5), NVIDIA/nccl#1405 (IPv6 GIDs), huggingface/accelerate#2246
# (Duplicate GPU detected), NVIDIA/Megatron-LM#661 (PyTorch's ncclInvalidUsage block). NCCL >= 2.26 puts "[%F %T] "
# before WARN lines by default (NCCL env.rst NCCL_DEBUG_TIMESTAMP_FORMAT / _LEVELS).

STATUS12 = real_output("nccl_debug", "nccl-issue1814-ibplugin-status12-retry-exc-8.txt")
IPV6_GIDS = real_output("nccl_debug", "nccl-issue1405-status12-ipv6-gids-9.txt")
DUPLICATE = real_output("nccl_debug", "accelerate-issue2246-duplicate-gpu-10.txt")
TORCH_FATAL = real_output("nccl_errors", "megatron-issue661-invalid-usage-duplicate-gpu-1.txt")
DIED = "mpirun exited 1: Test NCCL failure common.cu:1279 'remote process exited or there was a network error'"


def _stamped(text: str) -> str:
    return "\n".join("[2025-01-21 10:03:17] " + ln if "NCCL WARN" in ln else ln for ln in text.splitlines())


def test_status_12_completion_is_named_as_exhausted_rdma_retries_with_the_fabric_fix() -> None:
    items = verdict(nccl_log("server1") + STATUS12, error=DIED)
    cause = items["cause"]
    assert cause.status == "fail" and items["transport"].status == "pass"
    assert "RDMA transport retries exhausted (status=12, IBV_WC_RETRY_EXC_ERR)" in cause.evidence
    assert "172.36.143.59" in cause.evidence and "vendor err 129" in cause.evidence
    assert all(word in (cause.fix or "") for word in ("PFC", "show_gids", "ethtool -S", "--only roce"))
    assert "RDMA transport retries exhausted" in (items["run"].fix or "")


def test_status_12_behind_the_nccl_2_26_timestamp_is_named_the_same() -> None:
    plain = verdict(nccl_log("server1") + STATUS12, error=DIED)["cause"]
    groups = lines_by_host(_stamped(nccl_log("server1") + STATUS12))
    stamped = verdict("\n".join(groups["server1"] + groups["hostname-test"]), error=DIED)["cause"]
    assert (stamped.status, stamped.evidence, stamped.fix) == (plain.status, plain.evidence, plain.fix)


def test_ipv6_gids_on_a_retry_failure_point_at_the_gid_index() -> None:
    cause = verdict(nccl_log("server1") + IPV6_GIDS, error=DIED)["cause"]
    assert "IBV_WC_RETRY_EXC_ERR" in cause.evidence and "fd00:1148:9000:5000:4:200:3:ff22" in cause.evidence
    assert "not a RoCE v2 IPv4 GID" in (cause.fix or "") and "NCCL_IB_GID_INDEX" in (cause.fix or "")


def test_duplicate_gpu_is_named_with_ranks_device_and_the_one_rank_per_gpu_fix() -> None:
    cause = verdict(DUPLICATE, error="mpirun exited 1: invalid usage")["cause"]
    assert cause.status == "fail" and "two ranks on one GPU" in cause.evidence
    assert "ranks 6 and 4 both on CUDA device 31000" in cause.evidence and "ncclInvalidUsage" in cause.evidence
    assert "-N" in (cause.fix or "") and "--nproc-per-node" in (cause.fix or "")


def test_pytorch_fatal_error_without_nccl_log_lines_is_named_from_the_run_output() -> None:
    items = verdict("", error="torchrun exited 1: " + TORCH_FATAL.splitlines()[0], tail=TORCH_FATAL.splitlines())
    evidence = items["cause"].evidence
    assert "two ranks on one GPU" in evidence and "ranks 7 and 0 both on CUDA device f000" in evidence


def test_a_result_code_alone_is_named_and_explained() -> None:
    tail = ["ncclSystemError: System call (e.g. socket, malloc) or external library call failed or device error."]
    cause = verdict(nccl_log("server1"), error="torchrun exited 1", tail=tail)["cause"]
    assert "ncclSystemError" in cause.evidence and "NCCL_SOCKET_IFNAME" in (cause.fix or "")


def test_a_passing_run_has_no_cause_item() -> None:
    assert "cause" not in verdict(nccl_log("server1"))


def test_an_unreachable_rail_keeps_its_cabling_fix_over_the_generic_result_code() -> None:
    warn = "misc/ibvwrap.cc:187 NCCL WARN Call to ibv_modify_qp failed with error Network is unreachable"
    tail = ["server2: Test NCCL failure common.cu:1279 'unhandled system error (run with NCCL_DEBUG=INFO for details)'"]
    items = verdict(nccl_log("server1") + "server1:1:2 [0] " + warn, error="mpirun exited 1: " + warn, tail=tail)
    assert "cause" not in items and "cabling" in (items["run"].fix or "")
