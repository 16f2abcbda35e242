"""The summary: every stage on every host, what failed and why, and where the logs are."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from rich.text import Text
from textual.app import ComposeResult
from textual.containers import Vertical
from textual.widgets import DataTable, Label, Static

from screens.checklist import Checklist
from screens.progress import LEGEND, SHORT_STAGE, STATUS_MARK

if TYPE_CHECKING:
    from screens.app import WizardApp

STATUS_STYLE = {
    "done": "green",
    "failed": "bold red",
    "running": "cyan",
    "skipped": "dim",
    "pending": "",
    "waiting": "yellow",
}


class SummaryPage(Vertical):
    """A host x stage grid, the failed and warned checks with their evidence, and the log location."""

    @property
    def wizard(self) -> WizardApp:
        return self.app  # type: ignore[return-value]

    def compose(self) -> ComposeResult:
        yield Label("Summary", id="sum-title", classes="page-title")
        grid: DataTable[Any] = DataTable(cursor_type="none", id="grid")
        yield grid
        yield Static(LEGEND, classes="hint")
        yield Static("", id="sum-verdict")
        yield Static("", id="sum-endpoints")
        yield Checklist(with_stage=True, id="sum-checks")
        yield Static("", id="sum-logs", classes="hint")

    def on_mount(self) -> None:
        self.query_one("#grid", DataTable).add_columns(
            "host", *[SHORT_STAGE.get(s, s) for s in self.wizard.progress.stages]
        )
        self.refresh_view()

    def refresh_view(self) -> None:
        progress = self.wizard.progress
        grid = self.query_one("#grid", DataTable)
        grid.clear()
        for host in progress.hosts:
            cells: list[Any] = [host + (" [sim]" if host in progress.simulated_hosts else "")]
            for stage in progress.stages:
                cell = progress.cell(stage, host)
                status = "waiting" if cell.status == "pending" and cell.reason else cell.status
                cells.append(Text(f"  {STATUS_MARK.get(status, '?')}", style=STATUS_STYLE.get(status, "")))
            grid.add_row(*cells)
        failures = progress.failures()
        verified = all(progress.stage_status(s) in ("done",) for s in progress.stages)
        verdict = self.query_one("#sum-verdict", Static)
        if verified and progress.hosts:
            verdict.update(Text("✔ every stage is verified on every host", style="bold green"))
        elif failures:
            verdict.update(
                Text(f"✘ {len(failures)} stage(s) on hosts need attention; failed checks below", style="bold red")
            )
        else:
            verdict.update(Text("not finished: some stages are still pending or skipped", style="yellow"))
        endpoints = self._endpoints()
        shown = self.query_one("#sum-endpoints", Static)
        shown.update(endpoints)
        shown.display = bool(endpoints.plain)
        self.query_one(Checklist).show(progress, progress.stages, only_problems=True)
        logs = self.wizard.engine.store.logs_dir
        self.query_one("#sum-logs", Static).update(
            f"full logs: {logs}/<host>.log  (L opens one) · answers: ctrl+s saves {self.wizard.engine.answers_path}"
        )

    def _endpoints(self) -> Text:
        """The serving endpoints the inference stage verified (one per replica, or the group's head)."""
        progress = self.wizard.progress
        if "inference" not in progress.stages:
            return Text("")
        text = Text()
        for host in progress.hosts:
            for line in progress.cell("inference", host).summary:
                if line.startswith("endpoint"):
                    text.append(f"{host}: ", style="bold")
                    text.append(line + "\n")
        return text
