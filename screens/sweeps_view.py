"""The Sweeps tab of the bandwidth page: one chart per rail for the host pair picked (or, while the run goes on,
each rail's latest sweep), every pair's sweeps kept to pick from, and NCCL's chart only when NCCL ran."""

from __future__ import annotations

from rich.markup import escape
from textual.app import ComposeResult
from textual.containers import Horizontal, Vertical, VerticalScroll
from textual.widgets import Label, Select, Static

from screens.sweepchart import Sweep, SweepChart, size_label
from wizard.validate.model import NcclResult, RailResult

Pair = tuple[str, str]  # (client host, server host): the direction the sweep ran
FOLLOW = "latest"  # the picker's first choice: each rail's latest sweep, following the run


def pair_label(pair: Pair) -> str:
    return f"{pair[0]} -> {pair[1]}"


class SweepsView(Vertical):
    """Keeps every pair's sweeps; ``pair`` None follows the run, else that pair's rails are shown."""

    DEFAULT_CSS = """
    SweepsView #bw-pairbar { height: 1; }
    SweepsView #bw-pair { width: 44; }
    SweepsView #bw-charts { height: 1fr; }
    SweepsView #bw-nccl { height: auto; padding: 0 1; }
    """

    def __init__(self) -> None:
        super().__init__(id="bw-sweeps-view")
        self.by_pair: dict[Pair, dict[int, Sweep]] = {}
        self.latest: dict[int, Sweep] = {}
        self.lines: dict[int, float] = {}  # line rate per rail seen so far: the y axis top of the next sweep
        self.pair: Pair | None = None
        self._syncing = False  # the picker is being set from code: its Changed event is not the operator's

    def compose(self) -> ComposeResult:
        with Horizontal(id="bw-pairbar"):
            yield Select([("latest sweep of each rail (live)", FOLLOW)], value=FOLLOW, allow_blank=False,
                         compact=True, id="bw-pair")  # fmt: skip
            yield Label("  p/P: other pair", classes="hint")
        with VerticalScroll(id="bw-charts"):
            yield Static("", id="bw-nccl")

    # -- data from the run ----------------------------------------------------------------------------------------
    def start(self, rail: int, pair: Pair, label: str) -> None:
        sweep = Sweep(label, top=self.lines.get(rail))
        self._store(rail, pair, sweep)

    def add(self, rail: int, pair: Pair, size: int, rate: float, unit: str = "Gb/s") -> None:
        sweep = self.by_pair.get(pair, {}).get(rail)
        if sweep is None:  # a row without its start (a run replayed in part): a sweep of its own
            sweep = Sweep(f"rail {rail}: {pair_label(pair)}", top=self.lines.get(rail))
            self._store(rail, pair, sweep)
        sweep.points[size] = rate
        sweep.title = f"{sweep.label}  [b]{rate:.2f} {unit}[/b] @ {size_label(size)}"
        self._redraw(rail, sweep)

    def finish(self, x: RailResult) -> None:
        if x.expected_gbps:
            self.lines.setdefault(x.rail, x.expected_gbps)
        pair = (x.client.host, x.server.host)
        sweep = self.by_pair.get(pair, {}).get(x.rail)
        if sweep is None:
            sweep = Sweep(x.label)
            self._store(x.rail, pair, sweep)
        verdict = "[green]PASS[/]" if x.status == "pass" else "[red]FAIL[/]"
        rate = f"{x.gbps:.1f} Gb/s" if x.gbps is not None else "no result"
        share = f" {x.ratio:.0%}" if x.ratio is not None else ""
        sweep.title = f"{x.label}  [b]{rate}[/b]{share} {verdict}"
        sweep.top = x.expected_gbps or sweep.top
        sweep.color = "green3" if x.status == "pass" else "red3"
        self._redraw(x.rail, sweep)

    def nccl(self, n: NcclResult) -> None:
        """NCCL's bus bandwidth by size when it ran; else one line saying it did not, and why."""
        note = self.query_one("#bw-nccl", Static)
        if not n.busbw:
            why = n.reason or "no result"
            note.update(f"[b]NCCL all_reduce_perf[/b]: did not run ({n.status.upper()}): {escape(why)}")
            return
        chart = SweepChart("nccl-0", "nccl", unit="GB/s")
        peak = f"{n.peak_busbw:.2f} GB/s" if n.peak_busbw is not None else "-"
        title = f"NCCL all_reduce_perf busbw over {escape(n.transport or '?')}: peak [b]{peak}[/b]  {escape(n.reason)}"
        chart.show(Sweep("nccl", points=dict(n.busbw), title=title, graded=False))
        self.query_one("#bw-charts", VerticalScroll).mount(chart, before=note)
        note.update("")

    def nccl_not_run(self, why: str) -> None:
        note = self.query_one("#bw-nccl", Static)
        if not self.query("#chart-nccl-0") and not str(note.render()):
            note.update(f"[b]NCCL all_reduce_perf[/b]: not run in this test ({escape(why)})")

    def clear(self) -> None:
        self.by_pair.clear()
        self.latest.clear()
        self.pair = None
        for chart in self.query(SweepChart):
            chart.remove()
        self.query_one("#bw-nccl", Static).update("")
        self._sync_picker()

    # -- the pair shown -------------------------------------------------------------------------------------------
    @property
    def pairs(self) -> list[Pair]:
        return list(self.by_pair)

    def show_pair(self, pair: Pair | None) -> None:
        """Show one pair's sweep on every rail (a rail it has not run yet says so); None follows the run."""
        self.pair = pair
        for chart in self.query(SweepChart):
            if chart.id and chart.id.startswith("chart-alone-"):
                rail = int(chart.id.removeprefix("chart-alone-"))
                chart.show(self._shown(rail))
        self._sync_picker()

    def step(self, delta: int) -> None:
        views: list[Pair | None] = [None, *self.by_pair]
        index = views.index(self.pair) if self.pair in views else 0
        self.show_pair(views[(index + delta) % len(views)])

    def _shown(self, rail: int) -> Sweep:
        if self.pair is None:
            return self.latest.get(rail) or Sweep(f"rail {rail}: waiting for its first sweep")
        found = self.by_pair.get(self.pair, {}).get(rail)
        return found or Sweep(f"rail {rail}: {pair_label(self.pair)} not swept (yet) on this rail",
                              top=self.lines.get(rail))  # fmt: skip

    def _store(self, rail: int, pair: Pair, sweep: Sweep) -> None:
        new_pair = pair not in self.by_pair
        self.by_pair.setdefault(pair, {})[rail] = sweep
        self.latest[rail] = sweep
        self._chart(rail)
        self._redraw(rail, sweep)
        if new_pair:
            self._sync_picker()

    def _chart(self, rail: int) -> SweepChart:
        found = self.query(f"#chart-alone-{rail}")
        if found:
            return found.first(SweepChart)
        chart = SweepChart(f"alone-{rail}", f"rail {rail}")
        later = [c for c in self.query(SweepChart) if c.id and c.id.startswith("chart-alone-")
                 and int(c.id.removeprefix("chart-alone-")) > rail]  # fmt: skip
        scroll = self.query_one("#bw-charts", VerticalScroll)
        scroll.mount(chart, before=later[0] if later else scroll.query_one("#bw-nccl"))
        return chart

    def _redraw(self, rail: int, sweep: Sweep) -> None:
        """Redraw the rail's chart if it shows this sweep."""
        if self._shown(rail) is sweep:
            self._chart(rail).show(sweep)

    def _sync_picker(self) -> None:
        select = self.query_one("#bw-pair", Select)
        options = [("latest sweep of each rail (live)", FOLLOW)]
        options += [(pair_label(p), "|".join(p)) for p in self.by_pair]
        self._syncing = True
        try:
            select.set_options(options)
            select.value = "|".join(self.pair) if self.pair else FOLLOW
        finally:
            self._syncing = False

    def on_select_changed(self, event: Select.Changed) -> None:
        event.stop()
        # Setting the picker from code (p / P) posts Changed too, handled later: one that no longer matches the
        # picker is stale, and following it would undo the keys pressed since.
        if self._syncing or not isinstance(event.value, str) or event.value != event.select.value:
            return
        pair = None if event.value == FOLLOW else tuple(event.value.split("|", 1))
        if pair != self.pair:
            self.show_pair(pair)  # type: ignore[arg-type]
