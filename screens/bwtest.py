"""Live bandwidth test page: overall progress and ETA, the all-pairs heat map per rail, every pair's sweep charts
with their pass line, incast rounds and results. Shown with the app's header and sidebar, like the other pages."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal, Vertical, VerticalScroll
from textual.screen import Screen
from textual.widgets import DataTable, Header, Label, Static, TabbedContent, TabPane

from screens.bw_progress import BwProgress
from screens.bw_results import NCCL_OFF, cross_text, verdict_text
from screens.fleet_view import FleetView
from screens.footer import KeyFooter
from screens.heatmap import HeatMap
from screens.incast_view import IncastView
from screens.sidebar import Sidebar
from screens.sweeps_view import SweepsView
from wizard.validate.model import RailResult, Report

EventFn = Callable[[str, dict[str, Any]], None]
RunFn = Callable[[EventFn], Awaitable[Report]]
ConnectFn = Callable[[], Awaitable[dict[str, Any]]]
# The tab each phase of the run fills, shown while the operator has not picked one.
PHASE_TAB = {"rails": "tab-sweeps", "together": "tab-matrix", "incast": "tab-incast", "cross_rail": "tab-matrix"}
SWEPT = ("alone",)  # modes whose rows are a message-size sweep (together and cross runs are timed, one size)


def default_run(answers: Any, executors: dict[str, Any] | ConnectFn, simulated: bool, options: Any = None) -> RunFn:
    """The real run: a Validation over the given executors (or those ``executors()`` connects, once the page
    is up: starting the lab or connecting hundreds of hosts takes seconds the operator should see pass)."""

    async def run(emit: EventFn) -> Report:
        from wizard.validate.run import Validation

        connected = executors
        if callable(connected):
            emit("phase", {"name": "connect", "text": f"starting: connecting to {len(answers.hosts)} hosts…"})
            connected = await connected()
        return await Validation(answers, connected, simulated=simulated, options=options, on_event=emit).run()

    return run


def open_bandwidth_page(app: Any) -> None:
    """The wizard's `B`: the page shows at once and connects to the hosts itself (a session of its own, closed
    when the page is left)."""
    engine = app.engine
    screen: BandwidthScreen

    async def connect() -> dict[str, Any]:
        session = await engine.open()
        screen.session = session
        return dict(session.executors)

    answers = engine.answers
    screen = BandwidthScreen(answers, connect, simulated=engine.demo, state_dir=engine.state_dir,
                             options=fleet_options(answers))  # fmt: skip
    app.push_screen(screen)


FLEET_HOSTS = 16  # more hosts than this: the page runs bwtest --quick (all pairs at 1,000 hosts is 999 rounds)


def fleet_options(answers: Any) -> Any:
    """Above FLEET_HOSTS hosts: the quick fleet schedule, suspects and coverage, no sweeps, latency or NCCL."""
    if len(getattr(answers, "hosts", None) or []) <= FLEET_HOSTS:
        return None
    from wizard.validate.run import Options

    return Options(quick=True, sweep=False, latency=False, nccl=False)


class BandwidthScreen(Screen):
    """Runs the validation in an app-level worker and shows it live; ``run`` is injectable for tests. On the
    wizard's app the page keeps its header, banner and sidebar; on any other app it stands alone."""

    BINDINGS = [
        Binding("escape", "leave", "Back"),
        Binding("r", "rerun", "Run again"),
        Binding("right_square_bracket", "rail(1)", "Next rail", key_display="]"),
        Binding("left_square_bracket", "rail(-1)", "Prev rail", key_display="["),
        Binding("a", "all_rails", "All rails"),
        Binding("p", "pair(1)", "Next pair"),
        Binding("P", "pair(-1)", "Prev pair", show=False),
        Binding("m", "tab('tab-matrix')", "Matrix", show=False),
        Binding("s", "tab('tab-sweeps')", "Sweeps", show=False),
        Binding("i", "tab('tab-incast')", "Incast", show=False),
        Binding("t", "tab('tab-results')", "Results", show=False),
        Binding("f", "tab('tab-fleet')", "Fleet", show=False),
    ]
    DEFAULT_CSS = """
    BandwidthScreen #bw-page { width: 1fr; height: 100%; padding: 0 1; }
    BandwidthScreen #bw-phase { height: auto; max-height: 2; background: $boost; }
    BandwidthScreen #bw-progress { height: 1; }
    BandwidthScreen #bw-tabs { height: 1fr; }
    BandwidthScreen #bw-tabs > ContentSwitcher { height: 1fr; }
    BandwidthScreen TabPane { padding: 0; height: 1fr; }
    BandwidthScreen #bw-matrix { scrollbar-size: 1 1; }
    BandwidthScreen #bw-cross { height: auto; padding: 0 1; }
    BandwidthScreen #bw-table { height: 1fr; }
    BandwidthScreen #bw-verdict { height: auto; max-height: 12; padding: 0 1; }
    """

    def __init__(
        self,
        answers: Any = None,
        executors: dict[str, Any] | ConnectFn | None = None,
        *,
        simulated: bool = False,
        options: Any = None,
        state_dir: Path | None = None,
        run: RunFn | None = None,
    ) -> None:
        super().__init__()
        self.simulated = simulated
        self.state_dir = state_dir
        self.options = options
        self._run_fn = run or default_run(answers, executors or {}, simulated, options)
        self._hosts = [h.name for h in getattr(answers, "hosts", None) or []]
        self.report: Report | None = None
        self.session: Any = None  # the connections open_bandwidth_page made: closed when the page goes
        self.rows_seen = 0  # result rows received so far (tests watch it grow while the run goes on)
        self.progress = BwProgress()
        self._cross: dict[tuple[str, str], dict[tuple[int, int], tuple[float | None, float | None]]] = {}
        self._follow = True  # the page follows the run's phases until the operator picks a tab
        self._nccl_seen = False
        self.fleet = bool(options is not None and getattr(options, "quick", False))

    def _wizard(self) -> Any:
        """The wizard's app when this page runs in it (it has pages and progress), else None."""
        app = self.app
        return app if hasattr(app, "pages") and hasattr(app, "progress") else None

    def compose(self) -> ComposeResult:
        wizard = self._wizard()
        yield Header()
        if self.simulated:
            yield Label("SIMULATED CLUSTER · hosts run on 127.0.0.1 · nothing real is changed", classes="sim-banner")
        with Horizontal():
            if wizard is not None:
                yield Sidebar(wizard.pages(), id="sidebar")
            with Vertical(id="bw-page"):
                yield Static(self._tag() + self._starting(), id="bw-phase")
                yield Static("", id="bw-progress")
                with TabbedContent(initial="tab-fleet" if self.fleet else "tab-sweeps", id="bw-tabs"):
                    with TabPane("Fleet", id="tab-fleet"):
                        yield FleetView()
                    with TabPane("Matrix", id="tab-matrix"), VerticalScroll(id="bw-matrix"):
                        yield HeatMap(self._hosts, id="bw-heat")
                        yield Static("", id="bw-cross")
                    with TabPane("Sweeps", id="tab-sweeps"):
                        yield SweepsView()
                    with TabPane("Incast", id="tab-incast"):
                        yield IncastView()
                    with TabPane("Results", id="tab-results"):
                        yield DataTable(id="bw-table", zebra_stripes=True)
                        yield Static("", id="bw-verdict")
        yield KeyFooter()

    def _tag(self) -> str:
        return "bandwidth test · " + ("SIMULATED cluster - " if self.simulated else "")

    def _starting(self) -> str:
        n = len(self._hosts)
        return f"starting: facts and lint on {n} hosts…" if n else "starting…"

    def on_mount(self) -> None:
        wizard = self._wizard()
        if wizard is not None:
            sidebar = self.query_one(Sidebar)
            reports = getattr(wizard, "conn_reports", {})
            sidebar.show(wizard.progress, wizard.titles(), all(r.ok for r in reports.values()) if reports else None)
            sidebar.select_page("summary")  # the bandwidth test is the summary's `B`
        tabs = self.query_one("#bw-tabs", TabbedContent)
        tabs.hide_tab("tab-matrix" if self.fleet else "tab-fleet")  # a fleet: the Fleet tab, not a host x host map
        table = self.query_one("#bw-table", DataTable)
        table.add_columns("rail", "mode", "client -> server", "Gb/s", "line", "share", "status")
        self._show_progress()
        self.set_interval(1.0, self._show_progress)  # the ETA counts down between results
        self.start()

    async def on_unmount(self) -> None:
        if self.session is not None:
            session, self.session = self.session, None
            await session.close()

    def start(self) -> None:
        self.progress = BwProgress()
        self._nccl_seen = False
        # The screen's own worker: leaving the page cancels it with the page, so no event of the run reaches widgets
        # that are gone (an app worker outlived the page and crashed the wizard on its next event). The remote
        # perftest processes end by themselves: each runs under `timeout` (wizard/validate/perftest.py).
        self.run_worker(self._work(), exclusive=True, group="bwtest", name="bwtest")

    def _leave(self) -> None:
        if any(w.name == "bwtest" and w.is_running for w in self.workers):
            self.notify("bandwidth test stopped: it ran on this page (B runs it again)", timeout=6)
        self.app.pop_screen()

    # -- keys -------------------------------------------------------------------------------------------------
    def action_leave(self) -> None:
        self._leave()

    def on_sidebar_jump(self, event: Sidebar.Jump) -> None:
        """Another page picked in the sidebar: leave this one and go there (a finished test's results are saved, a
        running one stops)."""
        event.stop()
        main = getattr(self.app, "main", None)
        self._leave()
        if main is not None and hasattr(main, "show_page"):
            main.show_page(event.page)

    def action_rerun(self) -> None:
        self._cross.clear()
        self.query_one("#bw-cross", Static).update("")
        self.query_one(HeatMap).clear()
        self.query_one(IncastView).clear()
        self.query_one(SweepsView).clear()
        self.query_one("#bw-table", DataTable).clear()
        self.start()

    def action_rail(self, step: int) -> None:
        self.query_one(HeatMap).cycle(step)
        self._show_tab("tab-matrix", user=True)

    def action_all_rails(self) -> None:
        self.query_one(HeatMap).rail = None
        self._show_tab("tab-matrix", user=True)

    def action_pair(self, step: int) -> None:
        """Next/previous host pair's sweeps (the first choice follows the run)."""
        self.query_one(SweepsView).step(step)
        self._show_tab("tab-sweeps", user=True)

    def action_tab(self, tab: str) -> None:
        if self.query_one("#bw-tabs", TabbedContent).get_tab(tab).display:  # hidden: that test did not run
            self._show_tab(tab, user=True)

    def _show_tab(self, tab: str, *, user: bool = False) -> None:
        if user:
            self._follow = False
        if user or self._follow:
            self.query_one("#bw-tabs", TabbedContent).active = tab

    async def _work(self) -> None:
        try:
            self.report = await self._run_fn(self.on_validation_event)
        except Exception as exc:  # noqa: BLE001 - shown to the operator, the screen stays usable
            self._phase(f"stopped: {exc}")
            return
        if self.state_dir is not None:
            from wizard.validate import store

            store.save(self.state_dir, self.report)

    # -- events from the engine (same event loop: widgets can be updated directly) ------------------------
    def on_validation_event(self, kind: str, data: dict[str, Any]) -> None:
        heat, sweeps, progress = self.query_one(HeatMap), self.query_one(SweepsView), self.progress
        if kind == "phase":
            progress.phase(data.get("name", ""))
            self._phase(self._phase_text(data))
            if data.get("name") in PHASE_TAB and not self.fleet:
                self._show_tab(PHASE_TAB[data["name"]])
        elif kind == "lint":
            bad = sum(i.status != "pass" for i in data["items"])
            self._phase(f"lint: {len(data['items']) - bad}/{len(data['items'])} pass; planning the tests")
        elif kind == "plan":
            progress.plan(data["tests"], data.get("seconds"))
        elif kind == "estimate" and data.get("phase", "together") == "together":
            heat.estimate(data.get("rounds", 0), data.get("pairs", 0))
            progress.estimate(data.get("pairs", 0), data.get("seconds", 0.0))
        elif kind == "rail_start" and not self.fleet:  # a fleet's Fleet tab replaces the host x host map
            heat.add_hosts(data.get("pair") or ())
            if data["mode"] in SWEPT:
                a, b = data["pair"]
                sweeps.start(data["rail"], (b, a), data["label"])  # the engine's pair is (server, client)
        elif kind == "row":
            self.rows_seen += 1
            if data["mode"] in SWEPT:
                a, b = data["pair"]
                sweeps.add(data["rail"], (b, a), data["size"], data["gbps"])
        elif kind == "rail":
            self._rail_done(data["result"])
        elif kind == "cell":
            if not self.fleet:
                heat.add(data["cell"])
            progress.finished("together")
        elif kind == "incast":
            self.query_one(IncastView).add(data["round"])
            self._show_tab("tab-incast")
        elif kind == "latency":
            x = data["result"]
            progress.finished("latency")
            typical = f"{x.typical_us:.2f} us" if x.typical_us is not None else "-"
            self._row(f"{x.rail}", "latency", f"{x.client.host} -> {x.server.host}", typical, "", "", x.status)
        elif kind == "nccl":
            progress.finished("nccl")
            self._nccl(data["result"])
        elif kind == "done":
            progress.end()
            self._done(data["report"])
        self._show_progress()

    def _phase_text(self, data: dict[str, Any]) -> str:
        """The engine's phase line; the first one names every host, so here it says how many."""
        if data.get("name") == "probe":
            return f"starting: facts and lint on {len(self._hosts) or 'the'} hosts…"
        return str(data.get("text", ""))

    def _phase(self, text: str) -> None:
        self.query_one("#bw-phase", Static).update(f"{self._tag()}{text}")

    def _show_progress(self) -> None:
        self.query_one("#bw-progress", Static).update(self.progress.line())

    def _rail_done(self, x: RailResult) -> None:
        if x.mode == "together" and not self.fleet:
            self.query_one(HeatMap).expect(x.server.host, x.client.host, x.rail, x.expected_gbps)
        elif x.mode == "cross":
            self._cross_done(x)
        if x.mode in SWEPT:
            self.progress.finished("alone")
            self.query_one(SweepsView).finish(x)
        share = f"{x.ratio:.0%}" if x.ratio is not None else "-"
        line = f"{x.expected_gbps:.0f}" if x.expected_gbps else "-"
        gbps = f"{x.gbps:.2f}" if x.gbps is not None else "-"
        rail = f"{x.rail}->{x.peer_rail}" if x.mode == "cross" else str(x.rail)
        self._row(rail, x.mode, f"{x.client.host} {x.client.netdev} -> {x.server.host}", gbps, line, share, x.status)

    def _cross_done(self, x: RailResult) -> None:
        """Rail x rail of each pair (client rail down, server rail across): the paths through the spine."""
        peer = x.peer_rail if x.peer_rail is not None else x.rail
        self._cross.setdefault((x.client.host, x.server.host), {})[(x.rail, peer)] = (x.gbps, x.expected_gbps)
        self.query_one("#bw-cross", Static).update(cross_text(self._cross))

    def _nccl(self, n: Any) -> None:
        self._nccl_seen = True
        self.query_one(SweepsView).nccl(n)
        peak = f"{n.peak_busbw:.2f} GB/s" if n.peak_busbw is not None else "-"
        self._row("-", "nccl", f"transport {n.transport or '-'}", peak, "", "", n.status)

    def _row(self, *cells: str) -> None:
        *rest, status = cells
        style = {"pass": "[green]PASS[/]", "fail": "[red]FAIL[/]", "warn": "[yellow]WARN[/]"}.get(status, status)
        self.query_one("#bw-table", DataTable).add_row(*rest, style)

    def _done(self, report: Report) -> None:
        self.report = report
        if not self.fleet:
            heat = self.query_one(HeatMap)
            heat.add_hosts(report.hosts)
            for cell in report.matrix:  # a run that sent no cell events still fills the map
                if frozenset((cell.a, cell.b)) not in heat.cells:
                    heat.add(cell)
        if report.fleet is not None:
            self.query_one(FleetView).show(report)
        if not self._nccl_seen:  # NCCL was not asked for: its chart and row stay away, one line says so
            self.query_one(SweepsView).nccl_not_run(report.nccl.reason or NCCL_OFF)
        self.query_one("#bw-verdict", Static).update(verdict_text(report, nccl_seen=self._nccl_seen))
        # What did not run is not offered: no Incast tab without incast rounds, no Sweeps tab without a sweep.
        tabs = self.query_one("#bw-tabs", TabbedContent)
        shown = {"tab-incast": bool(report.incast), "tab-sweeps": bool(report.rails or report.nccl.busbw),
                 "tab-fleet": report.fleet is not None, "tab-matrix": not self.fleet}  # fmt: skip
        for tab, ran in shown.items():
            (tabs.show_tab if ran else tabs.hide_tab)(tab)
        keys = [*(["f fleet"] if shown["tab-fleet"] else []), *(["m matrix"] if shown["tab-matrix"] else []),
                *(["s sweeps"] if shown["tab-sweeps"] else []),
                *(["i incast"] if shown["tab-incast"] else []), "t results"]  # fmt: skip
        self._phase(f"done: {report.verdict.upper()} ({', '.join(keys)})")
        self._show_tab("tab-fleet" if report.fleet is not None else "tab-results")
