"""The hosts page: the host list, a form to add or edit one, import from answers or an inventory, connection test."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal, Vertical
from textual.widgets import Button, DataTable, Input, Label, Static

from screens.inventory_dialog import AskInventory, InventoryChoice, read_inventory
from wizard.errors import UsageError

if TYPE_CHECKING:
    from screens.app import WizardApp

FIELDS = ("name", "address", "port", "user", "identity_file")


def _yes_no(value: bool | None) -> Text:
    if value is None:
        return Text("·", style="dim")
    return Text("yes", style="green") if value else Text("NO", style="bold red")


class HostsPage(Vertical):
    """Hosts to bring up, and whether each one answers, logs in and runs sudo."""

    BINDINGS = [Binding("i", "import_inventory", "Import inventory")]

    @property
    def wizard(self) -> WizardApp:
        return self.app  # type: ignore[return-value]

    def compose(self) -> ComposeResult:
        yield Label("Hosts", classes="page-title")
        yield Static(
            "The servers to bring up. Test the connections (t) before going on: every host must be reachable, "
            "accept the key and run sudo.",
            classes="page-summary",
        )
        table: DataTable[Any] = DataTable(cursor_type="row", zebra_stripes=True, id="hosts-table")
        yield table
        yield Static("", id="host-problem", classes="field-error hidden")
        yield Label("Add or edit: name · address · port · user · key  (enter saves)", classes="hint form-hint")
        with Horizontal(classes="host-form"):
            for name in FIELDS[:4]:
                yield Input(placeholder=name, compact=True, id=f"h-{name}", classes=f"h-{name}")
        with Horizontal(classes="host-form"):
            yield Input(placeholder="this host's key file (empty: the one below)", compact=True, id="h-identity_file")
        with Horizontal(classes="host-form"):
            yield Input(placeholder="SSH key file (all hosts; empty: agent / ~/.ssh)", compact=True, id="h-key")
        with Horizontal(classes="actions"):
            yield Button("Save host ⏎", id="save-host", compact=True)
            yield Button("Remove", id="remove-host", compact=True)
            yield Button("Import answers…", id="import", compact=True)
            yield Button("Inventory… (i)", id="import-inventory", compact=True)
            yield Button("Test (t)", id="test", variant="primary", compact=True)

    def on_mount(self) -> None:
        self.query_one(DataTable).add_columns("name", "ssh", "reach", "auth", "sudo", "OS")
        self.refresh_view()

    def refresh_view(self) -> None:
        engine = self.wizard.engine
        table = self.query_one(DataTable)
        table.clear()
        reports = self.wizard.conn_reports
        for host in engine.answers.hosts:
            report = reports.get(host.name)
            label = Text(host.name + (" [sim]" if host.name in self.wizard.progress.simulated_hosts else ""))
            table.add_row(
                label,
                f"{host.user or engine.answers.ssh.user}@{host.address}:{host.port or engine.answers.ssh.port}",
                _yes_no(report.reachable if report else None),
                _yes_no(report.authenticated if report else None),
                _yes_no(report.sudo if report else None),
                (report.os if report else "") or "",
                key=host.name,
            )
        problems = [f"{r.host}: {r.problem}" for r in reports.values() if r.problem]
        problem = self.query_one("#host-problem", Static)
        problem.update("\n".join(problems))
        problem.display = bool(problems)
        self.query_one("#h-key", Input).value = engine.answers.ssh.identity_file or ""

    def on_data_table_row_highlighted(self, event: DataTable.RowHighlighted) -> None:
        event.stop()
        hosts = self.wizard.engine.answers.hosts
        if 0 <= event.cursor_row < len(hosts):
            host = hosts[event.cursor_row]
            values = {
                "name": host.name,
                "address": host.address,
                "port": host.port,
                "user": host.user,
                "identity_file": host.identity_file,
            }
            for name in FIELDS:
                self.query_one(f"#h-{name}", Input).value = "" if values[name] is None else str(values[name])

    def form_values(self) -> dict[str, Any]:
        entry: dict[str, Any] = {}
        for name in FIELDS:
            value = self.query_one(f"#h-{name}", Input).value.strip()
            if value:
                entry[name] = value
        return entry

    def on_input_submitted(self, event: Input.Submitted) -> None:
        event.stop()
        if event.input.id == "h-key":
            self.wizard.set_identity_file(event.value.strip() or None)
        else:
            self.wizard.save_host(self.form_values())

    def on_button_pressed(self, event: Button.Pressed) -> None:
        event.stop()
        if event.button.id == "save-host":
            self.wizard.save_host(self.form_values())
        elif event.button.id == "remove-host":
            self.wizard.remove_host(self.query_one(f"#h-{FIELDS[0]}", Input).value.strip())
        elif event.button.id == "import":
            self.wizard.action_import_answers()
        elif event.button.id == "import-inventory":
            self.action_import_inventory()
        elif event.button.id == "test":
            self.wizard.start_action("test", None)

    def action_import_inventory(self) -> None:
        """Replace the host list with the hosts of an Ansible inventory (or ssh_config), read by wizard.inventory."""
        self.wizard.push_screen(AskInventory(), self._inventory_chosen)

    def _inventory_chosen(self, choice: InventoryChoice | None) -> None:
        if choice is None:
            return
        try:
            imported = read_inventory(choice)
        except UsageError as exc:
            self.wizard.notify(str(exc), title="cannot import the inventory", severity="error", timeout=15)
            return
        for warning in imported.warnings:
            self.wizard.notify(warning, severity="warning", timeout=15)
        data = self.wizard.engine.data()
        data["hosts"] = imported.hosts
        group = "" if choice.group == "all" else f" (group {choice.group})"
        self.wizard._hosts_changed(data, f"imported {len(imported.hosts)} hosts from {choice.path}{group}")
        self.refresh_view()
