"""Doctor screen: the troubleshooting trees walked on every host, failures first, with evidence and fix."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any

from textual.app import ComposeResult
from textual.binding import Binding
from textual.screen import Screen
from textual.widgets import DataTable, Static

from screens.footer import KeyFooter

EventFn = Callable[[str, dict[str, Any]], None]
DiagnoseFn = Callable[[EventFn], Awaitable[list[Any]]]


def default_diagnose(answers: Any, executors: dict[str, Any], last: Any = None) -> DiagnoseFn:
    async def run(emit: EventFn) -> list[Any]:
        from wizard.validate.doctor import diagnose

        return await diagnose(answers, executors, last, on_event=emit)

    return run


class DoctorScreen(Screen):
    """Runs the doctor in an app-level worker; the highlighted row's fix shows below the table."""

    BINDINGS = [Binding("escape", "app.pop_screen", "Back"), Binding("r", "rerun", "Run again")]
    DEFAULT_CSS = """
    DoctorScreen #doc-status { height: 1; background: $boost; }
    DoctorScreen #doc-fix { height: auto; max-height: 6; padding: 0 1; }
    """

    def __init__(
        self,
        answers: Any = None,
        executors: dict[str, Any] | None = None,
        *,
        simulated: bool = False,
        last: Any = None,
        run: DiagnoseFn | None = None,
    ) -> None:
        super().__init__()
        self.simulated = simulated
        self._run_fn = run or default_diagnose(answers, executors or {}, last)
        self.findings: list[Any] = []

    def compose(self) -> ComposeResult:
        yield Static(("SIMULATED cluster - " if self.simulated else "") + "doctor: starting", id="doc-status")
        yield DataTable(id="doc-table", cursor_type="row", zebra_stripes=True)
        yield Static("", id="doc-fix")
        yield KeyFooter()

    def on_mount(self) -> None:
        self.query_one("#doc-table", DataTable).add_columns("status", "tree", "host", "check", "evidence")
        self.start()

    def start(self) -> None:
        # The screen's worker: it stops with the page, so no event of the run reaches widgets that are gone.
        self.run_worker(self._work(), exclusive=True, group="doctor", name="doctor")

    def action_rerun(self) -> None:
        self.query_one("#doc-table", DataTable).clear()
        self.start()

    async def _work(self) -> None:
        status = self.query_one("#doc-status", Static)
        try:
            findings = await self._run_fn(self._event)
        except Exception as exc:  # noqa: BLE001 - shown to the operator
            status.update(f"doctor stopped: {exc}")
            return
        self.findings = findings
        table = self.query_one("#doc-table", DataTable)
        table.clear()
        for f in findings:
            table.add_row(self._status(f.status), f.tree, f.host or "", f.title, f.evidence[:160])
        failed = sum(f.status == "fail" for f in findings)
        status.update(f"doctor: {failed} failing check(s), most likely cause first")
        self._show_fix(0)

    def _event(self, kind: str, data: dict[str, Any]) -> None:
        if kind == "phase":
            self.query_one("#doc-status", Static).update(f"doctor: {data['text']}")
        elif kind == "check":
            f = data["finding"]
            table = self.query_one("#doc-table", DataTable)
            table.add_row(self._status(f.status), f.tree, f.host or "", f.title, f.evidence[:160])

    @staticmethod
    def _status(status: str) -> str:
        return {"pass": "[green]PASS[/]", "fail": "[red]FAIL[/]", "warn": "[yellow]WARN[/]"}.get(status, status)

    def on_data_table_row_highlighted(self, event: DataTable.RowHighlighted) -> None:
        self._show_fix(event.cursor_row)

    def _show_fix(self, index: int) -> None:
        if not self.findings or index >= len(self.findings):
            return
        f = self.findings[index]
        text = f"[b]{f.title}[/b]\nevidence: {f.evidence}"
        if f.fix:
            text += f"\n[b]fix:[/b] {f.fix}"
        self.query_one("#doc-fix", Static).update(text)
