"""Modal dialogs: confirm a disruptive plan, yes/no questions, a path prompt, a full log, help."""

from __future__ import annotations

from collections import deque
from pathlib import Path

from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal, Vertical, VerticalScroll
from textual.screen import ModalScreen
from textual.widgets import Button, Input, Label, Log, Markdown, Static

from screens.plan_view import IMPACT_STYLE
from wizard.engine.step import Change, HostPlan, Impact

FULL_LOG_LINES = 20000

RISK = {
    Impact.DISRUPTIVE: (
        "These changes interrupt traffic on the host's ConnectX ports: links go down and come back, RDMA "
        "jobs running now fail, and a change to an interface that carries SSH can cut this session (the wizard "
        "then waits for the host to come back; progress is saved)."
    ),
    Impact.REBOOT: (
        "The host REBOOTS: every job on it stops, and if it does not come back (boot order, a bad driver) you "
        "need console access. The wizard waits for SSH to return and then verifies."
    ),
}


class ConfirmPlan(ModalScreen[str]):
    """Asks before disruptive or reboot changes, saying what each does, why, and what can go wrong.

    Dismisses with "yes" (this host), "all" (every host of this stage in this run) or "no".
    """

    BINDINGS = [
        Binding("y", "answer('yes')", "Yes, this host"),
        Binding("A", "answer('all')", "Yes, all hosts"),
        Binding("n,escape", "answer('no')", "No"),
        Binding("q", "app.quit", "Quit"),
    ]

    def __init__(self, stage: str, plan: HostPlan, *, simulated: bool) -> None:
        super().__init__()
        self.stage = stage
        self.plan = plan
        self.simulated = simulated

    def compose(self) -> ComposeResult:
        plan = self.plan
        with Vertical(classes="dialog"):
            tag = " (simulated host)" if self.simulated else ""
            yield Label(
                f"{plan.impact.value.upper()} changes on {plan.host}{tag}: {self.stage}", classes="dialog-title"
            )
            risk = Text()
            risk.append("What can go wrong: ", style="bold")
            risk.append(RISK.get(plan.impact, ""))
            yield Static(risk, classes="dialog-risk")
            text = Text()
            for change in plan.changes:
                if change.impact == Impact.SAFE:
                    continue
                text.append(f"[{change.impact.value}] ", style=IMPACT_STYLE[change.impact.value])
                text.append(f"{change.summary}\n")
                if change.why:
                    text.append(f"  why: {change.why}\n", style="dim")
            safe = sum(1 for c in plan.changes if c.impact == Impact.SAFE)
            if safe:
                text.append(f"{safe} safe change(s) of this plan run as well.", style="dim")
            with VerticalScroll(classes="dialog-body"):
                yield Static(text)
            with Horizontal(classes="dialog-buttons"):
                yield Button("Apply here (y)", id="yes", variant="warning", compact=True)
                yield Button("All hosts (A)", id="all", variant="warning", compact=True)
                yield Button("Not now (n)", id="no", compact=True)

    def action_answer(self, value: str) -> None:
        self.dismiss(value)

    def on_button_pressed(self, event: Button.Pressed) -> None:
        self.dismiss(event.button.id or "no")


class ConfirmRollback(ModalScreen[bool]):
    """Shows, per host, exactly what a rollback runs (from the saved backups) and asks before doing it."""

    BINDINGS = [Binding("y", "answer(True)", "Roll back"), Binding("n,escape", "answer(False)", "No")]

    def __init__(self, stage: str, plans: dict[str, Change | None], *, simulated: bool) -> None:
        super().__init__()
        self.stage = stage
        self.plans = plans
        self.simulated = simulated

    def compose(self) -> ComposeResult:
        hosts = [h for h, c in self.plans.items() if c is not None]
        tag = " (simulated hosts)" if self.simulated else ""
        with Vertical(classes="dialog"):
            yield Label(f"Roll back {self.stage} on {len(hosts)} host(s){tag}?", classes="dialog-title")
            risk = Text()
            risk.append("What it does: ", style="bold")
            risk.append(
                "puts back the files this stage replaced, removes the ones it created and re-applies the old "
                "configuration, so links may flap. Runtime settings (QoS, loaded modules) stay until a reboot or "
                "driver reload."
            )
            yield Static(risk, classes="dialog-risk")
            text = Text()
            for host, change in self.plans.items():
                if change is None:
                    text.append(f"{host}: nothing recorded to roll back\n", style="dim")
                    continue
                text.append(f"{host}: ", style="bold")
                text.append(f"{change.summary}\n")
                for command in change.commands:
                    text.append(f"  $ {command.shell()}\n", style="dim")
            with VerticalScroll(classes="dialog-body"):
                yield Static(text)
            with Horizontal(classes="dialog-buttons"):
                yield Button("Roll back (y)", id="yes", variant="warning", compact=True)
                yield Button("No (n)", id="no", compact=True)

    def action_answer(self, value: bool) -> None:
        self.dismiss(value)

    def on_button_pressed(self, event: Button.Pressed) -> None:
        self.dismiss(event.button.id == "yes")


class Question(ModalScreen[bool]):
    """A yes/no question."""

    BINDINGS = [Binding("y", "answer(True)", "Yes"), Binding("n,escape", "answer(False)", "No")]

    def __init__(self, title: str, body: str) -> None:
        super().__init__()
        self.title_text = title
        self.body = body

    def compose(self) -> ComposeResult:
        with Vertical(classes="dialog small"):
            yield Label(self.title_text, classes="dialog-title")
            yield Static(self.body, markup=False)
            with Horizontal(classes="dialog-buttons"):
                yield Button("Yes (y)", id="yes", variant="warning", compact=True)
                yield Button("No (n)", id="no", compact=True)

    def action_answer(self, value: bool) -> None:
        self.dismiss(value)

    def on_button_pressed(self, event: Button.Pressed) -> None:
        self.dismiss(event.button.id == "yes")


class AskPath(ModalScreen[Path | None]):
    """Asks for a file path (save or import)."""

    BINDINGS = [Binding("escape", "cancel", "Cancel")]

    def __init__(self, title: str, default: str) -> None:
        super().__init__()
        self.title_text = title
        self.default = default

    def compose(self) -> ComposeResult:
        with Vertical(classes="dialog small"):
            yield Label(self.title_text, classes="dialog-title")
            yield Input(self.default, id="path")
            yield Label("enter: OK · escape: cancel", classes="hint")

    def on_input_submitted(self, event: Input.Submitted) -> None:
        self.dismiss(Path(event.value).expanduser() if event.value.strip() else None)

    def action_cancel(self) -> None:
        self.dismiss(None)


class AskSecret(ModalScreen[str | None]):
    """Asks for the sudo password once per session; it is kept in memory only, never written anywhere."""

    BINDINGS = [Binding("escape", "cancel", "Cancel")]

    def compose(self) -> ComposeResult:
        with Vertical(classes="dialog small"):
            yield Label("sudo password for the hosts", classes="dialog-title")
            yield Static("ssh.sudo is 'password' and $ROCE_WIZARD_SUDO_PASSWORD is not set. It is not stored.")
            yield Input(password=True, id="secret")
            yield Label("enter: OK · escape: cancel", classes="hint")

    def on_input_submitted(self, event: Input.Submitted) -> None:
        self.dismiss(event.value or None)

    def action_cancel(self) -> None:
        self.dismiss(None)


def tail_lines(path: Path, limit: int = FULL_LOG_LINES) -> list[str]:
    """The last ``limit`` lines of a log file, read without holding the whole file in memory."""
    if not path.exists():
        return [f"(no log yet at {path})"]
    with path.open(encoding="utf-8", errors="replace") as handle:
        return [line.rstrip("\n") for line in deque(handle, maxlen=limit)]


class FullLog(ModalScreen[None]):
    """The host's log file from disk (its last lines), with the path to open it elsewhere."""

    BINDINGS = [Binding("escape,q,L", "close", "Close")]

    def __init__(self, host: str, path: Path) -> None:
        super().__init__()
        self.host = host
        self.path = path

    def compose(self) -> ComposeResult:
        with Vertical(classes="dialog wide"):
            yield Label(f"{self.host}: {self.path}", classes="dialog-title")
            yield Log(max_lines=FULL_LOG_LINES, id="full-log")
            yield Label("escape: close · the file holds everything, with secrets redacted", classes="hint")

    def on_mount(self) -> None:
        self.query_one(Log).write_lines(tail_lines(self.path))

    def action_close(self) -> None:
        self.dismiss(None)


class HelpPanel(ModalScreen[None]):
    """What the current page does and why, and the keys."""

    BINDINGS = [Binding("escape,q,question_mark,f1", "close", "Close")]

    def __init__(self, markdown: str) -> None:
        super().__init__()
        self.markdown = markdown

    def compose(self) -> ComposeResult:
        with VerticalScroll(classes="dialog wide"):
            yield Markdown(self.markdown)

    def action_close(self) -> None:
        self.dismiss(None)
