"""Specifications of the perftest and ibv_rc_pingpong parsers, checked against real captured outputs."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.fixture_files import real_output, real_outputs
from wizard.parsers.common import ParseError
from wizard.parsers.perftest import (
    parse_ib_read_bw,
    parse_ib_read_lat,
    parse_ib_send_bw,
    parse_ib_send_lat,
    parse_ib_write_bw,
    parse_ib_write_lat,
    parse_ibv_rc_pingpong,
)

PARSERS = {
    "ib_write_bw": parse_ib_write_bw,
    "ib_read_bw": parse_ib_read_bw,
    "ib_send_bw": parse_ib_send_bw,
    "ib_write_lat": parse_ib_write_lat,
    "ib_read_lat": parse_ib_read_lat,
    "ib_send_lat": parse_ib_send_lat,
    "perftest_errors": parse_ib_write_bw,  # failure outputs, all from ib_write_bw (or of unknown test)
}
MB_SEC_TO_GBPS = 8 * 1048576 / 1e9  # perftest's MB/sec is 2^20 bytes per second


def _samples(*tools: str) -> list[tuple[str, Path]]:
    return [(tool, path) for tool in tools for path in real_outputs(tool)]


@pytest.mark.parametrize(("tool", "path"), _samples(*PARSERS), ids=lambda v: getattr(v, "name", v))
def test_every_perftest_sample_parses_into_results_or_errors(tool: str, path: Path) -> None:
    result = PARSERS[tool](path.read_text(encoding="utf-8"))
    assert result.results or result.errors
    if tool == "perftest_errors":
        assert result.results == [] and result.errors


@pytest.mark.parametrize(("tool", "path"), _samples("ibv_rc_pingpong"), ids=lambda v: getattr(v, "name", v))
def test_every_rc_pingpong_sample_has_a_bandwidth_or_errors(tool: str, path: Path) -> None:
    result = parse_ibv_rc_pingpong(path.read_text(encoding="utf-8"))
    assert (result.bandwidth is None) == bool(result.errors)
    assert result.local is not None


# --- ib_write_bw ---------------------------------------------------------------------------------------------


def test_ib_write_bw_hdr_ib_sweep_with_raw_tabs_and_cpu_warning_before_every_row() -> None:
    r = parse_ib_write_bw(real_output("ib_write_bw", "brev-a100-hdr-ib-client-sweep-tabs-12.txt"))
    assert (r.test, r.role, r.device, r.link_type, r.mtu, r.qps) == (
        "RDMA_Write BW Test",
        "client",
        "mlx5_0",
        "IB",
        4096,
        1,
    )
    assert (r.connection_type, r.tx_depth, r.gid_index, r.rdma_cm) == ("RC", 128, None, False)
    assert r.header["rdma_cm QPs"] == "OFF" and r.header["Using SRQ"] == "OFF"
    assert len(r.results) == 23 and r.errors == []
    first = r.results[0]
    assert (first.bytes, first.iterations, first.peak.raw_value, first.peak.raw_unit) == (2, 5000, 4.96, "MB/sec")
    assert first.msg_rate_mpps == 2.588087
    assert r.last().bytes == 8388608 and r.last().average.raw_value == 23317.65
    assert r.best().bytes == 2097152
    assert r.best().average.gbps == pytest.approx(23324.61 * MB_SEC_TO_GBPS)  # ~195.7 Gb/s: HDR 200G
    assert (r.local_addresses[0].lid, r.local_addresses[0].qpn) == (0x40, 0x038D)
    assert (r.remote_addresses[0].lid, r.remote_addresses[0].gid) == (0x6E, None)
    assert len(r.warnings) == 1 and r.warnings[0].startswith("Conflicting CPU frequency values detected")


def test_ib_write_bw_dc_client_gbits_first_row_with_six_decimals() -> None:
    r = parse_ib_write_bw(real_output("ib_write_bw", "dc-transport-note-client-2.txt"))
    assert (r.connection_type, r.link_type, r.gid_index, r.role) == ("DC", "Ethernet", 3, "client")
    assert r.header["Using SRQ"] == "ON"
    assert r.results[0].peak.raw_value == 0.093567 and r.results[0].peak.gbps == 0.093567
    assert r.last().average.raw_unit == "Gb/sec" and r.last().average.gbps == 97.57
    assert r.local_addresses[0].gid == "00:00:00:00:00:00:00:00:00:00:255:255:10:22:116:220"
    assert r.local_addresses[0].gid_ipv4 == "10.22.116.220"
    assert r.remote_addresses[0].gid_ipv4 == "10.22.116.222"
    assert r.remote_addresses[0].srqn == 0x00C07A


def test_ib_write_bw_dc_server_prints_only_the_last_row_and_no_tx_depth() -> None:
    r = parse_ib_write_bw(real_output("ib_write_bw", "dc-transport-note-server-1.txt"))
    assert (r.role, r.tx_depth, r.gid_index) == ("server", None, 5)
    assert [(row.bytes, row.average.gbps) for row in r.results] == [(8388608, 97.57)]
    assert r.local_addresses[0].gid_ipv4 == "10.22.116.222"


def test_ib_write_bw_sweep_aborted_by_completion_error_keeps_rows_and_records_errors() -> None:
    r = parse_ib_write_bw(real_output("ib_write_bw", "dranet-gke-h200-sweep-error-1.txt"))
    assert (r.device, r.header["Lock-free"], r.header["CQE Poll Batch"]) == ("mlx5_3", "OFF", "16")
    assert len(r.results) == 16 and r.last().bytes == 65536 and r.last().average.gbps == 381.41
    assert r.errors == [
        "Completion with error at client",
        "Failed status 10: wr_id 0 syndrom 0x88",
        "scnt=128, ccnt=0",
        "Failed to complete run_iter_bw function successfully",
    ]


def test_ib_write_bw_200g_roce_sweep_reads_ipv4_mapped_gids() -> None:
    r = parse_ib_write_bw(real_output("ib_write_bw", "k8s-multus-roce-client-a-gbits-10.txt"))
    assert len(r.results) == 23 and r.results[0].peak.raw_value == 0.090062
    assert r.last().average.gbps == 196.07 and r.best().average.gbps == 196.07
    assert (r.local_addresses[0].gid_ipv4, r.remote_addresses[0].gid_ipv4) == ("172.31.1.2", "172.31.1.1")
    assert r.local_addresses[0].qpn == 0x0239


def test_ib_write_bw_rdma_cm_client_in_mb_per_sec_after_kubectl_prompt_lines() -> None:
    r = parse_ib_write_bw(real_output("ib_write_bw", "k8s-sriov-cx5-mbsec-3.txt"))
    assert (r.rdma_cm, r.data_exchange, r.mtu, r.role) == (True, "rdma_cm", 1024, "client")
    (row,) = r.results
    assert (row.bytes, row.iterations, row.average.raw_value, row.average.raw_unit) == (65536, 5000, 11024.71, "MB/sec")
    assert row.average.gbps == pytest.approx(92.48, abs=0.01)
    assert (r.local_addresses[0].gid_ipv4, r.remote_addresses[0].gid_ipv4) == ("10.0.32.4", "10.0.33.3")


def test_ib_write_bw_post_list_title_and_duration_row() -> None:
    r = parse_ib_write_bw(real_output("ib_write_bw", "perftest-issue273-1.txt"))
    assert (r.test, r.device, r.tx_depth, r.header["Post List"]) == ("RDMA_Write Post List BW Test", "ib0", 256, "128")
    assert (r.link_type, r.gid_index, r.header["PCIe relax order"]) == ("Ethernet", 2, "Unsupported")
    (row,) = r.results
    assert (row.bytes, row.iterations, row.peak.gbps, row.average.gbps, row.msg_rate_mpps) == (
        8,
        224958464,
        0.0,
        0.48,
        7.498617,
    )
    assert r.local_addresses == [] and r.remote_addresses == []


def test_ib_write_bw_old_header_on_connectx3_infiniband() -> None:
    r = parse_ib_write_bw(real_output("ib_write_bw", "teaker-cx3-ib-sweep-mbsec-4.txt"))
    assert (r.device, r.mtu, r.link_type, r.gid_index) == ("mlx4_0", 2048, "IB", None)
    assert "PCIe relax order" not in r.header
    assert (r.local_addresses[0].lid, r.local_addresses[0].qpn) == (3, 0x3371A)
    assert len(r.results) == 23 and r.results[0].iterations == 20000
    assert r.last().average.raw_value == 3665.25 and r.last().average.gbps == pytest.approx(30.75, abs=0.01)


def test_ib_write_bw_server_cut_off_before_results_records_an_error() -> None:
    r = parse_ib_write_bw(real_output("ib_write_bw", "tensorflow-issue22077-rdmacm-server-11-partial.txt"))
    assert (r.role, r.rdma_cm, r.gid_index, r.mtu) == ("server", True, 1, 1024)
    assert r.results == [] and r.best() is None and r.last() is None
    assert len(r.errors) == 1 and "no result rows" in r.errors[0]
    assert r.local_addresses[0].gid_ipv4 == "12.12.12.16"


# --- ib_read_bw / ib_send_bw ---------------------------------------------------------------------------------


def test_ib_read_bw_twenty_qps_on_roce_lag_with_elided_lines() -> None:
    r = parse_ib_read_bw(real_output("ib_read_bw", "aliyun-sccgn-bond-q20-client-4.txt"))
    assert (r.test, r.device, r.qps, r.header["Outstand reads"]) == ("RDMA_Read BW Test", "mlx5_bond_0", 20, "16")
    assert len(r.local_addresses) == 3 and len(r.remote_addresses) == 1
    assert r.local_addresses[0].out_reads == 16 and r.local_addresses[0].gid_ipv4 == "200.0.45.14"
    assert r.remote_addresses[0].qpn == 0x11DD and r.remote_addresses[0].gid_ipv4 == "200.0.46.14"
    assert [row.bytes for row in r.results] == [2, 4194304, 8388608]
    assert r.last().average.gbps == 165.63 and r.best().bytes == 8388608


def test_ib_read_bw_rdma_cm_single_size() -> None:
    r = parse_ib_read_bw(real_output("ib_read_bw", "k8s-sriov-cx5-mbsec-1.txt"))
    (row,) = r.results
    assert (row.bytes, row.iterations, row.peak.raw_value, row.average.raw_value) == (65536, 1000, 10402.09, 10401.68)
    assert r.rdma_cm is True and r.remote_addresses[0].qpn == 0x08A3


def test_ib_read_bw_infiniband_sweep_with_out_field_in_addresses() -> None:
    r = parse_ib_read_bw(real_output("ib_read_bw", "teaker-cx3-ib-sweep-mbsec-2.txt"))
    assert r.local_addresses[0].out_reads == 0x10 and r.local_addresses[0].rkey == 0xB0011B4F
    assert len(r.results) == 23 and r.row(8192).average.raw_value == 3666.02
    assert r.best().bytes == 65536


def test_ib_send_bw_infiniband_gbits_with_warning_inside_table() -> None:
    r = parse_ib_send_bw(real_output("ib_send_bw", "ib-link-testing-doc-1.txt"))
    assert (r.test, r.device, r.header["CQ Moderation"]) == ("Send BW Test", "ibp3s0", "1")
    (row,) = r.results
    assert (row.bytes, row.average.gbps, row.msg_rate_mpps) == (65536, 84.02, 0.160259)
    assert (r.local_addresses[0].lid, r.remote_addresses[0].lid) == (1, 2)
    assert len(r.warnings) == 1


def test_ib_send_bw_over_roce_lag_bond_with_tabs() -> None:
    r = parse_ib_send_bw(real_output("ib_send_bw", "nvmeof-blog-bond1-client-3.txt"))
    assert (r.device, r.mtu, r.gid_index) == ("mlx5_bond_1", 1024, 3)
    assert r.results[0].average.raw_value == 2757.93 and r.results[0].msg_rate_mpps == 0.044127
    assert (r.local_addresses[0].gid_ipv4, r.remote_addresses[0].gid_ipv4) == ("7.32.205.201", "7.32.205.198")


# --- latency -------------------------------------------------------------------------------------------------


def test_ib_write_lat_sweep_with_tabs_between_columns_and_two_warnings_per_row() -> None:
    r = parse_ib_write_lat(real_output("ib_write_lat", "brev-a100-hdr-ib-client-sweep-tabs-4.txt"))
    assert (r.test, r.tx_depth, r.header["Max inline data"]) == ("RDMA_Write Latency Test", 1, "220[B]")
    assert len(r.results) == 23
    row = r.row(2)
    assert (row.t_min_us, row.t_max_us, row.t_typical_us, row.t_avg_us) == (1.79, 5.41, 1.87, 1.88)
    assert (row.t_stdev_us, row.p99_us, row.p99_9_us, row.tps_average) == (0.18, 2.03, 5.41, None)
    assert (r.last().bytes, r.last().t_typical_us, r.last().p99_9_us) == (8388608, 345.55, 447.02)
    assert len(r.warnings) == 1


def test_ib_write_lat_dgx_spark_rocep_device_over_rdma_cm() -> None:
    r = parse_ib_write_lat(real_output("ib_write_lat", "spark-vllm-docker-dgx-spark-1.txt"))
    assert (r.device, r.rdma_cm, r.link_type) == ("rocep1s0f1", True, "IB")
    (row,) = r.results
    assert (row.bytes, row.iterations, row.t_typical_us, row.p99_us, row.t_stdev_us) == (2, 1000, 1.47, 1.57, 0.0)


def test_ib_write_lat_connectx3_sweep_rows_padded_with_spaces() -> None:
    r = parse_ib_write_lat(real_output("ib_write_lat", "teaker-cx3-ib-sweep-3.txt"))
    assert len(r.results) == 23 and {row.iterations for row in r.results} == {20000}
    assert r.row(4194304).t_avg_us == 1094.48 and r.row(32).t_max_us == 21.12


def test_ib_read_lat_roce_with_two_warnings_between_header_and_row() -> None:
    r = parse_ib_read_lat(real_output("ib_read_lat", "k8s-multus-roce-client-4.txt"))
    assert (r.link_type, r.gid_index, r.header["Outstand reads"]) == ("Ethernet", 3, "16")
    (row,) = r.results
    assert (row.t_min_us, row.t_max_us, row.t_typical_us, row.t_avg_us) == (4.70, 13.20, 4.83, 4.82)
    assert r.local_addresses[0].gid_ipv4 == "172.31.1.2"


def test_ib_read_lat_rdma_cm_client() -> None:
    r = parse_ib_read_lat(real_output("ib_read_lat", "k8s-sriov-cx5-1.txt"))
    (row,) = r.results
    assert (row.t_typical_us, row.t_stdev_us, row.p99_us, row.p99_9_us) == (2.69, 0.02, 2.75, 5.50)


def test_ib_read_lat_mlx4_client() -> None:
    r = parse_ib_read_lat(real_output("ib_read_lat", "wikijs-ibperf-mlx4-client-3.txt"))
    assert (r.device, r.remote_addresses[0].lid, r.results[0].t_typical_us) == ("mlx4_0", 4, 1.79)


def test_ib_send_lat_server_prints_rx_depth_and_is_recognised_as_server() -> None:
    r = parse_ib_send_lat(real_output("ib_send_lat", "ct1pt-edr-ib-server-1.txt"))
    assert (r.test, r.role, r.rx_depth, r.tx_depth) == ("Send Latency Test", "server", 512, None)
    (row,) = r.results
    assert (row.t_min_us, row.t_typical_us, row.t_avg_us, row.p99_9_us) == (0.96, 1.00, 1.01, 3.45)


# --- failures ------------------------------------------------------------------------------------------------


def test_perftest_port_down_gives_errors_and_the_peak_warning() -> None:
    r = parse_ib_write_bw(real_output("perftest_errors", "ib-sm-debug-note-portdown-8.txt"))
    assert r.test is None and r.results == []
    assert r.errors == [
        "Port number 1 state is Down",
        "Couldn't set the link layer",
        "Couldn't get context for the device",
    ]
    assert r.warnings == ["WARNING: BW peak won't be measured in this run."]


def test_perftest_without_rdma_device() -> None:
    r = parse_ib_write_bw(real_output("perftest_errors", "k8s-rdma-shared-issue169-nodev-7.txt"))
    assert r.errors == [
        "Did not detect devices",
        "If device exists, check if driver is up",
        "Unable to find the Infiniband/RoCE device",
    ]


def test_perftest_cuda_memory_registration_failures() -> None:
    vgpu = parse_ib_write_bw(real_output("perftest_errors", "perftest-issue126-cuda-mr-rdmacm-2.txt"))
    assert vgpu.cuda_device == "NVIDIA A30-8C"
    assert vgpu.errors[0] == "Couldn't allocate MR" and vgpu.errors[-1] == "Segmentation fault (core dumped)"
    assert "ERRNO: Bad address." in vgpu.errors
    k80 = parse_ib_write_bw(real_output("perftest_errors", "perftest-issue31-cuda-mr-1.txt"))
    assert (k80.role, k80.cuda_device, k80.errors[-1]) == ("server", "Tesla K80", "Couldn't create IB resources")
    newer = parse_ib_write_bw(real_output("perftest_errors", "perftest-issue346-cuda-mr-errno-3.txt"))
    assert newer.errors[0] == "Couldn't allocate MR with error=14"


# --- ibv_rc_pingpong -----------------------------------------------------------------------------------------


def test_rc_pingpong_soft_roce_single_iteration() -> None:
    r = parse_ibv_rc_pingpong(real_output("ibv_rc_pingpong", "hustcat-rxe-client-2.txt"))
    assert (r.bytes_transferred, r.seconds, r.mbit_per_sec) == (256, 0.0, 16.13)
    assert (r.iterations, r.usec_per_iter, r.errors) == (1, 127.0, [])
    assert (r.bandwidth.gbps, r.bandwidth.raw_unit) == (pytest.approx(0.01613), "Mbit/sec")
    assert (r.local.qpn, r.local.psn, r.local.gid) == (0x11, 0x849753, "fe80::5054:61ff:fe56:1211")


def test_rc_pingpong_mlx5_client() -> None:
    r = parse_ibv_rc_pingpong(real_output("ibv_rc_pingpong", "roce-notes-mlx5-client-5.txt"))
    assert (r.bytes_transferred, r.mbit_per_sec, r.iterations, r.usec_per_iter) == (8192000, 5376.21, 1000, 12.19)
    assert r.bandwidth.gbps == pytest.approx(5.37621)
    assert (r.remote.qpn, r.remote.gid, r.remote.gid_ipv4) == (0x11A, "fe80::e42:a1ff:fe41:2d36", None)


def test_rc_pingpong_connection_failures_are_errors() -> None:
    r = parse_ibv_rc_pingpong(real_output("ibv_rc_pingpong", "roce-ecn-notes-errors-6.txt"))
    assert r.errors == [
        "Couldn't connect to 10.22.116.221:7777",
        "client read: No space left on device",
        "Couldn't read remote address",
    ]
    assert (r.remote, r.bandwidth, r.local.qpn) == (None, None, 0x1AA)


def test_rc_pingpong_hang_without_summary_records_an_error() -> None:
    r = parse_ibv_rc_pingpong(real_output("ibv_rc_pingpong", "rxe-dev-issue47-hang-3.txt"))
    assert r.bandwidth is None and r.remote.psn == 0xD7AF63
    assert len(r.errors) == 1 and "did not finish" in r.errors[0]


# --- layouts without a real sample (lines built from perftest's own format strings) ----------------------------

_HEADER = "                    RDMA_Write {kind} Test\n Link type       : Ethernet\n" + "-" * 87 + "\n"


def test_current_perftest_mib_per_sec_unit_is_kept_as_printed() -> None:
    # Synthetic: perftest >= 2024 prints "BW peak[MiB/sec]" (src/perftest_parameters.h RESULT_FMT).
    text = _HEADER.format(kind="BW") + (
        " #bytes     #iterations    BW peak[MiB/sec]    BW average[MiB/sec]   MsgRate[Mpps]\n"
        " 65536      5000             11025.44            11024.71\t\t     0.176395\n"
    )
    row = parse_ib_write_bw(text).results[0]
    assert (row.average.raw_unit, row.average.gbps) == ("MiB/sec", pytest.approx(11024.71 * MB_SEC_TO_GBPS))


def test_qos_layout_with_service_level_column() -> None:
    # Synthetic: RESULT_FMT_G_QOS / REPORT_FMT_QOS of perftest.
    text = _HEADER.format(kind="BW") + (
        " #bytes    #sl      #iterations    BW peak[Gb/sec]    BW average[Gb/sec]   MsgRate[Mpps]\n"
        " 65536    3           5000           23.10            23.05                  0.043961\n"
    )
    row = parse_ib_write_bw(text).results[0]
    assert (row.bytes, row.sl, row.iterations, row.average.gbps) == (65536, 3, 5000, 23.05)


def test_old_three_column_and_duration_latency_layouts() -> None:
    # Synthetic: perftest 2013 RESULT_FMT_LAT and the current -D RESULT_FMT_LAT_DUR.
    old = _HEADER.format(kind="Latency") + (
        " #bytes #iterations    t_min[usec]    t_max[usec]  t_typical[usec]\n"
        " 2       1000          0.88           6.84         0.98\n"
    )
    row = parse_ib_write_lat(old).results[0]
    assert (row.t_min_us, row.t_max_us, row.t_typical_us, row.t_avg_us) == (0.88, 6.84, 0.98, None)
    duration = _HEADER.format(kind="Latency") + (
        " #bytes        #iterations       t_avg[usec]    tps average\n"
        " 2       812345            1.23        812345.67\n"
    )
    row = parse_ib_write_lat(duration).results[0]
    assert (row.iterations, row.t_avg_us, row.tps_average, row.t_typical_us) == (812345, 1.23, 812345.67, None)


# --- robustness and refusals ---------------------------------------------------------------------------------


def test_crlf_line_endings_parse_like_the_original() -> None:
    text = real_output("ib_write_bw", "dc-transport-note-client-2.txt")
    assert parse_ib_write_bw(text.replace("\n", "\r\n")) == parse_ib_write_bw(text)


@pytest.mark.parametrize(
    ("parser", "text", "reason"),
    [
        (parse_ib_write_bw, "", "empty"),
        (parse_ib_write_bw, "   \n\t\n", "empty"),
        (parse_ib_write_bw, real_output("nvidia_smi_L", "perf-report-a100x8-5.txt"), "not ib_write_bw"),
        (parse_ib_write_bw, real_output("ib_read_lat", "k8s-sriov-cx5-1.txt"), "RDMA_Read Latency Test"),
        (parse_ib_read_bw, real_output("ib_write_bw", "dc-transport-note-client-2.txt"), "RDMA_Write BW Test"),
        (parse_ib_send_lat, real_output("ib_send_bw", "ib-link-testing-doc-1.txt"), "Send BW Test"),
        (parse_ib_write_bw, real_output("ibv_rc_pingpong", "roce-notes-mlx5-client-5.txt"), "ibv_rc_pingpong"),
        (parse_ibv_rc_pingpong, real_output("ib_write_bw", "perftest-issue273-1.txt"), "perftest"),
        (parse_ibv_rc_pingpong, real_output("perftest_errors", "perftest-issue31-cuda-mr-1.txt"), "not ibv_rc"),
        (parse_ibv_rc_pingpong, real_output("nccl_debug", "nccl-issue226-aws-socket-noib-6.txt"), "not ibv_rc"),
    ],
)
def test_text_that_is_not_the_tools_output_is_refused(parser, text: str, reason: str) -> None:
    with pytest.raises(ParseError, match=reason):
        parser(text)


def test_bw_table_without_title_given_to_a_latency_parser_is_refused() -> None:
    table = "\n".join(real_output("ib_send_bw", "ib-link-testing-doc-1.txt").splitlines()[18:])
    with pytest.raises(ParseError, match="bandwidth result table"):
        parse_ib_send_lat(table)
