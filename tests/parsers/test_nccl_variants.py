"""Specifications of the NCCL log variants current hosts print: timestamp prefixes (NCCL >= 2.26), failed RDMA
completions (``NET/IB : Got completion from peer ... status=N``) and fatal init errors (duplicate GPU, result codes).

Sources: NCCL env.rst "NCCL_DEBUG_TIMESTAMP_FORMAT" (default ``[%F %T] ``, since 2.26) and
"NCCL_DEBUG_TIMESTAMP_LEVELS" (default WARN only); NCCL src/debug.cc ncclDebugLogV (timestamp, then
``host:pid:tid ``, then ``[dev] file:line [(func)] NCCL WARN``); NCCL src/transport/net_ib (the three wordings of the
completion WARN); NCCL src/init.cc ncclGetErrorString; rdma-core verbs.h ``enum ibv_wc_status``.
"""

from __future__ import annotations

from tests.fixture_files import real_output
from wizard.parsers.nccl import log_host, nccl_failures, parse_nccl_debug

STATUS12 = real_output("nccl_debug", "nccl-issue1814-ibplugin-status12-retry-exc-8.txt")
IPV6_GIDS = real_output("nccl_debug", "nccl-issue1405-status12-ipv6-gids-9.txt")
DUPLICATE = real_output("nccl_debug", "accelerate-issue2246-duplicate-gpu-10.txt")
STAMPED = real_output("nccl_debug", "nccl-issue1647-nccl2.26-timestamped-socket-11.txt")
TORCH = real_output("nccl_errors", "megatron-issue661-invalid-usage-duplicate-gpu-1.txt")
ROCE = real_output("nccl_debug", "nccl-tests-issue185-dgxh100-roce-1.txt")


def stamp(text: str, when: str = "[2025-01-21 10:03:17] ", only: str = "") -> str:
    """Prefix every log line (or only those containing ``only``) as NCCL >= 2.26 does with its default format."""
    return "\n".join(when + line if line.strip() and only in line else line for line in text.splitlines())


def test_nccl_2_26_timestamped_info_lines_read_like_plain_ones() -> None:
    log = parse_nccl_debug(STAMPED)
    assert log.timestamped and log.hosts == ["nickelpie-job-0"]
    assert log.version == "2.26.2" and log.cuda_version == "12.8"
    assert log.network == "Socket" and log.transport == "Socket"
    assert log.oob_interfaces == ["eth0:192.168.33.51"] and log.socket_interfaces == ["eth0:192.168.33.51"]


def test_default_timestamp_on_warn_lines_keeps_the_warn_as_an_error() -> None:
    plain = parse_nccl_debug(DUPLICATE)
    stamped = parse_nccl_debug(stamp(DUPLICATE, only="NCCL WARN"))
    assert stamped.errors == plain.errors and stamped.fatal == plain.fatal and stamped.timestamped
    assert stamped.errors[0] == "Duplicate GPU detected : rank 6 and rank 4 both on CUDA device 31000"


def test_every_timestamp_format_nccl_allows_reads_like_the_plain_log() -> None:
    plain = parse_nccl_debug(ROCE).model_dump(exclude={"timestamped"})
    for when in ("[2025-01-21 10:03:17.123456] ", "2025-01-21 10:03:17 ", "0121 10:03:17.758169 ", "[1,0]<stdout>:"):
        assert parse_nccl_debug(stamp(ROCE, when)).model_dump(exclude={"timestamped"}) == plain, when


def test_warn_with_function_name_of_newer_nccl_is_read() -> None:
    line = "[2025-06-02 08:00:01] gpu-a:11:12 [3] transport/net_ib/p2p.cc:1702 (ncclIbTest) NCCL WARN x failed"
    assert parse_nccl_debug(line).errors == ["x failed"] and log_host(line) == "gpu-a"


def test_log_host_reads_the_host_behind_any_prefix_and_nothing_from_other_lines() -> None:
    assert log_host("[2025-03-18 21:25:51] nickelpie-job-0:1:1 [0] NCCL INFO cudaDriverVersion 12080") == (
        "nickelpie-job-0"
    )
    assert log_host("(train_rft pid=26) 2024-05-11 14:10:52.224 n176-080:26:22 [0] NCCL INFO x") == "n176-080"
    assert log_host("[0] node0:13571:13571 [0] NCCL INFO Bootstrap : Using enp10s0:10.10.7.107<0>") == "node0"
    assert log_host("NCCL version 2.26.2+cuda12.8") is None
    assert log_host("#  Rank  0 Group  0 Pid  41000 on    server1 device  0 [0000:17:00] NVIDIA L40S") is None


def test_status_12_completion_is_read_into_peer_status_and_gids() -> None:
    log = parse_nccl_debug(STATUS12)
    first, second = log.completion_errors
    assert (first.peer, first.peer_port, first.status, first.status_name) == (
        "172.36.143.59",
        44206,
        12,
        "IBV_WC_RETRY_EXC_ERR",
    )
    assert (first.opcode, first.length, first.vendor_err, first.request) == (129, 65536, 129, "Recv")
    assert (first.local_gid, first.remote_gid, first.host) == (
        "::ffff:29.87.88.182",
        "::ffff:29.87.4.221",
        "hostname-test",
    )
    assert (second.status, second.status_name, second.vendor_err) == (5, "IBV_WC_WR_FLUSH_ERR", 249)
    assert [f.result for f in log.fatal] == ["ncclRemoteError"]


def test_remote_gids_glued_to_an_ipv6_gid_are_split() -> None:
    errors = parse_nccl_debug(IPV6_GIDS).completion_errors
    assert [(e.status, e.opcode, e.local_gid, e.remote_gid) for e in errors] == [
        (12, 0, "fd00:1148:9000:5000:4:200:3:ff22", "fd00:1148:9000:5000:4:200:3:ff1f"),
        (12, 32616, "fd00:1148:9000:5000:4:200:3:ff21", "fd00:1148:9000:5000:4:200:3:ff20"),
    ]


def test_older_and_newest_completion_wordings_are_read() -> None:
    old = (
        "n1:1:2 [0] NCCL WARN NET/IB : Got completion from peer 10.0.0.2<5> with error 12, opcode 0, len 0, "
        "vendor err 129"
    )
    new = (
        "[2026-01-02 03:04:05] n1:1:2 [0] transport/net_ib/p2p.cc:88 (ncclIbCompletionEventProcess) NCCL WARN "
        "NET/IB: Got completion from peer 10.0.0.2<5> with status=IBV_WC_RETRY_EXC_ERR(12) opcode=IBV_WC_SEND(0) "
        "vendor_err=129  localGid ::ffff:192.168.11.1 remoteGids::ffff:192.168.11.2 hca mlx5_0"
    )
    (a,) = parse_nccl_debug(old).completion_errors
    (b,) = parse_nccl_debug(new).completion_errors
    assert (a.status, a.status_name, a.vendor_err, a.peer) == (12, "IBV_WC_RETRY_EXC_ERR", 129, "10.0.0.2")
    assert (b.status, b.opcode, b.vendor_err, b.hca, b.remote_gid) == (12, 0, 129, "mlx5_0", "::ffff:192.168.11.2")


def test_duplicate_gpu_is_a_fatal_init_error_with_ranks_and_device() -> None:
    log = parse_nccl_debug(DUPLICATE)
    duplicates = [f for f in log.fatal if f.kind == "duplicate_gpu"]
    assert [(f.ranks, f.device) for f in duplicates] == [
        ([6, 4], "31000"),
        ([7, 5], "4b000"),
        ([5, 7], "4b000"),
        ([4, 6], "31000"),
    ]
    assert {f.result for f in log.fatal} == {"ncclInvalidUsage"}


def test_torch_error_without_any_nccl_log_line_names_the_result_and_the_duplicate_gpu() -> None:
    failures = nccl_failures(TORCH)
    kinds = [(f.kind, f.result) for f in failures.fatal]
    assert ("result", "ncclInvalidUsage") in kinds and ("duplicate_gpu", "ncclInvalidUsage") in kinds
    assert next(f for f in failures.fatal if f.kind == "duplicate_gpu").ranks == [7, 0]


def test_result_codes_are_named_from_their_text_in_test_and_torch_failures() -> None:
    text = (
        "server2: Test NCCL failure common.cu:1279 'unhandled system error (run with NCCL_DEBUG=INFO for details) / '\n"
        "ncclSystemError: System call (e.g. socket, malloc) or external library call failed or device error.\n"
        "torch.distributed.DistBackendError: NCCL error in: x.cpp:1, remote process exited or there was a network error"
    )
    assert [f.result for f in nccl_failures(text).fatal] == ["ncclSystemError", "ncclRemoteError"]
