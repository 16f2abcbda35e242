"""The live bandwidth and doctor screens, pushed on a tiny App: they update while the test runs."""

from __future__ import annotations

import asyncio

from textual.app import App
from textual.widgets import DataTable, Static

from screens.bwtest import BandwidthScreen
from screens.doctor import DoctorScreen
from screens.sweepchart import SweepChart
from tests.validate.labkit import lab_executors, quick_start  # noqa: F401 - fixture for the lab test
from wizard.validate.doctor import Finding
from wizard.validate.model import RailEnd, RailResult, Report
from wizard.validate.run import Options

S = RailEnd(host="server1", netdev="ens1f0np0", device="mlx5_0", gid_index=3, ipv4="192.168.11.1", speed_gbps=25)
C = RailEnd(host="server2", netdev="ens1f0np0", device="mlx5_0", gid_index=3, ipv4="192.168.11.2", speed_gbps=25)


class Host(App):
    """Any app: the screens must not depend on the wizard's main app."""

    def __init__(self, screen) -> None:  # type: ignore[no-untyped-def]
        super().__init__()
        self._screen = screen

    def on_mount(self) -> None:
        self.push_screen(self._screen)


def text(widget: Static) -> str:
    return str(widget.render())


async def test_rows_appear_in_the_chart_while_the_sweep_is_still_running():
    gate = asyncio.Event()

    async def scripted(emit):  # type: ignore[no-untyped-def]
        emit("phase", {"name": "rails", "text": "one rail at a time: ib_write_bw -a sweep"})
        emit("rail_start", {"rail": 0, "mode": "alone", "pair": ("server1", "server2"), "label": "rail 0"})
        for size, gbps in ((2, 0.1), (1024, 12.0), (65536, 23.4)):
            emit("row", {"rail": 0, "mode": "alone", "pair": ("server1", "server2"), "size": size, "gbps": gbps})
        await gate.wait()  # the test looks at the screen here, mid-run
        rail = RailResult(rail=0, server=S, client=C, gbps=23.4, expected_gbps=25.0, status="pass")
        emit("rail", {"result": rail})
        report = Report(simulated=True, cluster="c", hosts=["server1", "server2"], started="now", rails=[rail],
                        verdict="pass")  # fmt: skip
        emit("done", {"report": report})
        return report

    screen = BandwidthScreen(simulated=True, run=scripted)
    app = Host(screen)
    async with app.run_test() as pilot:
        await pilot.pause()
        chart = screen.query_one(SweepChart)
        assert chart.points == {2: 0.1, 1024: 12.0, 65536: 23.4}
        assert "23.40 Gb/s @ 64 KiB" in str(chart.render())
        assert "SIMULATED" in text(screen.query_one("#bw-phase", Static))
        assert screen.query_one("#bw-table", DataTable).row_count == 0, "no verdict before the rail is done"
        gate.set()
        await pilot.pause(0.1)
        table = screen.query_one("#bw-table", DataTable)
        assert table.row_count == 1 and "PASS" in str(table.get_row_at(0)[-1])
        assert "Verdict: PASS" in text(screen.query_one("#bw-verdict", Static))


async def test_the_screen_runs_a_real_validation_of_the_simulated_pair_and_shows_every_rail(tmp_path):
    async with lab_executors() as (_, answers, executors):
        options = Options(sweep=True, together_s=1.0, nccl=False)
        screen = BandwidthScreen(answers, executors, simulated=True, options=options, state_dir=tmp_path)
        seen: list[int] = []
        app = Host(screen)
        async with app.run_test() as pilot:
            for _ in range(400):
                await pilot.pause(0.05)
                seen.append(screen.rows_seen)
                if screen.report is not None and screen.report.finished:
                    break
            assert screen.report is not None and screen.report.verdict == "pass"
            assert len({n for n in seen if 0 < n < 4 * 23}) >= 2, "the chart grew in several steps during the run"
            table = screen.query_one("#bw-table", DataTable)
            assert table.row_count == 4 + 4 + 4, "4 rails alone, 4 together, 4 latency rows"
            assert len(screen.query(SweepChart)) == 4, "one sweep chart per rail; together runs fill the matrix"
            assert len(screen.query_one("#bw-heat").cells) == 1, "the one pair of the matrix"
        assert (tmp_path / "validation" / "latest.json").exists()


async def test_the_doctor_screen_lists_failures_first_and_shows_the_fix_of_the_selected_row():
    findings = [
        Finding(tree="bandwidth below expectation", id="pfc", title="PFC on priority 3 only", status="fail",
                evidence="server2 ens1f0np0: PFC 00000000", fix="run stage roce on server2"),
        Finding(tree="RDMA test fails", id="ofed", title="OFED installed", status="pass", evidence="DOCA",
                host="server1"),
    ]  # fmt: skip

    async def scripted(emit):  # type: ignore[no-untyped-def]
        emit("phase", {"name": "probe", "text": "reading facts"})
        return findings

    screen = DoctorScreen(simulated=True, run=scripted)
    async with Host(screen).run_test() as pilot:
        await pilot.pause(0.1)
        table = screen.query_one("#doc-table", DataTable)
        assert table.row_count == 2 and "FAIL" in str(table.get_row_at(0)[0])
        fix = text(screen.query_one("#doc-fix", Static))
        assert "run stage roce on server2" in fix and "PFC 00000000" in fix
        assert "1 failing" in text(screen.query_one("#doc-status", Static))


async def test_leaving_the_doctor_while_it_runs_stops_it_with_the_page():
    """Its events must not reach the widgets of a page that is gone (that raised NoMatches and crashed the app)."""
    gate = asyncio.Event()

    async def slow(emit):  # type: ignore[no-untyped-def]
        emit("phase", {"name": "probe", "text": "reading facts"})
        await gate.wait()
        emit("phase", {"name": "lint", "text": "comparing hosts"})
        return []

    screen = DoctorScreen(simulated=True, run=slow)
    async with Host(screen).run_test() as pilot:
        await pilot.pause(0.1)
        worker = next(w for w in pilot.app.workers if w.name == "doctor")
        await pilot.press("escape")
        gate.set()
        await pilot.pause(0.2)
        assert pilot.app.screen is not screen and worker.is_cancelled
