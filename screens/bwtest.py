"""Live bandwidth test page: the all-pairs heat map per rail, sweep charts with axes, incast rounds and results."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import VerticalScroll
from textual.screen import Screen
from textual.widgets import DataTable, Footer, Static, TabbedContent, TabPane

from screens.heatmap import HeatMap, grid
from screens.incast_view import IncastView
from screens.sweepchart import SweepChart, size_label
from wizard.validate.model import PASS_RATIO, RailResult, Report

EventFn = Callable[[str, dict[str, Any]], None]
RunFn = Callable[[EventFn], Awaitable[Report]]
# The tab each phase of the run fills, shown while the operator has not picked one.
PHASE_TAB = {"rails": "tab-sweeps", "together": "tab-matrix", "incast": "tab-incast", "cross_rail": "tab-matrix"}
SWEPT = ("alone",)  # modes whose rows are a message-size sweep (together and cross runs are timed, one size)


def default_run(answers: Any, executors: dict[str, Any], simulated: bool, options: Any = None) -> RunFn:
    """The real run: a Validation over the given executors."""

    async def run(emit: EventFn) -> Report:
        from wizard.validate.run import Validation

        return await Validation(answers, executors, simulated=simulated, options=options, on_event=emit).run()

    return run


class BandwidthScreen(Screen):
    """Runs the validation in an app-level worker and shows it live; ``run`` is injectable for tests."""

    BINDINGS = [
        Binding("escape", "app.pop_screen", "Back"),
        Binding("r", "rerun", "Run again"),
        Binding("right_square_bracket", "rail(1)", "Next rail", key_display="]"),
        Binding("left_square_bracket", "rail(-1)", "Prev rail", key_display="["),
        Binding("a", "all_rails", "All rails"),
        Binding("m", "tab('tab-matrix')", "Matrix", show=False),
        Binding("s", "tab('tab-sweeps')", "Sweeps", show=False),
        Binding("i", "tab('tab-incast')", "Incast", show=False),
        Binding("t", "tab('tab-results')", "Results", show=False),
    ]
    DEFAULT_CSS = """
    BandwidthScreen #bw-phase { height: 1; background: $boost; }
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
        executors: dict[str, Any] | None = None,
        *,
        simulated: bool = False,
        options: Any = None,
        state_dir: Path | None = None,
        run: RunFn | None = None,
    ) -> None:
        super().__init__()
        self.simulated = simulated
        self.state_dir = state_dir
        self._run_fn = run or default_run(answers, executors or {}, simulated, options)
        self._hosts = [h.name for h in getattr(answers, "hosts", None) or []]
        self.report: Report | None = None
        self.rows_seen = 0  # result rows received so far (tests watch it grow while the run goes on)
        self._charts: dict[str, SweepChart] = {}
        self._lines: dict[int, float] = {}  # line rate per rail seen so far: the y axis top of the next sweep
        self._cross: dict[tuple[str, str], dict[tuple[int, int], tuple[float | None, float | None]]] = {}
        self._follow = True  # the page follows the run's phases until the operator picks a tab

    def compose(self) -> ComposeResult:
        tag = "SIMULATED cluster - " if self.simulated else ""
        yield Static(f"{tag}bandwidth test: starting", id="bw-phase")
        with TabbedContent(initial="tab-sweeps", id="bw-tabs"):
            with TabPane("Matrix", id="tab-matrix"), VerticalScroll(id="bw-matrix"):
                yield HeatMap(self._hosts, id="bw-heat")
                yield Static("", id="bw-cross")
            with TabPane("Sweeps", id="tab-sweeps"):
                yield VerticalScroll(id="bw-charts")
            with TabPane("Incast", id="tab-incast"):
                yield IncastView()
            with TabPane("Results", id="tab-results"):
                yield DataTable(id="bw-table", zebra_stripes=True)
                yield Static("", id="bw-verdict")
        yield Footer()

    def on_mount(self) -> None:
        table = self.query_one("#bw-table", DataTable)
        table.add_columns("rail", "mode", "client -> server", "Gb/s", "line", "share", "status")
        self.start()

    def start(self) -> None:
        self.app.run_worker(self._work(), exclusive=True, group="bwtest", name="bwtest")

    # -- keys -------------------------------------------------------------------------------------------------
    def action_rerun(self) -> None:
        self.query_one("#bw-charts", VerticalScroll).remove_children()
        self._charts.clear()
        self._cross.clear()
        self.query_one("#bw-cross", Static).update("")
        self.query_one(HeatMap).clear()
        self.query_one(IncastView).clear()
        self.query_one("#bw-table", DataTable).clear()
        self.start()

    def action_rail(self, step: int) -> None:
        self.query_one(HeatMap).cycle(step)
        self._show_tab("tab-matrix", user=True)

    def action_all_rails(self) -> None:
        self.query_one(HeatMap).rail = None
        self._show_tab("tab-matrix", user=True)

    def action_tab(self, tab: str) -> None:
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
        heat = self.query_one(HeatMap)
        if kind == "phase":
            self._phase(data["text"])
            if data.get("name") in PHASE_TAB:
                self._show_tab(PHASE_TAB[data["name"]])
        elif kind == "estimate" and data.get("phase", "together") == "together":
            heat.estimate(data.get("rounds", 0), data.get("pairs", 0))
        elif kind == "rail_start":
            heat.add_hosts(data.get("pair") or ())
            if data["mode"] in SWEPT:
                self._chart(data["rail"], data["mode"]).start(data["label"])
        elif kind == "row":
            self.rows_seen += 1
            if data["mode"] in SWEPT:
                self._chart(data["rail"], data["mode"]).add(data["size"], data["gbps"], f"@ {size_label(data['size'])}")
        elif kind == "rail":
            self._rail_done(data["result"])
        elif kind == "cell":
            heat.add(data["cell"])
        elif kind == "incast":
            self.query_one(IncastView).add(data["round"])
            self._show_tab("tab-incast")
        elif kind == "latency":
            x = data["result"]
            typical = f"{x.typical_us:.2f} us" if x.typical_us is not None else "-"
            self._row(f"{x.rail}", "latency", f"{x.client.host} -> {x.server.host}", typical, "", "", x.status)
        elif kind == "nccl":
            self._nccl(data["result"])
        elif kind == "done":
            self._done(data["report"])

    def _phase(self, text: str) -> None:
        tag = "SIMULATED cluster - " if self.simulated else ""
        self.query_one("#bw-phase", Static).update(f"{tag}{text}")

    def _chart(self, rail: int, mode: str, unit: str = "Gb/s") -> SweepChart:
        key = f"{mode}-{rail}"
        if key not in self._charts:
            chart = SweepChart(key, f"{mode} rail {rail}", unit=unit)
            chart.top = self._lines.get(rail) if unit == "Gb/s" else None
            self._charts[key] = chart
            self.query_one("#bw-charts", VerticalScroll).mount(chart)
        return self._charts[key]

    def _rail_done(self, x: RailResult) -> None:
        if x.expected_gbps:
            self._lines.setdefault(x.rail, x.expected_gbps)
        if x.mode == "together":
            self.query_one(HeatMap).expect(x.server.host, x.client.host, x.rail, x.expected_gbps)
        elif x.mode == "cross":
            self._cross_done(x)
        if x.mode in SWEPT:
            chart = self._chart(x.rail, x.mode)
            verdict = "[green]PASS[/]" if x.status == "pass" else "[red]FAIL[/]"
            rate = f"{x.gbps:.1f} Gb/s" if x.gbps is not None else "no result"
            share = f" {x.ratio:.0%}" if x.ratio is not None else ""
            chart.finish(f"{x.label}  [b]{rate}[/b]{share} {verdict}", top=x.expected_gbps, ok=x.status == "pass")
        share = f"{x.ratio:.0%}" if x.ratio is not None else "-"
        line = f"{x.expected_gbps:.0f}" if x.expected_gbps else "-"
        gbps = f"{x.gbps:.2f}" if x.gbps is not None else "-"
        rail = f"{x.rail}->{x.peer_rail}" if x.mode == "cross" else str(x.rail)
        self._row(rail, x.mode, f"{x.client.host} {x.client.netdev} -> {x.server.host}", gbps, line, share, x.status)

    def _cross_done(self, x: RailResult) -> None:
        """Rail x rail of each pair (client rail down, server rail across): the paths through the spine."""
        peer = x.peer_rail if x.peer_rail is not None else x.rail
        self._cross.setdefault((x.client.host, x.server.host), {})[(x.rail, peer)] = (x.gbps, x.expected_gbps)
        out = Text()
        for (client, server), cells in self._cross.items():
            n = max(max(i, j) for i, j in cells) + 1
            names = [f"rail {i}" for i in range(n)]
            title = f"cross-rail {client} (rows: its rail) -> {server} (columns: its rail), % of line rate"
            out.append(f"\n{title}\n", "bold")
            # Rail i to rail i is the per-rail test, not a path through the spine: the diagonal stays blank.
            out.append_text(grid(names, names, lambda a, b, c=cells: c.get((int(a[5:]), int(b[5:]))), diagonal=True))
        self.query_one("#bw-cross", Static).update(out)

    def _nccl(self, n: Any) -> None:
        chart = self._chart(0, "nccl", unit="GB/s")
        for size, gbytes in n.busbw:
            chart.add(size, gbytes)
        peak = f"{n.peak_busbw:.2f} GB/s" if n.peak_busbw is not None else "-"
        chart.finish(f"nccl     all_reduce_perf busbw over {n.transport or '?'}: peak {peak}  {n.reason}")
        self._row("-", "nccl", f"transport {n.transport or '-'}", peak, "", "", n.status)

    def _row(self, *cells: str) -> None:
        *rest, status = cells
        style = {"pass": "[green]PASS[/]", "fail": "[red]FAIL[/]", "warn": "[yellow]WARN[/]"}.get(status, status)
        self.query_one("#bw-table", DataTable).add_row(*rest, style)

    def _done(self, report: Report) -> None:
        self.report = report
        heat = self.query_one(HeatMap)
        heat.add_hosts(report.hosts)
        for cell in report.matrix:  # a run that sent no cell events still fills the map
            if frozenset((cell.a, cell.b)) not in heat.cells:
                heat.add(cell)
        color = "green" if report.verdict == "pass" else "red"
        lines = [
            f"[b {color}]Verdict: {report.verdict.upper()}[/]  (a rail passes at >= {PASS_RATIO:.0%} of line rate)"
        ]
        if len(report.aggregate) <= 4:
            lines += [
                f"  {a.hosts[0]} <-> {a.hosts[1]}: {a.gbps:.1f} of {a.expected_gbps:.0f} Gb/s all rails together"
                for a in report.aggregate
            ]
        else:  # the matrix tab shows every pair; here only how many failed
            slow = sum(a.status != "pass" for a in report.aggregate)
            lines.append(f"  all rails together: {len(report.aggregate)} host pairs, {slow} below the pass mark (m)")
        if report.incast:
            bad = sum(x.status == "fail" for x in report.incast)
            lines.append(f"  incast: {len(report.incast) - bad}/{len(report.incast)} rounds pass (Incast tab)")
        bad = [i for i in report.lint if i.status != "pass"]
        lines.append(f"  lint: {len(report.lint) - len(bad)}/{len(report.lint)} pass")
        lines += [f"  cause {n}: {c}" for n, c in enumerate(report.causes[:6], 1)]
        self.query_one("#bw-verdict", Static).update("\n".join(lines))
        self._phase(f"done: {report.verdict.upper()} (m matrix, s sweeps, i incast, t results)")
        self._show_tab("tab-results")
