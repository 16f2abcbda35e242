"""Pure parts of validation: perftest argv, all-pairs rounds, counter deltas, verdict rules, JSON/HTML export."""

from __future__ import annotations

import itertools
import json
import re

import pytest

from wizard.validate import counters, schedule, store
from wizard.validate.html_report import render
from wizard.validate.model import Aggregate, LatencyResult, PairCell, RailEnd, RailResult, Report
from wizard.validate.perftest import Spec, client_argv, server_argv

S = RailEnd(host="server1", netdev="ens1f0np0", device="mlx5_0", gid_index=3, ipv4="192.168.11.1",
            network="192.168.11.0/24", speed_gbps=25)  # fmt: skip
C = RailEnd(host="server2", netdev="ens1f0np0", device="mlx5_0", gid_index=5, ipv4="192.168.11.2",
            network="192.168.11.0/24", speed_gbps=25)  # fmt: skip


def test_both_sides_get_the_same_options_with_their_own_device_and_discovered_gid_index():
    spec = Spec("ib_write_bw", S, C, 18516, 106, duration_s=10)
    server, client = server_argv(spec), client_argv(spec)
    assert server[:2] == ["timeout", "40"], "a server whose client never comes must not wait forever"
    assert server[2:] == ["ib_write_bw", "-d", "mlx5_0", "-x", "3", "-p", "18516", "-F", "--tclass=106",
                          "--report_gbits", "-D", "10"]  # fmt: skip
    assert client == ["timeout", "40", "ib_write_bw", "-d", "mlx5_0", "-x", "5", "-p", "18516", "-F", "--tclass=106",
                      "--report_gbits", "-D", "10", "192.168.11.1"]  # fmt: skip


def test_a_client_whose_rdma_path_stalls_is_stopped_too():
    # Seen on Soft-RoCE in the qemu lab: the ib_write_lat client waited forever after its server had given up.
    assert client_argv(Spec("ib_write_lat", S, C, 18515, 106))[:2] == ["timeout", "30"]


def test_a_sweep_uses_dash_a_and_latency_tests_do_not_ask_for_gbits():
    assert "-a" in client_argv(Spec("ib_write_bw", S, C, 18515, 106, sweep=True))
    lat = client_argv(Spec("ib_write_lat", S, C, 18515, 106))
    assert "--report_gbits" not in lat and "--tclass=106" in lat


@pytest.mark.parametrize("n", [2, 3, 4, 5, 8])
def test_all_pairs_rounds_cover_every_pair_once_and_no_host_runs_two_tests_at_once(n: int):
    hosts = [f"h{i}" for i in range(n)]
    rounds = schedule.rounds(hosts)
    pairs = [p for r in rounds for p in r]
    assert sorted(pairs) == sorted(itertools.combinations(hosts, 2))
    for r in rounds:
        busy = [h for p in r for h in p]
        assert len(busy) == len(set(busy))
    assert len(rounds) == (n - 1 if n % 2 == 0 else n)


def test_the_all_pairs_estimate_grows_with_the_number_of_rounds_not_with_the_number_of_pairs():
    # 16 hosts: 120 pairs but 15 rounds; 1,000 hosts: 499,500 pairs but 999 rounds
    assert schedule.estimate_s(16, 3.0, setup_s=1.0) == 15 * 4.0
    assert schedule.estimate_s(17, 3.0, setup_s=1.0) == 17 * 4.0
    assert schedule.estimate_s(1000, 3.0, setup_s=1.0) == 999 * 4.0
    assert schedule.estimate_s(1, 3.0) == 0.0


def test_counter_deltas_fail_on_discards_and_pass_with_pause_frames_on_the_lossless_priority():
    before = {("s1", "p0"): {"rx_prio3_bytes": 0, "tx_prio3_pause": 5, "rx_prio3_discards": 0},
              ("s1", "p1"): {"rx_prio3_bytes": 0, "rx_prio3_discards": 0}}  # fmt: skip
    after = {("s1", "p0"): {"rx_prio3_bytes": 10**9, "tx_prio3_pause": 90, "rx_prio3_discards": 0},
             ("s1", "p1"): {"rx_prio3_bytes": 10**9, "rx_prio3_discards": 42}}  # fmt: skip
    ok, bad = counters.deltas(before, after, 3)
    assert ok.status == "pass" and ok.deltas["tx_prio3_pause"] == 85
    assert bad.status == "fail" and "rx_prio3_discards +42" in bad.note


def test_rdma_bytes_on_another_priority_mean_trust_or_dscp_map_is_wrong():
    (d,) = counters.deltas({}, {("s2", "p0"): {"tx_prio0_bytes": 10**9, "tx_prio3_bytes": 0}}, 3)
    assert d.status == "fail" and "another priority than 3" in d.note


def sample_report() -> Report:
    rail = RailResult(rail=0, server=S, client=C, gbps=23.4, expected_gbps=25.0, mtu=4096, status="pass",
                      sweep=[(2**i, min(23.4, 2**i * 0.07)) for i in range(1, 24)])  # fmt: skip
    slow = rail.model_copy(update={"rail": 1, "gbps": 19.1, "status": "fail", "cause": "server2 ens1f1np1 <b>PFC</b>"})
    return Report(
        simulated=True, cluster="l20-pair", hosts=["server1", "server2"], started="2026-11-22T16:00:00+00:00",
        rails=[rail, slow], together=[rail], verdict="fail", causes=["server2 ens1f1np1: PFC off"],
        aggregate=[Aggregate(hosts=("server1", "server2"), gbps=42.5, expected_gbps=50, status="fail")],
        matrix=[PairCell(a="server1", b="server2", round=0, gbps=42.5, expected_gbps=50, rails=[23.4, 19.1])],
        latency=[LatencyResult(rail=0, server=S, client=C, typical_us=1.6, p99_us=1.8, p99_9_us=2.2, status="pass")],
    )  # fmt: skip


def test_the_html_report_is_self_contained_with_inline_svg_charts_and_escaped_text():
    html = render(sample_report())
    assert html.startswith("<!DOCTYPE html>") and html.count("<svg") >= 4
    assert not re.search(r"""(src|href)=["']?(https?:|//)""", html), "no external assets"
    assert "SIMULATED" in html and 'Verdict: <span class="fail">FAIL</span>' in html
    assert "&lt;b&gt;PFC&lt;/b&gt;" in html and "<b>PFC</b>" not in html
    assert "polyline" in html and "server1" in html


def test_results_are_saved_with_the_state_and_exported_as_json_with_ratios(tmp_path):
    report = sample_report()
    latest = store.save(tmp_path, report)
    assert latest == tmp_path / "validation" / "latest.json"
    assert store.load_latest(tmp_path) == report
    assert len(list((tmp_path / "validation").glob("bwtest-*.json"))) == 1
    data = json.loads(json.dumps(store.to_json(report)))
    assert data["rails"][0]["ratio"] == 0.936 and data["rails"][1]["status"] == "fail"
    assert data["simulated"] is True and data["aggregate"][0]["expected_gbps"] == 50


def test_rdma_retransmit_counters_fail_and_ecn_marks_are_reported():
    before = {("s1", "p0"): {"rx_prio3_bytes": 0, "tx_prio3_pause": 0, "rdma_out_of_sequence": 3}}
    after = {("s1", "p0"): {"rx_prio3_bytes": 10**9, "tx_prio3_pause": 9, "rdma_out_of_sequence": 40}}
    (d,) = counters.deltas(before, after, 3)
    assert d.status == "fail" and "rdma_out_of_sequence +37" in d.note
    after = {("s1", "p0"): {"rx_prio3_bytes": 10**9, "tx_prio3_pause": 9, "rdma_np_cnp_sent": 12}}
    (d,) = counters.deltas({}, after, 3)
    assert d.status == "pass" and "ECN/CNP: np_cnp_sent +12" in d.note


def test_a_run_in_which_no_rail_could_be_tested_never_passes():
    from tests.steps.facts_builder import answers
    from wizard.validate.verdict import conclude

    report = Report(simulated=False, cluster="c", hosts=["server1"], started="now")
    conclude(report, {}, answers(hosts=("server1",)))
    assert report.verdict == "fail" and report.causes[0].startswith("no RDMA test ran: 1 host(s)")


def test_a_client_host_with_stdbuf_gets_line_buffered_output_so_rows_arrive_live():
    spec = Spec("ib_write_bw", S, C, 18515, 106, sweep=True, line_buffered=True)
    assert client_argv(spec)[2:5] == ["stdbuf", "-oL", "ib_write_bw"]
    assert server_argv(spec)[2] == "ib_write_bw", "the server prints once at the end: no need"


def test_a_message_size_sweep_gets_time_for_80_gb_on_a_10g_link():
    # -a moves ~80 GB (2 x 8 MiB x 5000): ~65 s at 10 Gb/s. Neither side may be cut off before that.
    spec = Spec("ib_write_bw", S, C, 18515, 106, sweep=True)
    assert int(server_argv(spec)[1]) >= 65 + 30 and int(client_argv(spec)[1]) >= 65 + 30


def test_ring_rounds_stay_at_most_three_whatever_the_number_of_hosts() -> None:
    for n in (2, 3, 4, 5, 16, 17, 1000):
        hosts = [f"h{i:04d}" for i in range(n)]
        found = schedule.ring_rounds(hosts)
        assert 1 <= len(found) <= 3, n
        for r in found:
            used = [h for pair in r for h in pair]
            assert len(used) == len(set(used)), f"{n}: a host twice in one round"
        pairs = [p for r in found for p in r]
        assert all(hosts.index(a) < hosts.index(b) for a, b in pairs)
        assert {h for p in pairs for h in p} == set(hosts), f"{n}: every host is measured"
        assert len(pairs) == (1 if n == 2 else n)
