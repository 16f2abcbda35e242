"""The bandwidth page on a 1,024-host quick run (a fabric on paper, tests/validate/fleet_model_fabric.py): the
Fleet tab lists the suspects first, the budget and coverage, one row per leaf, the slowest first, and the
highlighted leaf's host ports; no host x host map."""

from __future__ import annotations

from textual.widgets import Static, TabbedContent

from screens.bwtest import BandwidthScreen, fleet_options
from screens.vtable import VirtualTable
from tests.tui.test_bwtest_matrix import Host
from tests.validate.fleet_model_fabric import LINE, PaperFabric, paper_report
from wizard.answers.model import parse_answers
from wizard.validate.run import Options


def _text(widget: Static) -> str:
    return str(widget.render())


async def test_the_fleet_tab_puts_suspects_first_then_leaves_slowest_first_with_their_ports() -> None:
    paper = PaperFabric(1024, su=32, rails=8, spines=8)
    paper.bad_ports[("gpu-0412", 3)] = 0.6 * LINE
    report = paper_report(paper)

    async def run(emit):  # type: ignore[no-untyped-def]
        emit("done", {"report": report})
        return report

    screen = BandwidthScreen(simulated=True, run=run, options=Options(quick=True))
    async with Host(screen).run_test(size=(120, 40)) as pilot:
        await pilot.pause(0.3)
        assert screen.query_one("#bw-tabs", TabbedContent).active == "tab-fleet"
        summary = _text(screen.query_one("#fleet-summary", Static))
        assert summary.startswith("1 suspect(s), most certain first:")
        assert "host port: gpu-0412 rail 3 (enp3s0, leaf-su13-r3 swp28)" in summary
        assert "quick: 5/5 rounds" in summary and "covered 1024/1024 hosts" in summary
        leaves = screen.query_one("#fleet-leaves", VirtualTable)
        assert leaves.row_count == 256 and leaves.rows[0][0] == "leaf-su13-r3"
        assert "✘ gpu-0412 rail 3" in _text(screen.query_one("#fleet-ports", Static))
        leaves.focus()
        await pilot.press("down")
        await pilot.pause(0.1)
        assert leaves.rows[1][0] in _text(screen.query_one("#fleet-ports", Static))


def test_the_page_runs_the_quick_schedule_above_16_hosts_only() -> None:
    def answers(n: int):  # type: ignore[no-untyped-def]
        hosts = "".join(f"  - {{name: gpu-{i:04d}, address: 10.0.0.{i}}}\n" for i in range(1, n + 1))
        return parse_answers(f"version: 1\ncluster: {{name: c{n}}}\nhosts:\n{hosts}")

    assert fleet_options(answers(16)) is None
    options = fleet_options(answers(17))
    assert options.quick and not (options.sweep or options.latency or options.nccl)


def test_many_suspects_and_regressions_leave_the_budget_and_coverage_in_the_summary_box() -> None:
    """Five suspects with two lines of evidence each and their regressions pushed the budget bar and the coverage out
    of the 16-line box on the 1,024-host benchmark: now each suspect keeps one line of evidence, the last are counted,
    and the budget and coverage lines always end the summary."""
    from screens.fleet_view import SUMMARY_LINES, fleet_summary
    from wizard.validate.fleet_model import Regression, Suspect

    paper = PaperFabric(1024, su=32, rails=8, spines=8)
    report = paper_report(paper)
    assert report.fleet is not None
    report.fleet.suspects = [
        Suspect(kind="host_port", part=f"gpu-{i:04d} rail 1", evidence=["link trained at 200 Gb/s", "slow with 4"])
        for i in range(1, 10)
    ]
    report.fleet.regressions = [
        Regression(
            host=f"gpu-{i:04d}",
            rail=1,
            before_gbps=375,
            after_gbps=188,
            change_pct=-50,
            since="2026-11-29",
            run="bwtest-x",
        )  # fmt: skip
        for i in range(1, 6)
    ]
    lines = fleet_summary(report).split("\n")
    assert len(lines) <= SUMMARY_LINES
    assert lines[0].endswith("9 suspect(s)[/], most certain first:")
    assert "link trained at 200 Gb/s" in lines[2] and "slow with 4" not in "\n".join(lines), "one line of evidence"
    assert any("more suspect(s)" in line for line in lines) and "+2 more regression(s)" in "\n".join(lines)
    assert lines[-2].startswith("quick") and lines[-1].startswith("covered 1024/1024 hosts")
    few = report.model_copy(deep=True)
    assert few.fleet is not None
    few.fleet.suspects, few.fleet.regressions = few.fleet.suspects[:2], []
    assert "slow with 4" in fleet_summary(few), "with room, two lines of evidence"
