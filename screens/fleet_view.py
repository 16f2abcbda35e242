"""The bandwidth page's Fleet tab: suspects first, then the budget bar and coverage, then one row per leaf (flows
through it, slow ones, the median rate) whose host ports show below when the row is highlighted. At 1,000 hosts it
is a few hundred leaf rows; no host x host grid is drawn."""

from __future__ import annotations

from typing import Any

from rich.markup import escape
from textual.app import ComposeResult
from textual.containers import Vertical
from textual.widgets import Static

from screens.vtable import VirtualTable
from wizard.validate.fleet_model import Budget
from wizard.validate.fleet_text import KIND_WORDS, coverage_line
from wizard.validate.history import describe
from wizard.validate.leaf_view import LeafRow, leaf_rows, slow_with
from wizard.validate.model import Report
from wizard.validate.suspects import flows_of

BAR = 30


def budget_bar(b: Budget) -> str:
    ran = sum(1 for r in b.rounds if r.ran)
    if b.budget_s:
        filled = round(BAR * min(1.0, b.used_s / b.budget_s))
        bar = "█" * filled + "░" * (BAR - filled)
        return f"{b.mode} [{bar}] {b.used_s:.0f}/{b.budget_s:.0f} s, {ran}/{len(b.rounds)} rounds"
    return f"{b.mode}: {ran}/{len(b.rounds)} rounds, {b.used_s:.0f} s of fabric time"


SUMMARY_LINES = 16  # the summary's height: below it the leaves table, which must keep most of the page


def fleet_summary(report: Report, max_lines: int = SUMMARY_LINES) -> str:
    """Suspects first, then regressions, the budget bar and coverage, in at most ``max_lines`` one-row lines: with
    many suspects each keeps one line of evidence, then the last ones are counted, so the budget and coverage
    always show (five suspects with two lines each pushed them out of the box on a 1,024-host run)."""
    f = report.fleet
    if f is None:
        return ""
    tail = [f"  [yellow]regression[/] {escape(describe(r))}" for r in f.regressions[:3]]
    if len(f.regressions) > 3:
        tail.append(f"  [yellow]+{len(f.regressions) - 3} more regression(s)[/] (t results, or the HTML report)")
    tail.append(budget_bar(f.budget))
    if f.budget.stopped:
        tail.append(f"[yellow]stopped:[/] {escape(f.budget.stopped)}")
    tail.append(escape(coverage_line(f.coverage)))
    if not f.suspects:
        head = ["[green]no suspects[/]: no slow flow is left unexplained"] if f.budget.rounds else []
        return "\n".join(head + tail)
    room = max(3, max_lines - len(tail) - 1)  # the header line, then the suspects
    evidence = 2 if len(f.suspects) * 3 <= room else 1
    shown = len(f.suspects) if len(f.suspects) * (1 + evidence) <= room else max(1, (room - 1) // (1 + evidence))
    head = [f"[b red]{len(f.suspects)} suspect(s)[/], most certain first:"]
    for s in f.suspects[:shown]:
        status = "" if s.status == "suspect" else f" [b]{s.status.upper()}[/]"
        head.append(f"  [b]{escape(KIND_WORDS[s.kind])}: {escape(s.part)}[/]{status}")
        head += [f"      {escape(e)}" for e in s.evidence[:evidence]]
    if shown < len(f.suspects):
        head.append(f"  [b]+{len(f.suspects) - shown} more suspect(s)[/] (t results, or the HTML report)")
    return "\n".join(head + tail)


class FleetView(Vertical):
    DEFAULT_CSS = """
    FleetView #fleet-summary { height: auto; max-height: 16; text-wrap: nowrap; text-overflow: ellipsis; }
    FleetView #fleet-leaves { height: 1fr; }
    FleetView #fleet-ports { height: auto; max-height: 10; }
    """

    def __init__(self, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self._rows: dict[str, LeafRow] = {}

    def compose(self) -> ComposeResult:
        yield Static("", id="fleet-summary")
        yield VirtualTable("leaf", "flows", "slow", "median Gb/s", id="fleet-leaves")
        yield Static("", id="fleet-ports")

    def show(self, report: Report) -> None:
        self.query_one("#fleet-summary", Static).update(fleet_summary(report))
        rows = leaf_rows(flows_of(report.together + report.cross_rail))
        self._rows = {row.leaf: row for row in rows}
        cells = [
            [r.leaf, str(len(r.flows)), str(r.slow), f"{r.median_gbps:.0f}" if r.median_gbps is not None else "-"]
            for r in rows
        ]
        self.query_one("#fleet-leaves", VirtualTable).set_rows(cells, [r.leaf for r in rows])
        if rows:
            self._ports(rows[0].leaf)

    def on_virtual_table_row_highlighted(self, event: VirtualTable.RowHighlighted) -> None:
        event.stop()
        if isinstance(event.key, str):
            self._ports(event.key)

    def _ports(self, leaf: str) -> None:
        row = self._rows.get(leaf)
        lines = [f"[b]{escape(leaf)}[/]: its host ports (slow ones first)"]
        for (host, rail), mine in row.ports() if row is not None else []:
            tail = slow_with((host, rail), mine, 2) or "fast"
            mark = "[green]✔[/]" if tail == "fast" else "[red]✘[/]"
            lines.append(f"  {mark} {escape(host)} rail {rail}: {len(mine)} flows, {escape(tail)}")
        self.query_one("#fleet-ports", Static).update("\n".join(lines[:12]))
