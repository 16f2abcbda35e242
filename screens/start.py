"""The first screen: start a new bring-up, or resume saved progress and see where each host stands."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal, VerticalScroll
from textual.screen import Screen
from textual.widgets import Button, DataTable, Header, Label, Static

from screens.footer import KeyFooter
from screens.progress import LEGEND, SHORT_STAGE, STATUS_MARK
from screens.summary_page import STATUS_STYLE
from wizard.engine.interactive import resume_point, saved_progress
from wizard.paths import default_state_root

if TYPE_CHECKING:
    from screens.app import WizardApp
    from screens.engine_link import EngineLink

INTRO = (
    "roce-wizard takes GPU servers with ConnectX NICs to a verified RDMA fabric, RoCE v2 or InfiniBand: discovery, "
    "driver stack, per-port rails, lossless QoS (RoCE), GPUDirect RDMA, NCCL and an inference service. Every stage "
    "shows its plan "
    "before it changes anything, asks before disruptive steps, and proves the result with checks."
)

NEW_CLUSTER = (
    "A new cluster, no hosts yet: start, then add hosts on the Hosts page or import an inventory or an answers file "
    "(ctrl+p)."
)


class StartScreen(Screen[str]):
    """New bring-up or resume; dismisses with 'new' or 'resume'."""

    BINDINGS = [
        Binding("r", "choose('resume')", "Resume"),
        Binding("n", "choose('new')", "New bring-up"),
        Binding("q", "app.quit", "Quit"),
    ]

    @property
    def wizard(self) -> WizardApp:
        return self.app  # type: ignore[return-value]

    def compose(self) -> ComposeResult:
        engine = self.wizard.engine
        yield Header()
        with VerticalScroll(id="start"):
            if engine.demo:
                yield Label(
                    "SIMULATED CLUSTER: every host is simulated on 127.0.0.1; nothing real is touched.",
                    classes="sim-banner",
                )
            if not self.has_progress():
                yield Static(INTRO, classes="intro")
            yield Static(state_line(engine), classes="hint", markup=False)
            if self.has_progress():
                yield Label("Saved progress", classes="page-title")
                table: DataTable[Any] = DataTable(cursor_type="none", id="resume-table")
                yield table
                yield Static(LEGEND, classes="hint")
                yield Static("", id="resume-note")
                with Horizontal(classes="actions"):
                    yield Button("Resume (r)", id="resume", variant="primary", compact=True)
                    yield Button("New bring-up (n)", id="new", compact=True)
            else:
                yield Static("No saved progress here yet." if engine.host_names else NEW_CLUSTER, classes="dim")
                with Horizontal(classes="actions"):
                    yield Button("Start (n)", id="new", variant="primary", compact=True)
        yield KeyFooter()

    def has_progress(self) -> bool:
        return self.wizard.engine.store.exists()

    def on_mount(self) -> None:
        if not self.has_progress():
            return
        engine = self.wizard.engine
        stages = self.wizard.progress.stages
        progress = saved_progress(engine.store, engine.host_names, stages)
        table = self.query_one(DataTable)
        table.add_columns("host", *[SHORT_STAGE.get(s, s) for s in stages])
        for host, row in progress.items():
            cells: list[Any] = [host]
            for stage in stages:
                status = row[stage].status
                if status == "pending" and row[stage].reason:
                    status = "waiting"
                cells.append(Text(f"  {STATUS_MARK.get(status, '?')}", style=STATUS_STYLE.get(status, "")))
            table.add_row(*cells)
        point = resume_point(progress, stages)
        note = Text()
        note.append("On resume: ", style="bold")
        note.append("stages marked done are re-verified on the hosts (never trusted); failed or interrupted ")
        note.append("ones are planned again from what the hosts show now and retried.\n")
        if point:
            note.append(f"Next: {point}.", style="bold")
        else:
            note.append("Every stage is done: resuming opens the summary.", style="bold green")
        in_flight = [h for h in engine.host_names if engine.store.host(h).command_in_flight]
        for host in in_flight:
            note.append(f"\n{host} was running `{engine.store.host(host).command_in_flight}` when it stopped.")
        self.query_one("#resume-note", Static).update(note)

    def action_choose(self, choice: str) -> None:
        if choice == "resume" and not self.has_progress():
            choice = "new"
        self.dismiss(choice)

    def on_button_pressed(self, event: Button.Pressed) -> None:
        self.action_choose(event.button.id or "new")


def state_line(engine: EngineLink) -> str:
    """Where progress will be kept; an empty bring-up's directory is named after the cluster, which has no name yet."""
    if engine.state_dir_pending:
        return f"State directory: {default_state_root()}/<cluster>, named after the first host (or use --state-dir)"
    return f"State directory: {engine.state_dir}"
