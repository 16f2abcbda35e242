"""The bandwidth page as a user meets it (issue 25): the wizard's header and sidebar, a starting line at once,
overall progress with an ETA from measured test times, any pair's sweep on demand, the pass line on the sweep
charts, and no NCCL chart when NCCL did not run."""

from __future__ import annotations

import asyncio

from textual.app import App
from textual.widgets import Header, Select, Static

from screens.bw_progress import TYPICAL_S, BwProgress, duration
from screens.bwtest import BandwidthScreen
from screens.progress import Progress
from screens.sidebar import Sidebar
from screens.sweepchart import PASS_MARK, SweepChart, chart
from screens.sweeps_view import SweepsView
from tests.validate.synthetic16 import HOSTS, build
from wizard.validate.model import NcclResult, Report


class Host(App):
    def __init__(self, screen: BandwidthScreen | None) -> None:
        super().__init__()
        self._screen = screen

    def on_mount(self) -> None:
        if self._screen is not None:
            self.push_screen(self._screen)


class Wizardish(Host):
    """What the page reads from the wizard's app: its pages, progress and stage titles."""

    def __init__(self, screen: BandwidthScreen | None) -> None:
        super().__init__(screen)
        self.progress = Progress(["discovery", "network"], HOSTS)
        self.conn_reports: dict[str, object] = {}

    def pages(self) -> list[tuple[str, str]]:
        return [("hosts", "Hosts"), ("discovery", "Discovery"), ("network", "Network"), ("summary", "Summary")]

    def titles(self) -> dict[str, str]:
        return {"discovery": "Discovery", "network": "Network"}


def text(widget: Static) -> str:
    return str(widget.render())


def events(*, nccl: NcclResult | None = None, stop_at: str | None = None, gate: asyncio.Event | None = None):  # type: ignore[no-untyped-def]
    """The synthetic 16-host run with a plan event up front; optionally an NCCL result; held before ``stop_at``."""
    report, evs = build()

    async def run(emit):  # type: ignore[no-untyped-def]
        emit("phase", {"name": "probe", "text": "reading facts on " + ", ".join(HOSTS)})
        emit("plan", {"tests": {"alone": 120, "together": 120, "latency": 0, "nccl": int(nccl is not None)}})
        for kind, data in evs:
            if gate is not None and stop_at in (kind, data.get("name")) and not gate.is_set():
                await gate.wait()
            if kind == "done" and nccl is not None:
                report.nccl = nccl
                emit("nccl", {"result": nccl})
            emit(kind, data)
        return report

    return run


async def test_the_page_keeps_the_header_and_the_wizards_sidebar_and_says_it_is_starting():
    gate = asyncio.Event()
    screen = BandwidthScreen(simulated=True, run=events(stop_at="rails", gate=gate))
    async with Wizardish(screen).run_test(size=(160, 45)) as pilot:
        await pilot.pause()
        assert screen.query(Header), "the app's header"
        sidebar = screen.query_one(Sidebar)
        assert [pid for pid, _ in sidebar.pages] == ["hosts", "discovery", "network", "summary"]
        assert sidebar.index == 3, "the bandwidth test is the summary's: the summary is marked"
        phase = text(screen.query_one("#bw-phase", Static))
        assert "starting: facts and lint on" in phase and "SIMULATED" in phase and "gpu-016" not in phase
        assert "0/240 tests" in text(screen.query_one("#bw-progress", Static))
        gate.set()


async def test_a_page_on_another_app_has_no_sidebar_and_still_runs():
    screen = BandwidthScreen(simulated=True, run=events())
    async with Host(screen).run_test(size=(120, 40)) as pilot:
        await pilot.pause(0.2)
        assert not screen.query(Sidebar)
        assert "240/240 tests" in text(screen.query_one("#bw-progress", Static))


async def test_the_pair_picker_and_the_p_key_switch_every_rail_to_that_pairs_sweep():
    screen = BandwidthScreen(simulated=True, run=events())
    async with Host(screen).run_test(size=(120, 40)) as pilot:
        await pilot.pause(0.2)
        view = screen.query_one(SweepsView)
        assert len(view.pairs) == 15, "every ring pair's sweeps are kept, not only the latest per rail"
        rail2 = screen.query_one("#chart-alone-2", SweepChart)
        assert "gpu-016" in rail2.title, "following the run: the latest sweep of the rail"
        await pilot.press("p")
        assert view.pair == ("gpu-002", "gpu-001")
        assert (
            rail2.title.startswith("rail 2: gpu-002")
            and screen.query_one("#bw-pair", Select).value == "gpu-002|gpu-001"
        )
        await pilot.press("p", "p")
        assert view.pair == ("gpu-004", "gpu-003")
        assert "gpu-004" in rail2.title and "FAIL" in rail2.title, "gpu-003's slow rail 2, picked by its pair"
        slow = next(x.sweep for x in build()[0].rails if x.rail == 2 and x.client.host == "gpu-004")
        assert rail2.points == dict(slow)
        await pilot.press("P", "P", "P")
        assert view.pair is None and "gpu-016" in rail2.title, "back to following the run"
        view.show_pair(("gpu-010", "gpu-009"))
        await pilot.pause()
        rail5 = screen.query_one("#chart-alone-5", SweepChart)
        assert "gpu-010" in rail5.title and "FAIL" in rail5.title


async def test_sweep_charts_draw_the_pass_line_at_90_percent_of_line_rate():
    screen = BandwidthScreen(simulated=True, run=events())
    async with Host(screen).run_test(size=(120, 40)) as pilot:
        await pilot.pause(0.2)
        shown = screen.query_one("#chart-alone-0", SweepChart).render().plain.split("\n")
        assert "pass >= 360 (90% of the 400 line rate)" in shown[1]
        assert shown[2].startswith(" 400┤" + PASS_MARK) and shown[2].endswith("pass 360")
    # The line runs through the empty cells of the row that holds the pass rate, never over a bar.
    plot = chart({2: 10.0, 1 << 23: 395.0}, top=400.0, unit="Gb/s", mark=360.0).plain.split("\n")
    assert plot[1].count(PASS_MARK) == 2 * 22 and plot[1].rstrip().endswith("pass 360")
    assert PASS_MARK not in "".join(plot[2:]), "only in its row"
    low = chart({2: 10.0}, top=400.0, unit="Gb/s", rows=8, mark=360.0).plain.split("\n")
    assert PASS_MARK in low[1] and "pass 360" in low[1], "eight rows: [350, 400) holds 360"


async def test_no_nccl_chart_without_nccl_results_and_a_line_saying_why():
    screen = BandwidthScreen(simulated=True, run=events())
    async with Host(screen).run_test(size=(120, 40)) as pilot:
        await pilot.pause(0.2)
        assert not screen.query("#chart-nccl-0")
        assert "NCCL all_reduce_perf: not run in this test" in text(screen.query_one("#bw-nccl", Static))
        assert "NCCL: not run" in text(screen.query_one("#bw-verdict", Static))
    skipped = NcclResult(reason="/opt/nccl-tests/build/all_reduce_perf is not built on gpu-001: run stage nccl first")
    screen = BandwidthScreen(simulated=True, run=events(nccl=skipped))
    async with Host(screen).run_test(size=(120, 40)) as pilot:
        await pilot.pause(0.2)
        assert not screen.query("#chart-nccl-0")
        note = text(screen.query_one("#bw-nccl", Static))
        assert "did not run (SKIP)" in note and "is not built on gpu-001" in note
    ran = NcclResult(status="pass", transport="NET/IB", busbw=[(1 << 20, 10.0), (1 << 30, 40.0)], peak_busbw=40.0)
    screen = BandwidthScreen(simulated=True, run=events(nccl=ran))
    async with Host(screen).run_test(size=(120, 40)) as pilot:
        await pilot.pause(0.2)
        nccl = screen.query_one("#chart-nccl-0", SweepChart)
        assert nccl.points == {1 << 20: 10.0, 1 << 30: 40.0} and "peak [b]40.00 GB/s[/b]" in nccl.title
        assert PASS_MARK not in nccl.render().plain, "bus bandwidth is not judged against a line rate"
        assert text(screen.query_one("#bw-nccl", Static)) == ""


def test_progress_counts_tests_and_the_eta_comes_from_measured_test_times():
    now = [0.0]
    p = BwProgress(clock=lambda: now[0])
    assert "counted once the hosts are read" in p.line()
    p.plan({"alone": 10, "together": 6, "latency": 0, "nccl": 1})
    typical = TYPICAL_S
    assert p.tests_total == 17, "the kinds' counts as the run announced them"
    assert p.eta_s() == 10 * typical["alone"] + 6 * typical["together"] + typical["nccl"], "typical times at first"
    assert "(a guess until a test is timed)" in p.line()
    p.phase("rails")
    for _ in range(4):
        now[0] += 2.0
        p.finished("alone")
    assert p.per_test("alone") == 2.0
    p.estimate(pairs=6, seconds=30.0)  # the run's own all-pairs estimate stands until a pair is timed
    assert p.eta_s() == 6 * 2.0 + 6 * 5.0 + typical["nccl"]
    line = p.line()
    assert "4/17 tests" in line and "sweeps 4/10 pairs 0/6 NCCL 0/1" in line and "8 s" in line
    assert f"about {duration(6 * 2.0 + 6 * 5.0 + typical['nccl'])} left" in line and "guess" not in line
    now[0] += 1.0  # half-way through the fifth sweep
    assert p.eta_s() == 6 * 2.0 - 1.0 + 6 * 5.0 + typical["nccl"]
    p.end()
    assert p.eta_s() == 0.0 and p.line().startswith("███░░░░░░░░░ 4/17 tests · finished · 9 s")


def test_durations_read_as_a_person_would_say_them():
    assert [duration(s) for s in (4.4, 59, 62, 190, 601, 3900)] == ["4 s", "59 s", "1 min 02 s", "3 min 10 s",
                                                                     "10 min", "1 h 05 min"]  # fmt: skip


async def test_the_progress_line_counts_while_the_run_goes_on():
    gate = asyncio.Event()
    screen = BandwidthScreen(simulated=True, run=events(stop_at="together", gate=gate))
    async with Host(screen).run_test(size=(120, 40)) as pilot:
        await pilot.pause(0.2)
        line = text(screen.query_one("#bw-progress", Static))
        assert "120/240 tests" in line and "sweeps 120/120 pairs 0/120" in line and "left" in line
        gate.set()
        await pilot.pause(0.2)
        assert "240/240 tests" in text(screen.query_one("#bw-progress", Static))
        assert isinstance(screen.report, Report)


async def test_b_shows_the_page_at_once_while_the_hosts_are_still_being_connected():
    from types import SimpleNamespace

    from screens.bwtest import open_bandwidth_page

    opened = asyncio.Event()

    class Engine:
        answers = SimpleNamespace(hosts=[SimpleNamespace(name=h) for h in HOSTS])
        demo, state_dir = True, None

        async def open(self):  # type: ignore[no-untyped-def]
            await opened.wait()  # the lab starting, sixteen connections: seconds on a busy machine
            raise RuntimeError("no lab in this test")

    class App_(Wizardish):
        def __init__(self) -> None:
            super().__init__(None)
            self.engine = Engine()

        def on_mount(self) -> None:
            open_bandwidth_page(self)

    async with App_().run_test(size=(160, 45)) as pilot:
        await pilot.pause()
        screen = pilot.app.screen
        assert isinstance(screen, BandwidthScreen), "on screen before any host answered"
        assert text(screen.query_one("#bw-phase", Static)).endswith("starting: connecting to 16 hosts…")
        opened.set()
        await pilot.pause(0.1)
        assert "stopped: no lab in this test" in text(screen.query_one("#bw-phase", Static)), "said, not hidden"


def test_the_runs_own_all_pairs_estimate_replaces_the_typical_pair_time_from_the_start():
    """16 hosts run 8 pairs side by side: 15 rounds of (3 s + setup) for 120 pairs, not 120 x 4.5 s."""
    now = [0.0]
    p = BwProgress(clock=lambda: now[0])
    p.plan({"alone": 0, "together": 120, "latency": 0, "nccl": 0}, {"together": 15 * 4.5})
    assert p.eta_s() == 15 * 4.5
    p.phase("together")
    now[0] += 4.0  # the first round is under way: 8 pairs at once, none finished yet
    assert p.eta_s() == 15 * 4.5, "not 120 x the 4 s the first round has taken so far"


def test_a_narrow_pane_keeps_every_chart_line_whole_and_the_pass_line():
    points = {1 << e: min(395.0, 2.0**e / 100) for e in range(1, 24)}
    for width, columns in ((80, 2), (56, 2), (40, 1)):
        lines = chart(points, top=400.0, unit="Gb/s", mark=360.0, width=width, note="").plain.split("\n")
        assert max(len(line) for line in lines) <= width, (width, lines)
        assert PASS_MARK in lines[1], "the pass line is drawn at any width"
        assert lines[-2].count("┬") == 6 and len(lines[-2]) == 5 + 23 * columns, (width, lines[-2])
    assert "pass 360" in chart(points, top=400.0, unit="Gb/s", mark=360.0, width=80).plain


async def test_tabs_of_tests_that_did_not_run_are_hidden_when_the_run_ends():
    report, evs = build()
    report.incast = []  # the "done" event carries this report: a run without incast rounds

    async def run(emit):  # type: ignore[no-untyped-def]
        for kind, data in evs:
            if kind != "incast":
                emit(kind, data)
        return report

    screen = BandwidthScreen(simulated=True, run=run)
    async with Host(screen).run_test(size=(120, 40)) as pilot:
        await pilot.pause(0.2)
        tabs = screen.query_one("#bw-tabs")
        assert not tabs.get_tab("tab-incast").display and tabs.get_tab("tab-sweeps").display
        await pilot.press("i")
        assert tabs.active == "tab-results", "i does nothing when no incast ran"
        assert "i incast" not in text(screen.query_one("#bw-phase", Static))


async def test_picking_another_page_in_the_sidebar_leaves_the_test_for_that_page():
    shown: list[str] = []
    screen = BandwidthScreen(simulated=True, run=events())
    app = Wizardish(screen)
    app.main = type("Main", (), {"show_page": lambda self, page: shown.append(page)})()  # type: ignore[attr-defined]
    async with app.run_test(size=(120, 40)) as pilot:
        await pilot.pause(0.2)
        screen.query_one(Sidebar).post_message(Sidebar.Jump("network"))
        await pilot.pause()
        assert pilot.app.screen is not screen and shown == ["network"]


async def test_leaving_the_page_while_the_test_runs_stops_the_test_and_says_so():
    """Escape mid-run: the run is cancelled with the page (its events must not reach widgets that are gone; that
    crashed the wizard with NoMatches) and a notice says how to run it again."""
    gate = asyncio.Event()
    screen = BandwidthScreen(simulated=True, run=events(stop_at="rails", gate=gate))
    async with Wizardish(screen).run_test(size=(120, 40)) as pilot:
        await pilot.pause(0.2)
        worker = next(w for w in pilot.app.workers if w.name == "bwtest")
        await pilot.press("escape")
        await pilot.pause(0.2)
        gate.set()  # the run would go on here, had it not been stopped
        await pilot.pause(0.2)
        assert pilot.app.screen is not screen
        assert worker.is_cancelled
        assert [n.message for n in pilot.app._notifications] == [
            "bandwidth test stopped: it ran on this page (B runs it again)"
        ]
