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


def fleet_summary(report: Report) -> str:
    f = report.fleet
    if f is None:
        return ""
    lines = []
    if f.suspects:
        lines.append(f"[b red]{len(f.suspects)} suspect(s)[/], most certain first:")
        for s in f.suspects:
            status = "" if s.status == "suspect" else f" [b]{s.status.upper()}[/]"
            lines.append(f"  [b]{escape(KIND_WORDS[s.kind])}: {escape(s.part)}[/]{status}")
            lines += [f"      {escape(e)}" for e in s.evidence[:2]]
    elif f.budget.rounds:
        lines.append("[green]no suspects[/]: no slow flow is left unexplained")
    for r in f.regressions[:8]:
        lines.append(f"  [yellow]regression[/] {escape(describe(r))}")
    lines.append(budget_bar(f.budget))
    if f.budget.stopped:
        lines.append(f"[yellow]stopped:[/] {escape(f.budget.stopped)}")
    lines.append(escape(coverage_line(f.coverage)))
    return "\n".join(lines)


class FleetView(Vertical):
    DEFAULT_CSS = """
    FleetView #fleet-summary { height: auto; max-height: 16; }
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
