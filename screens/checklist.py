"""Verification items with pass/fail per host, and the evidence (and fix) of the highlighted one."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from rich.text import Text
from textual.app import ComposeResult
from textual.containers import Vertical
from textual.widgets import Static

from screens.fleet import HostFilter
from screens.progress import Progress
from screens.vtable import VirtualTable, update_if_changed

RESULT_STYLE = {"pass": "green", "fail": "bold red", "warn": "yellow", "skip": "dim"}
SEVERITY = {"fail": 0, "warn": 1, "skip": 2, "pass": 3}
RESULT_WORD = {"pass": "✔ pass", "fail": "✘ FAIL", "warn": "! warn", "skip": "– skip"}
RESULT_TEXT = {status: Text(word, style=RESULT_STYLE[status]) for status, word in RESULT_WORD.items()}


@dataclass(slots=True)
class CheckRow:
    """One check on one host: the item, its table cells and the lower-cased text a filter searches."""

    row: dict[str, Any]
    cells: list[Any]
    haystack: str


class Checklist(Vertical):
    """A table of (stage, host, check) rows and a detail line for the row under the cursor.

    Rows are collected once per change of the progress (its revision) and filtered from that list, so typing in a
    filter over 20,000 checks costs one pass over plain strings, not a rebuild from the events.
    """

    def __init__(self, *, with_stage: bool = False, **kwargs: object) -> None:
        super().__init__(**kwargs)  # type: ignore[arg-type]
        self.with_stage = with_stage
        self._all: list[CheckRow] = []
        self._per_cell: dict[tuple[str, str], tuple[tuple[Any, ...], list[CheckRow]]] = {}
        self._rows: list[dict[str, Any]] = []
        self._made_from: tuple[Any, ...] | None = None
        self._shown_from: tuple[Any, ...] | None = None
        self.empty_text = ""

    def compose(self) -> ComposeResult:
        # The verdict comes first so it stays visible when long check titles overflow a narrow terminal.
        columns = ["result"] + (["stage"] if self.with_stage else []) + ["host", "check", "evidence"]
        yield VirtualTable(*columns, id="checks")
        yield Static("", id="check-detail", markup=False)

    @property
    def shown(self) -> int:
        return len(self._rows)

    @property
    def total(self) -> int:
        return len(self._all)

    def _cell_rows(self, progress: Progress, stage: str, host: str, only_problems: bool) -> list[CheckRow]:
        """One cell's rows, remade only when its checks, status or reason changed (a run adds checks host by host)."""
        cell = progress.cell(stage, host)
        stamp = (id(cell.checks), len(cell.checks), cell.status, cell.reason)
        known = self._per_cell.get((stage, host))
        if known is not None and known[0] == stamp:
            return known[1]
        items = cell.checks
        if not items and cell.status == "failed" and cell.reason:
            items = [{"title": "could not run", "status": "fail", "evidence": cell.reason, "fix": None}]
        rows = []
        for item in items:
            if only_problems and item["status"] not in ("fail", "warn"):
                continue
            row = {"stage": stage, "host": host, **item}
            evidence = " ".join((row.get("evidence") or "").split())
            evidence = evidence if len(evidence) <= 70 else evidence[:69] + "…"
            result = RESULT_TEXT.get(row["status"]) or Text(row["status"])
            cells = [result] + ([stage] if self.with_stage else []) + [host, row["title"], evidence]
            haystack = f"{host} {stage} {item['title']} {item.get('evidence') or ''}".lower()
            rows.append(CheckRow(row, cells, haystack))
        self._per_cell[(stage, host)] = (stamp, rows)
        return rows

    def show(
        self, progress: Progress, stages: list[str], *, only_problems: bool = False, flt: HostFilter | None = None
    ) -> None:
        self.empty_text = (
            "no failed or warned checks" if only_problems else "no checks yet: verify (v) or apply (a) this stage"
        )
        flt = flt or HostFilter()
        source = (progress.revision, id(progress), tuple(stages), only_problems)
        if source != self._made_from:
            if self._made_from is None or self._made_from[1:] != source[1:]:
                self._per_cell = {}
            self._made_from = source
            rows = [
                r
                for stage in stages
                for host in progress.hosts
                for r in self._cell_rows(progress, stage, host, only_problems)
            ]
            # Problems first: on a big cluster a failed host must not hide below hundreds of passes.
            rows.sort(key=lambda r: SEVERITY.get(r.row["status"], len(SEVERITY)))
            self._all = rows
        elif (source, flt) == self._shown_from:
            return
        self._shown_from = (source, flt)
        words = flt.words
        shown = [
            r
            for r in self._all
            if (not flt.failed_only or r.row["status"] == "fail") and all(w in r.haystack for w in words)
        ]
        self._rows = [r.row for r in shown]
        table = self.query_one(VirtualTable)
        table.set_rows([r.cells for r in shown])
        if flt.active and not self._rows:
            self.empty_text = f"no check matches ({flt.describe(0, len(self._all), 'checks')})"
        self._detail(table.cursor_row)

    def _detail(self, index: int) -> None:
        detail = self.query_one("#check-detail", Static)
        if not self._rows:
            update_if_changed(detail, self.empty_text)
            return
        row = self._rows[max(0, min(index, len(self._rows) - 1))]
        fix = f"\nfix: {row['fix']}" if row.get("fix") else ""
        update_if_changed(
            detail, f"{row['host']} · {row['title']}: {row.get('evidence') or '(no evidence recorded)'}{fix}"
        )

    def on_virtual_table_row_highlighted(self, event: VirtualTable.RowHighlighted) -> None:
        event.stop()
        self._detail(event.cursor_row)
