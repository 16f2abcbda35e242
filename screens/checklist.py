"""Verification items with pass/fail per host, and the evidence (and fix) of the highlighted one."""

from __future__ import annotations

from typing import Any

from rich.text import Text
from textual.app import ComposeResult
from textual.containers import Vertical
from textual.widgets import DataTable, Static

from screens.progress import Progress

RESULT_STYLE = {"pass": "green", "fail": "bold red", "warn": "yellow", "skip": "dim"}
SEVERITY = {"fail": 0, "warn": 1, "skip": 2, "pass": 3}
RESULT_WORD = {"pass": "✔ pass", "fail": "✘ FAIL", "warn": "! warn", "skip": "– skip"}


class Checklist(Vertical):
    """A table of (stage, host, check) rows and a detail line for the row under the cursor."""

    def __init__(self, *, with_stage: bool = False, **kwargs: object) -> None:
        super().__init__(**kwargs)  # type: ignore[arg-type]
        self.with_stage = with_stage
        self._rows: list[dict[str, Any]] = []
        self.empty_text = ""

    def compose(self) -> ComposeResult:
        table: DataTable[Any] = DataTable(cursor_type="row", zebra_stripes=True, id="checks")
        yield table
        yield Static("", id="check-detail", markup=False)

    def on_mount(self) -> None:
        table = self.query_one(DataTable)
        # The verdict comes first so it stays visible when long check titles overflow a narrow terminal.
        columns = ["result"] + (["stage"] if self.with_stage else []) + ["host", "check", "evidence"]
        table.add_columns(*columns)

    def show(self, progress: Progress, stages: list[str], *, only_problems: bool = False) -> None:
        self.empty_text = (
            "no failed or warned checks" if only_problems else "no checks yet: verify (v) or apply (a) this stage"
        )
        table = self.query_one(DataTable)
        table.clear()
        rows = []
        for stage in stages:
            for host in progress.hosts:
                cell = progress.cell(stage, host)
                items = cell.checks or ([] if only_problems else [])
                if not items and cell.status in ("failed",) and cell.reason:
                    items = [{"title": "could not run", "status": "fail", "evidence": cell.reason, "fix": None}]
                for item in items:
                    if only_problems and item["status"] not in ("fail", "warn"):
                        continue
                    rows.append({"stage": stage, "host": host, **item})
        # Problems first: on a big cluster a failed host must not hide below hundreds of passes.
        self._rows = sorted(rows, key=lambda row: SEVERITY.get(row["status"], len(SEVERITY)))
        for row in self._rows:
            result = Text(RESULT_WORD.get(row["status"], row["status"]), style=RESULT_STYLE.get(row["status"], ""))
            evidence = " ".join((row.get("evidence") or "").split())
            evidence = evidence if len(evidence) <= 70 else evidence[:69] + "…"
            cells = [result] + ([row["stage"]] if self.with_stage else []) + [row["host"], row["title"], evidence]
            table.add_row(*cells)
        self._detail(0)

    def _detail(self, index: int) -> None:
        detail = self.query_one("#check-detail", Static)
        if not self._rows:
            detail.update(self.empty_text)
            return
        row = self._rows[min(index, len(self._rows) - 1)]
        fix = f"\nfix: {row['fix']}" if row.get("fix") else ""
        detail.update(f"{row['host']} · {row['title']}: {row.get('evidence') or '(no evidence recorded)'}{fix}")

    def on_data_table_row_highlighted(self, event: DataTable.RowHighlighted) -> None:
        event.stop()
        self._detail(event.cursor_row)
