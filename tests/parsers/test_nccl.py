"""Specifications of the nccl-tests result and NCCL_DEBUG log parsers, checked against real captured outputs."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.fixture_files import real_output, real_outputs
from wizard.parsers.common import ParseError
from wizard.parsers.nccl import parse_nccl_all_reduce_perf, parse_nccl_debug


@pytest.mark.parametrize("path", real_outputs("nccl_all_reduce_perf"), ids=lambda p: p.name)
def test_every_all_reduce_perf_sample_parses_into_rows_or_errors(path: Path) -> None:
    result = parse_nccl_all_reduce_perf(path.read_text(encoding="utf-8"))
    assert result.rows or result.errors


@pytest.mark.parametrize("path", real_outputs("nccl_debug"), ids=lambda p: p.name)
def test_every_nccl_debug_sample_parses_and_names_its_hosts(path: Path) -> None:
    result = parse_nccl_debug(path.read_text(encoding="utf-8"))
    assert result.hosts


# --- all_reduce_perf -----------------------------------------------------------------------------------------


def test_single_node_mpirun_with_openmpi_help_lines_between_rows() -> None:
    r = parse_nccl_all_reduce_perf(real_output("nccl_all_reduce_perf", "a100-8gpu-mpirun-np8-2.txt"))
    assert (r.n_threads, r.n_gpus, r.min_bytes, r.max_bytes, r.warmup_iters, r.iters) == (1, 1, 8, 4294967296, 5, 20)
    assert r.nranks == 8 and not r.duplicated_header
    first, last = r.devices[0], r.devices[-1]
    assert (first.rank, first.pid, first.host, first.device, first.bus_id) == (0, 56543, "thanos", 0, "0x07")
    assert (last.rank, last.device, last.bus_id, last.name) == (7, 7, "0xc3", "NVIDIA A100-SXM4-80GB")
    assert len(r.rows) == 30 and [row.size_bytes for row in r.rows[:3]] == [8, 16, 32]
    row = r.rows[0]
    assert (row.count, row.dtype, row.redop, row.root) == (2, "float", "sum", -1)
    assert (row.out_of_place.time_us, row.in_place.time_us, row.out_of_place.wrong) == (20.26, 17.74, 0)
    big = r.last()
    assert (big.size_bytes, big.out_of_place.time_us, big.out_of_place.algbw_gbytes) == (4294967296, 32285.0, 133.03)
    assert (big.out_of_place.busbw_gbytes, big.in_place.busbw_gbytes) == (232.81, 232.93)
    assert big.out_of_place.busbw.gbps == pytest.approx(232.81 * 8)
    assert r.peak_busbw_gbytes() == 232.81
    assert (r.out_of_bounds, r.out_of_bounds_ok, r.avg_bus_bandwidth_gbytes) == (0, True, 72.7724)
    assert r.avg_bus_bandwidth.gbps == pytest.approx(582.1792)
    assert r.errors == [] and r.nccl_version is None


def test_single_size_run_with_nccl_version_line_inside_the_header() -> None:
    r = parse_nccl_all_reduce_perf(real_output("nccl_all_reduce_perf", "azure-ndh200-8g-single-size-9.txt"))
    assert (r.nccl_version, r.nranks, r.devices[3].host, r.devices[3].bus_id) == ("2.19.3", 8, "test-h200-deb", "0x00")
    (row,) = r.rows
    assert (row.size_bytes, row.count, row.out_of_place.busbw_gbytes, row.in_place.busbw_gbytes) == (
        8589934592,
        2147483648,
        476.96,
        476.98,
    )
    assert r.avg_bus_bandwidth_gbytes == 476.967


def test_newest_header_generation_cut_off_after_four_rows() -> None:
    r = parse_nccl_all_reduce_perf(real_output("nccl_all_reduce_perf", "dgx-spark-pr103-nccltests-2.20-8-partial.txt"))
    assert (r.tests_version, r.collective, r.nccl_version) == ("2.20.0", "all_reduce_perf", "2.31.2")
    assert [(d.rank, d.host, d.bus_id, d.name) for d in r.devices] == [
        (0, "spark-d708", "000f:01:00", "NVIDIA GB10"),
        (1, "spark-dbf4", "000f:01:00", "NVIDIA GB10"),
    ]
    assert [row.size_bytes for row in r.rows] == [8192, 16384, 32768, 65536]
    assert (r.last().out_of_place.busbw_gbytes, r.last().in_place.busbw_gbytes) == (0.96, 1.01)
    assert r.avg_bus_bandwidth_gbytes is None and r.out_of_bounds is None and r.errors == []


def test_invalid_device_ordinal_failure_is_an_error_not_an_exception() -> None:
    r = parse_nccl_all_reduce_perf(
        real_output("nccl_all_reduce_perf", "nccl-tests-issue1-invalid-device-ordinal-6.txt")
    )
    assert (r.n_gpus, r.min_bytes, r.rows, r.devices, r.nranks) == (2, 33554432, [], [], None)
    assert r.errors[0] == "Cuda failure common.cu:891 'invalid device ordinal'"
    assert any(e.startswith("mpirun detected that one or more processes exited") for e in r.errors)


def test_non_mpi_build_under_mpirun_prints_duplicated_headers_with_every_rank_zero() -> None:
    r = parse_nccl_all_reduce_perf(
        real_output("nccl_all_reduce_perf", "nccl-tests-issue107-nonmpi-dup-header-5-partial.txt")
    )
    assert r.duplicated_header and r.nranks == 1
    assert [(d.rank, d.pid, d.host) for d in r.devices] == [
        (0, 1320, "ip-172-31-20-228"),
        (0, 2066, "ip-172-31-22-230"),
    ]
    assert any("without MPI=1" in w for w in r.warnings)
    assert r.rows == [] and "no result rows" in r.errors[0]


def test_two_node_sixteen_ranks_with_mca_banner_and_help_lines_before_rows() -> None:
    r = parse_nccl_all_reduce_perf(real_output("nccl_all_reduce_perf", "spcx-rtx6000d-2node-16rank-4.txt"))
    assert (r.tests_version, r.nccl_version, r.nranks) == ("2.18.3", "2.30.3", 16)
    assert {d.host for d in r.devices} == {"R6KD-CX8aaS-GPU-11", "R6KD-CX8aaS-GPU-12"}
    assert (r.devices[8].host, r.devices[8].device, r.devices[8].bus_id) == ("R6KD-CX8aaS-GPU-12", 0, "0000:06:00")
    assert len(r.rows) == 24 and r.rows[0].size_bytes == 1024 and r.last().size_bytes == 8589934592
    assert (r.last().out_of_place.time_us, r.last().out_of_place.busbw_gbytes) == (456414.0, 35.29)
    assert r.peak_busbw_gbytes() == 41.43
    assert (r.avg_bus_bandwidth_gbytes, r.out_of_bounds_ok, r.errors) == (18.4247, True, [])


def test_old_error_column_and_unchecked_na_column() -> None:
    # Synthetic rows in the two layouts the real samples only show as headers (old "error", and "-c 0" N/A).
    old = (
        "# nThread 1 nGpus 1 minBytes 1310720000 maxBytes 1310720000 step: 1048576(bytes) warmup iters: 5\n"
        "#       size         count      type   redop     time   algbw   busbw  error     time   algbw   busbw  error\n"
        "  1310720000     327680000     float     sum   1234567    1.06    1.06  0e+00"
        "  1230000    1.07    1.07  0e+00\n"
    )
    row = parse_nccl_all_reduce_perf(old).rows[0]
    assert (row.root, row.out_of_place.time_us, row.out_of_place.error, row.out_of_place.wrong) == (
        None,
        1234567.0,
        0.0,
        None,
    )
    unchecked = (
        "# nThread 1 nGpus 1 minBytes 8 maxBytes 8 step: 2(factor) warmup iters: 5 iters: 20 validation: 0\n"
        "#       size         count      type   redop    root     time   algbw   busbw #wrong"
        "     time   algbw   busbw #wrong\n"
        "           8             2     float     sum      -1    20.26    0.00    0.00    N/A"
        "    17.74    0.00    0.00    N/A\n"
        "# Out of bounds values : 2 FAILED\n"
    )
    r = parse_nccl_all_reduce_perf(unchecked)
    assert r.rows[0].out_of_place.wrong is None and r.rows[0].in_place.time_us == 17.74
    assert (r.out_of_bounds, r.out_of_bounds_ok, r.errors) == (2, False, ["Out of bounds values : 2 FAILED"])


# --- NCCL_DEBUG=INFO logs ------------------------------------------------------------------------------------


def test_h100_infiniband_with_hpcx_sharp_plugin() -> None:
    d = parse_nccl_debug(real_output("nccl_debug", "nccl-issue1357-h100-ib-sharp-5.txt"))
    assert (d.network, d.transport, d.socket_fallback) == ("IBext", "IB", False)
    assert d.ib_devices == ["mlx5_0", "mlx5_1", "mlx5_4", "mlx5_5"]
    assert [(p.index, p.port, p.link_layer, p.tags) for p in d.ib_ports][:1] == [(0, 1, "IB", ["SHARP"])]
    assert d.relaxed_ordering and d.oob_interfaces == ["ibp25s0:10.20.0.119"]
    assert (d.net_plugin, d.collnet_plugin) == ("NCCL RDMA Plugin v6", "SHARP")
    assert d.net_plugin_path == "/opt/hpcx/nccl_rdma_sharp_plugin/lib/libnccl-net.so"
    assert d.hosts == ["qh100-gpu19", "qh100-gpu20"]


def test_hosts_without_rdma_fall_back_to_sockets() -> None:
    d = parse_nccl_debug(real_output("nccl_debug", "nccl-issue226-aws-socket-noib-6.txt"))
    assert (d.ib_no_device, d.transport, d.socket_fallback, d.ib_devices) == (True, "Socket", True, [])
    assert d.socket_interfaces[0] == "ens3:172.31.12.210" and len(d.socket_interfaces) == 7
    assert len(d.hosts) == 17


def test_ibext_disabled_by_environment_leaves_an_error_trace_and_no_transport() -> None:
    d = parse_nccl_debug(real_output("nccl_debug", "nccl-issue676-dgxa100-ibext-disabled-7.txt"))
    assert d.env == {"NCCL_SOCKET_IFNAME": "en", "NCCL_IBEXT_DISABLE": "1"}
    assert d.errors == ["net.cc:55 -> 3"]
    assert (d.transport, d.network, d.net_plugin) == (None, None, None)
    assert d.oob_interfaces == ["enp225s0f1:10.10.10.2"]


def test_dgx_h100_over_roce_with_internal_net_plugin() -> None:
    d = parse_nccl_debug(real_output("nccl_debug", "nccl-tests-issue185-dgxh100-roce-1.txt"))
    assert (d.version, d.cuda_version, d.network, d.transport) == ("2.19.3", "12.3", "IB", "IB")
    assert d.ib_devices == ["mlx5_10", "mlx5_11"] and {p.link_layer for p in d.ib_ports} == {"RoCE"}
    assert d.oob_interfaces == ["enp220s0np0:11.1.128.136", "enp220s0np0:11.1.128.128"]
    assert d.hosts == ["dgxh100-4", "dgxh100-3"] and d.net_plugin is None


def test_old_nccl_uses_ib_without_a_using_network_line_and_without_gdr() -> None:
    d = parse_nccl_debug(real_output("nccl_debug", "nv-peer-memory-issue56-ib-3.txt"))
    assert (d.version, d.cuda_version, d.transport, d.socket_fallback) == ("2.4.7", "10.0", "IB", False)
    assert d.env == {"NCCL_IB_DISABLE": "0"}
    assert d.socket_interfaces == ["ib0:192.168.11.1", "ib0:192.168.11.2"]  # bootstrap, not the data path
    assert (d.gdr_enabled, d.channels) == (False, [])


def test_channels_gdr_dmabuf_merged_nics_and_warnings() -> None:
    # Synthetic log assembled from NCCL's own format strings (net_ib, transport, misc/ibvwrap).
    log = "\n".join(
        f"node1:1234:1300 [0] {line}"
        for line in (
            "NCCL INFO NCCL_IB_HCA set to =mlx5_0:1,mlx5_1:1",
            "NCCL INFO NET/IB : Using [0]mlx5_0:1/RoCE [1]mlx5_1:1/RoCE [RO]; OOB eth0:10.0.0.1<0>",
            "NCCL INFO NET/IB : Made virtual device [2] name=mlx5_0+mlx5_1 speed=200000 ndevs=2",
            "NCCL INFO DMA-BUF is available on GPU device 0",
            "NCCL INFO NET/IB : GPU Direct RDMA (DMABUF) enabled for HCA 0 'mlx5_0",
            "NCCL INFO NET/IB : GPU Direct RDMA Disabled for HCA 1 'mlx5_1' (no module)",
            "NCCL INFO Channel 00/0 : 0[0] -> 8[0] [send] via NET/IB/0/GDRDMA",
            "NCCL INFO Channel 01/0 : 8[0] -> 0[0] [receive] via NET/IB/1",
            "NCCL INFO Channel 00/0 : 0[0] -> 1[1] via P2P/CUMEM",
            "misc/ibvwrap.cc:187 NCCL WARN Call to ibv_modify_qp failed with error Network is unreachable",
            "NCCL WARN NET/IB : ignoring NCCL_IB_GID_INDEX on a RoCE v1 port",
            "NCCL INFO transport/net_ib.cc:1136 -> 2",
        )
    )
    d = parse_nccl_debug(log)
    assert d.env == {"NCCL_IB_HCA": "=mlx5_0:1,mlx5_1:1"} and d.merged_devices == ["mlx5_0+mlx5_1"]
    assert (d.dmabuf, d.gdr_enabled, d.gdr_enabled_hcas, d.gdr_disabled_hcas) == (True, True, ["mlx5_0"], ["mlx5_1"])
    assert [(c.channel, c.src, c.dst, c.direction, c.via) for c in d.channels] == [
        (0, 0, 8, "send", "NET/IB/0/GDRDMA"),
        (1, 8, 0, "receive", "NET/IB/1"),
        (0, 0, 1, None, "P2P/CUMEM"),
    ]
    assert d.transport == "IB" and not d.socket_fallback
    assert d.errors == [
        "Call to ibv_modify_qp failed with error Network is unreachable",
        "transport/net_ib.cc:1136 -> 2",
    ]
    assert d.warnings == ["NET/IB : ignoring NCCL_IB_GID_INDEX on a RoCE v1 port"]
    merged = parse_nccl_debug("h:1:2 [0] NCCL INFO NET/IB : Using [0]mlx5_0+mlx5_1:1/RoCE [RO]; OOB eth0:10.0.0.1<0>")
    assert merged.ib_devices == ["mlx5_0+mlx5_1"]


def test_socket_channels_mean_socket_transport_even_with_ib_initialised() -> None:
    log = (
        "a:1:1 [0] NCCL INFO NET/IB : Using [0]mlx5_0:1/RoCE ; OOB eth0:10.0.0.1<0>\n"
        "a:1:1 [0] NCCL INFO Channel 00/0 : 0[0] -> 1[0] [send] via NET/Socket/0\n"
    )
    d = parse_nccl_debug(log)
    assert (d.transport, d.socket_fallback) == ("Socket", True)


@pytest.mark.parametrize(
    ("parser", "text", "reason"),
    [
        (parse_nccl_all_reduce_perf, "", "empty"),
        (parse_nccl_all_reduce_perf, real_output("nccl_debug", "nccl-issue226-aws-socket-noib-6.txt"), "nccl-tests"),
        (parse_nccl_all_reduce_perf, real_output("ib_write_bw", "perftest-issue273-1.txt"), "nccl-tests"),
        (parse_nccl_debug, "\n\n", "empty"),
        (parse_nccl_debug, real_output("nccl_all_reduce_perf", "azure-ndh200-8g-single-size-9.txt"), "NCCL_DEBUG"),
        (parse_nccl_debug, real_output("nvidia_smi_topo", "rhelai-h100x8-no-nic-7.txt"), "NCCL_DEBUG"),
    ],
)
def test_text_that_is_not_nccl_output_is_refused(parser, text: str, reason: str) -> None:
    with pytest.raises(ParseError, match=reason):
        parser(text)
