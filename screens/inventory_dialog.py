"""The Hosts page's inventory import: a dialog for the file and group, then the host list from
wizard.answers.inventory."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Vertical
from textual.screen import ModalScreen
from textual.widgets import Input, Label

from wizard.answers.inventory import detect_format, parse_inventory
from wizard.answers.inventory_import import Imported, import_hosts
from wizard.errors import UsageError


@dataclass(frozen=True)
class InventoryChoice:
    path: Path
    group: str


class AskInventory(ModalScreen[InventoryChoice | None]):
    """Asks for an Ansible inventory (INI or YAML) or ssh_config, and optionally one group of it."""

    BINDINGS = [Binding("escape", "cancel", "Cancel")]

    def compose(self) -> ComposeResult:
        with Vertical(classes="dialog small"):
            yield Label("Import hosts from an Ansible inventory or an ssh_config", classes="dialog-title")
            yield Input(placeholder="inventory file (INI, YAML or ssh_config)", id="inventory-path")
            yield Input(placeholder="group (empty: all hosts)", id="inventory-group")
            yield Label("enter: import · escape: cancel · the host list is replaced", classes="hint")

    def on_input_submitted(self, event: Input.Submitted) -> None:
        event.stop()
        path = self.query_one("#inventory-path", Input).value.strip()
        if not path:
            self.query_one("#inventory-path", Input).focus()
            return
        group = self.query_one("#inventory-group", Input).value.strip() or "all"
        self.dismiss(InventoryChoice(Path(path).expanduser(), group))

    def action_cancel(self) -> None:
        self.dismiss(None)


def read_inventory(choice: InventoryChoice) -> Imported:
    """The hosts of the chosen file and group; raises UsageError with a one-line reason."""
    try:
        text = choice.path.read_text(encoding="utf-8")
    except OSError as exc:
        raise UsageError(f"{choice.path}: cannot read ({exc.strerror or exc})") from None
    fmt = detect_format(text, choice.path.name)
    if fmt == "ssh_config" and choice.group != "all":
        raise UsageError("an ssh_config has no groups; leave the group empty")
    return import_hosts(parse_inventory(text, fmt, str(choice.path)), choice.group)
