"""Live bandwidth test screen: Gb/s per message size per rail as it arrives, a results table, pass/fail per rail."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal, Vertical, VerticalScroll
from textual.screen import Screen
from textual.widgets import DataTable, Footer, Sparkline, Static

from wizard.validate.model import PASS_RATIO, Report

EventFn = Callable[[str, dict[str, Any]], None]
RunFn = Callable[[EventFn], Awaitable[Report]]


def default_run(answers: Any, executors: dict[str, Any], simulated: bool, options: Any = None) -> RunFn:
    """The real run: a Validation over the given executors."""

    async def run(emit: EventFn) -> Report:
        from wizard.validate.run import Validation

        return await Validation(answers, executors, simulated=simulated, options=options, on_event=emit).run()

    return run


def _bar(ratio: float | None, width: int = 20) -> str:
    """A share-of-line-rate bar with the 90 % pass mark: green above it, red below."""
    if ratio is None:
        return ""
    filled = max(0, min(width, round(ratio * width)))
    color = "green" if ratio >= PASS_RATIO else "red"
    return f"[{color}]{'█' * filled}[/][dim]{'░' * (width - filled)}[/] {ratio:.0%}"


class RailChart(Vertical):
    """One rail: its label with the latest rate, and a sparkline of Gb/s over the message sizes (or over time)."""

    DEFAULT_CSS = """
    RailChart { height: 4; }
    RailChart Sparkline { height: 2; }
    """

    def __init__(self, key: str, label: str) -> None:
        super().__init__(id=f"chart-{key}")
        self.label_text = label
        self.title = label
        self.values: list[float] = []

    def compose(self) -> ComposeResult:
        yield Static(self.title, classes="rail-label")
        yield Sparkline(self.values or [0.0], summary_function=max)

    def on_mount(self) -> None:
        self._show()

    def add(self, gbps: float, note: str) -> None:
        self.values.append(gbps)
        self.title = f"{self.label_text}  [b]{gbps:6.2f} Gb/s[/b] {note}"
        self._show()

    def finish(self, title: str) -> None:
        self.title = title
        self._show()

    def _show(self) -> None:
        # Rows can arrive before the chart's children are mounted: keep them and show them once it is.
        if not self.is_mounted or not self.children:
            return
        self.query_one(Sparkline).data = list(self.values or [0.0])
        self.query_one(".rail-label", Static).update(self.title)


class BandwidthScreen(Screen):
    """Runs the validation in an app-level worker and shows it live; ``run`` is injectable for tests."""

    BINDINGS = [Binding("escape", "app.pop_screen", "Back"), Binding("r", "rerun", "Run again")]
    DEFAULT_CSS = """
    BandwidthScreen #bw-phase { height: 1; background: $boost; }
    BandwidthScreen #bw-charts { width: 1fr; }
    BandwidthScreen #bw-table { width: 1fr; }
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
        self.report: Report | None = None
        self.rows_seen = 0  # result rows received so far (tests watch it grow while the run goes on)
        self._charts: dict[str, RailChart] = {}

    def compose(self) -> ComposeResult:
        tag = "SIMULATED cluster - " if self.simulated else ""
        yield Static(f"{tag}bandwidth test: starting", id="bw-phase")
        with Horizontal():
            yield VerticalScroll(id="bw-charts")
            yield DataTable(id="bw-table", zebra_stripes=True)
        yield Static("", id="bw-verdict")
        yield Footer()

    def on_mount(self) -> None:
        table = self.query_one("#bw-table", DataTable)
        table.add_columns("rail", "mode", "client -> server", "Gb/s", "line", "share", "status")
        self.start()

    def start(self) -> None:
        self.app.run_worker(self._work(), exclusive=True, group="bwtest", name="bwtest")

    def action_rerun(self) -> None:
        self.query_one("#bw-charts", VerticalScroll).remove_children()
        self._charts.clear()
        self.query_one("#bw-table", DataTable).clear()
        self.start()

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
        if kind == "phase":
            self._phase(data["text"])
        elif kind == "rail_start":
            self._chart(data["rail"], data["mode"], data["label"])
        elif kind == "row":
            self.rows_seen += 1
            chart = self._chart(data["rail"], data["mode"], f"rail {data['rail']}")
            chart.add(data["gbps"], f"@ {data['size']} B")
        elif kind == "rail":
            self._rail_done(data["result"])
        elif kind == "latency":
            x = data["result"]
            typical = f"{x.typical_us:.2f} us" if x.typical_us is not None else "-"
            self._row(f"{x.rail}", "latency", f"{x.client.host} -> {x.server.host}", typical, "", "", x.status)
        elif kind == "nccl":
            n = data["result"]
            chart = self._chart(0, "nccl", "all_reduce_perf busbw")
            for _size, gbytes in n.busbw:
                chart.values.append(gbytes)
            peak = f"{n.peak_busbw:.2f} GB/s" if n.peak_busbw is not None else "-"
            chart.finish(f"nccl     all_reduce_perf over {n.transport or '?'}: peak {peak}  {n.reason}")
            self._row("-", "nccl", f"transport {n.transport or '-'}", peak, "", "", n.status)
        elif kind == "done":
            self._done(data["report"])

    def _phase(self, text: str) -> None:
        tag = "SIMULATED cluster - " if self.simulated else ""
        self.query_one("#bw-phase", Static).update(f"{tag}{text}")

    def _chart(self, rail: int, mode: str, label: str) -> RailChart:
        key = f"{mode}-{rail}"
        if key not in self._charts:
            chart = RailChart(key, f"{mode:8} {label}")
            self._charts[key] = chart
            self.query_one("#bw-charts", VerticalScroll).mount(chart)
        return self._charts[key]

    def _rail_done(self, x: Any) -> None:
        chart = self._chart(x.rail, x.mode, x.label)
        verdict = "[green]PASS[/]" if x.status == "pass" else "[red]FAIL[/]"
        rate = f"{x.gbps:6.2f} Gb/s" if x.gbps is not None else "no result"
        chart.finish(f"{x.mode:8} {x.label}  [b]{rate}[/b] {_bar(x.ratio)} {verdict}")
        share = f"{x.ratio:.0%}" if x.ratio is not None else "-"
        line = f"{x.expected_gbps:.0f}" if x.expected_gbps else "-"
        gbps = f"{x.gbps:.2f}" if x.gbps is not None else "-"
        self._row(
            str(x.rail), x.mode, f"{x.client.host} {x.client.netdev} -> {x.server.host}", gbps, line, share, x.status
        )

    def _row(self, *cells: str) -> None:
        *rest, status = cells
        style = {"pass": "[green]PASS[/]", "fail": "[red]FAIL[/]", "warn": "[yellow]WARN[/]"}.get(status, status)
        self.query_one("#bw-table", DataTable).add_row(*rest, style)

    def _done(self, report: Report) -> None:
        self.report = report
        color = "green" if report.verdict == "pass" else "red"
        lines = [
            f"[b {color}]Verdict: {report.verdict.upper()}[/]  (a rail passes at >= {PASS_RATIO:.0%} of line rate)"
        ]
        lines += [
            f"  {a.hosts[0]} <-> {a.hosts[1]}: {a.gbps:.1f} of {a.expected_gbps:.0f} Gb/s all rails together"
            for a in report.aggregate
        ]
        bad = [i for i in report.lint if i.status != "pass"]
        lines.append(f"  lint: {len(report.lint) - len(bad)}/{len(report.lint)} pass")
        lines += [f"  cause {n}: {c}" for n, c in enumerate(report.causes[:6], 1)]
        self.query_one("#bw-verdict", Static).update("\n".join(lines))
        self._phase(f"done: {report.verdict.upper()}")
