"""Fleet validation on a fabric on paper (tests/validate/fleet_model_fabric.py): the quick schedule's coverage and
size, the suspects it names for injected faults (and only those), the re-test of suspects, and the comparison with
an earlier run."""

from __future__ import annotations

import argparse
from collections import Counter

import pytest

from tests.validate.fleet_model_fabric import LINE, PaperFabric, paper_report
from wizard.cli.bwtest import duration_arg
from wizard.validate.fleet_model import Suspect
from wizard.validate.html_report import render
from wizard.validate.quick import quick_rounds
from wizard.validate.retest import judge_retest, retest_rounds
from wizard.validate.suspects import Flow, infer


def _parts(suspects: list[Suspect]) -> set[tuple[str, str | None, int | None, str | None]]:
    return {(s.kind, s.host, s.rail, s.leaf) for s in suspects}


def test_quick_rounds_test_every_port_twice_on_its_leaves_and_every_host_through_the_spine() -> None:
    paper = PaperFabric(64, su=32, rails=8)
    schedule = quick_rounds(paper.fabric())
    for r in schedule:
        hosts = [h for pair in r.pairs + r.cross for h in pair]
        assert len(hosts) == len(set(hosts)), f"{r.kind}: a host runs two tests at once"
    flows = paper.run(schedule)
    same_leaf = Counter(p for f in flows if not f.cross for p in (f.a, f.b))
    assert set(same_leaf) == {(h, r) for h in paper.hosts for r in range(8)}
    assert min(same_leaf.values()) >= 2  # two different neighbours: a bad port tells itself from a bad peer
    crossed = {f.a[0] for f in flows if f.cross} | {f.b[0] for f in flows if f.cross}
    assert crossed == set(paper.hosts)
    assert any(f.a[1] != f.b[1] for f in flows), "a cross-rail canary ran"


def test_the_quick_schedule_does_not_grow_with_the_hosts() -> None:
    sizes = {n: len(quick_rounds(PaperFabric(n, su=32, rails=8).fabric())) for n in (64, 256, 1024)}
    assert sizes[64] == sizes[256] == sizes[1024] <= 7
    assert sum(r.size for r in quick_rounds(PaperFabric(1024, su=32, rails=8).fabric())) < 4 * 1024


def test_five_injected_faults_are_each_named_with_evidence_and_nothing_else() -> None:
    paper = PaperFabric(128, su=16, rails=4, spines=4)
    paper.bad_ports[("gpu-0005", 2)] = 0.6 * LINE  # a bad cable
    paper.low_speed[("gpu-0040", 1)] = 200.0  # trained at half rate
    paper.bad_hosts.add("gpu-0070")  # every rail slow: PCIe, ACS
    paper.bad_uplinks["leaf-su05-r3"] = 2  # one uplink of one leaf
    paper.bad_leaves.add("leaf-su08-r0")  # every port of a leaf
    fabric = paper.fabric()
    suspects = infer(paper.run(quick_rounds(fabric)), fabric)
    assert _parts(suspects) == {
        ("leaf", None, None, "leaf-su08-r0"),
        ("uplink", None, None, "leaf-su05-r3"),
        ("host", "gpu-0070", None, None),
        ("host_port", "gpu-0005", 2, "leaf-su01-r2"),
        ("host_port", "gpu-0040", 1, "leaf-su03-r1"),
    }
    by_kind = {s.kind: s for s in suspects}
    cable = next(s for s in suspects if s.host == "gpu-0005")
    assert cable.part == "gpu-0005 rail 2 (enp2s0, leaf-su01-r2 swp5)"
    assert cable.evidence[0].startswith("slow with 4 peer(s), fast with none: 240 of 400 Gb/s with gpu-")
    low = next(s for s in suspects if s.host == "gpu-0040")
    assert low.evidence[0] == "link trained at 200 Gb/s; rail 1 runs at 400 elsewhere"
    assert "same-leaf flows" in by_kind["uplink"].evidence[1]
    assert [s.kind for s in suspects][:2] == ["leaf", "uplink"]  # widest first


def test_a_healthy_fabric_has_no_suspects() -> None:
    paper = PaperFabric(96, su=32, rails=8)
    assert infer(paper.run(quick_rounds(paper.fabric())), paper.fabric()) == []


def test_a_slow_pair_tested_only_with_each_other_is_left_as_a_pair_until_retested() -> None:
    paper = PaperFabric(2, su=2, rails=1)
    paper.bad_ports[("gpu-0002", 0)] = 100.0
    fabric = paper.fabric()
    suspects = infer(paper.run(quick_rounds(fabric)), fabric)
    assert [s.kind for s in suspects] == ["pair"]
    assert "gpu-0001 rail 0" in suspects[0].part and "gpu-0002 rail 0" in suspects[0].part


def test_with_two_rails_the_cross_rail_canary_tells_which_end_of_a_slow_pair_is_slow() -> None:
    paper = PaperFabric(2, su=2, rails=2)
    paper.bad_ports[("gpu-0002", 0)] = 100.0
    fabric = paper.fabric()
    suspects = infer(paper.run(quick_rounds(fabric)), fabric)
    assert _parts(suspects) == {("host_port", "gpu-0002", 0, "leaf-su01-r0")}


def test_suspects_are_retested_against_known_good_peers_and_confirmed_or_cleared() -> None:
    paper = PaperFabric(64, su=16, rails=4)
    paper.bad_ports[("gpu-0003", 1)] = 0.5 * LINE
    fabric = paper.fabric()
    found = infer(paper.run(quick_rounds(fabric)), fabric)
    innocent = Suspect(kind="host_port", part="gpu-0020 rail 0", host="gpu-0020", rail=0)
    suspects = [*found, innocent]
    schedule = retest_rounds(fabric, suspects)
    tested = {h for r in schedule for pair in r.pairs for h in pair}
    assert {"gpu-0003", "gpu-0020"} <= tested
    peers = tested - {"gpu-0003", "gpu-0020"}
    assert peers and all(fabric.group_of(p) == fabric.group_of("gpu-0003") or fabric.group_of(p) ==
                         fabric.group_of("gpu-0020") for p in peers)  # fmt: skip
    flows = paper.run(schedule)
    judged = judge_retest(suspects, infer(flows, fabric), flows, fabric)
    status = {(s.host, s.rail): s.status for s in judged}
    assert status == {("gpu-0003", 1): "confirmed", ("gpu-0020", 0): "cleared"}
    assert all(s.retest for s in judged)


@pytest.mark.parametrize(("text", "seconds"), [("15m", 900), ("900s", 900), ("90", 90), ("1h30m", 5400)])
def test_a_budget_reads_as_a_duration(text: str, seconds: float) -> None:
    assert duration_arg(text) == seconds


@pytest.mark.parametrize("text", ["", "15x", "0s", "m"])
def test_a_budget_that_is_not_a_duration_is_refused(text: str) -> None:
    with pytest.raises(argparse.ArgumentTypeError):
        duration_arg(text)


def test_the_html_report_of_a_1024_host_run_lists_suspects_and_leaves_and_draws_no_host_grid() -> None:
    paper = PaperFabric(1024, su=32, rails=8, spines=8)
    paper.bad_ports[("gpu-0412", 3)] = 0.6 * LINE
    paper.bad_uplinks["leaf-su07-r5"] = 3
    html = render(paper_report(paper))
    assert html.index("Suspects, most certain first") < html.index("Per leaf")
    assert "leaf-su07-r5 uplinks" in html and "gpu-0412 rail 3 (enp3s0, leaf-su13-r3 swp28)" in html
    assert "All host pairs: heat maps" not in html  # no host x host map: a table of the slow pairs instead
    assert "1024 hosts (gpu-0001 .. gpu-1024)" in html
    assert html.count("<details class='leaf'>") == 32 * 8
    assert len(html) < 3_000_000


def test_the_html_report_of_a_fleet_leads_with_its_suspects_and_lists_20_per_flow_causes() -> None:
    """On the 1,024-host benchmark 34 per-flow causes came first and pushed the suspects a page down."""
    paper = PaperFabric(1024, su=32, rails=8, spines=8)
    paper.bad_ports[("gpu-0412", 3)] = 0.6 * LINE
    report = paper_report(paper)
    report.causes = [f"rail 3: gpu-{i:04d} enp3s0 -> gpu-0412 enp3s0: 225 of 400 Gb/s" for i in range(1, 35)]
    html = render(report)
    assert html.index("Suspects, most certain first") < html.index("Per-flow causes behind them")
    assert "gpu-0020 enp3s0" in html and "gpu-0021 enp3s0" not in html
    assert "14 more in the run's saved JSON" in html
    report.fleet = None
    assert "<h2>Causes, most likely first</h2>" in render(report) and "gpu-0034 enp3s0" in render(report)


@pytest.mark.parametrize("units", [3, 5])
def test_with_an_odd_number_of_units_every_unit_meets_two_partner_units(units: int) -> None:
    paper = PaperFabric(units * 8, su=8, rails=2)
    fabric = paper.fabric()
    partners: dict[str, set[str]] = {}
    for r in quick_rounds(fabric):
        if r.kind == "cross-leaf":
            for a, b in r.pairs:
                ua, ub = fabric.group_of(a), fabric.group_of(b)
                partners.setdefault(ua, set()).add(ub)
                partners.setdefault(ub, set()).add(ua)
    # One partner only leaves a slow uplink shared by two leaves ("leaf-su02-r5 or leaf-su03-r5 uplinks").
    assert len(partners) == units and all(len(p) == 2 for p in partners.values()), partners


def test_when_no_test_passes_the_suspect_is_what_they_all_share_not_every_host() -> None:
    paper = PaperFabric(64, su=32, rails=4)
    paper.bad_hosts.update(paper.hosts)  # as a broken perftest or rails without addresses would look
    fabric = paper.fabric()
    suspects = infer(paper.run(quick_rounds(fabric)), fabric)
    assert [s.kind for s in suspects] == ["everything"]
    assert suspects[0].part.startswith("all ") and "on 64 hosts" in suspects[0].part


def test_a_pair_whose_test_failed_on_every_rail_is_one_suspect_not_one_per_rail() -> None:
    paper = PaperFabric(6, su=6, rails=4)
    fabric = paper.fabric()
    cut = {"gpu-0003", "gpu-0004"}  # their test lost its connection: no result on any rail
    flows = [
        Flow(f.a, f.b, None, f.expected, False, f.leaf_a, f.leaf_b) if {f.a[0], f.b[0]} == cut else f
        for f in paper.run(quick_rounds(fabric))
    ]
    suspects = infer(flows, fabric)
    assert [(s.kind, s.part) for s in suspects] == [("pair", "gpu-0003 to gpu-0004, rails 0, 1, 2, 3")]


def test_two_slow_uplinks_in_units_that_never_meet_are_two_suspects_even_with_as_many_slow_flows() -> None:
    # As on the simulated rails-256: leaf-su02-r3 -> spine-2 and leaf-su08-r5 -> spine-6. Each leaf had as many slow
    # flows as the other, and the two came out as one "or" suspect though no flow crossed both.
    paper = PaperFabric(256, su=32, rails=8, spines=8)
    paper.bad_uplinks["leaf-su02-r3"] = 2
    paper.bad_uplinks["leaf-su08-r5"] = 6
    fabric = paper.fabric()
    suspects = infer(paper.run(quick_rounds(fabric)), fabric)
    assert _parts(suspects) == {("uplink", None, None, "leaf-su02-r3"), ("uplink", None, None, "leaf-su08-r5")}
    assert not any(" or " in s.part for s in suspects)
