"""The hosts page: the host list, a form to add or edit one, import from answers or an inventory, connection test."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal, Vertical
from textual.widgets import Button, Input, Label, Static

from screens.facts_index import FactsIndex, leaf_search
from screens.filter_bar import FilterBar
from screens.fleet import Entry, RowCache, filtered_rows, host_failed, leaf_count
from screens.inventory_dialog import AskInventory, InventoryChoice, read_inventory
from screens.vtable import VirtualTable, update_if_changed
from wizard.errors import UsageError

if TYPE_CHECKING:
    from screens.app import WizardApp

FIELDS = ("name", "address", "port", "user", "identity_file")
EMPTY_HINT = "No hosts yet: add a host below, or import an inventory (i) or an answers file (ctrl+p)."


def _yes_no(value: bool | None) -> Text:
    if value is None:
        return Text("·", style="dim")
    return Text("yes", style="green") if value else Text("NO", style="bold red")


class HostsPage(Vertical):
    """Hosts to bring up, and whether each one answers, logs in and runs sudo."""

    BINDINGS = [Binding("i", "import_inventory", "Import inventory")]
    drawn = 0
    """How many times the table was rebuilt (the scale benchmark waits for it)."""
    _cache: tuple[tuple[int, ...], dict[str, Entry]] | None = None
    _rows: RowCache | None = None

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
        yield FilterBar("/ filter: host, address, leaf · f failed · g leaf", id="hosts-filter")
        yield VirtualTable("name", "leaf", "ssh", "reach", "auth", "sudo", "OS", id="hosts-table")
        yield Static(EMPTY_HINT, id="hosts-empty", classes="hint")
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
        self.refresh_view()
        self.focus_table()

    def on_show(self) -> None:
        self.focus_table()

    def focus_table(self) -> None:
        """The page opens with the host list focused, not the form: keys an operator presses on a list of hosts
        (``/`` to filter, ``h`` to find one, arrows) act on it instead of typing into a host's address."""
        focused = self.screen.focused if self.is_attached else None
        if focused is None or focused not in self.query(Input):
            self.query_one(VirtualTable).focus()

    def _entries(self) -> dict[str, Entry]:
        """Per host its row; rebuilt when hosts, connection reports, progress or facts changed, not on a filter key."""
        wizard = self.wizard
        engine, progress, reports = wizard.engine, wizard.progress, wizard.conn_reports
        source = (
            id(engine.answers),
            id(reports),
            wizard.conn_revision,
            progress.revision,
            id(progress),
            wizard.facts_epoch,
        )
        if self._cache is not None and self._cache[0] == source:
            return self._cache[1]
        index = wizard.facts_index()
        if self._rows is None:
            self._rows = RowCache()
        by_name = {h.name: h for h in engine.answers.hosts}
        revision = progress.host_revision
        entries = self._rows.entries(
            (id(engine.answers), id(reports), id(progress), progress.epoch, id(index), index.epoch),
            by_name,
            lambda name: (revision.get(name), index.stamp(name), reports.get(name)),
            lambda name: self._entry(by_name[name], index),
        )
        self._cache = (source, entries)
        return entries

    def _entry(self, host: Any, index: FactsIndex) -> Entry:
        wizard = self.wizard
        engine, progress, reports = wizard.engine, wizard.progress, wizard.conn_reports
        report = reports.get(host.name)
        ssh = f"{host.user or engine.answers.ssh.user}@{host.address}:{host.port or engine.answers.ssh.port}"
        failed = (report is not None and not report.ok) or host_failed(progress, host.name, progress.stages)
        leaf = index.leaf(host.name) or ""
        label = Text(host.name + (" [sim]" if host.name in progress.simulated_hosts else ""))
        if failed:
            label.stylize("bold red")
        row = [
            label,
            leaf or "·",
            ssh,
            _yes_no(report.reachable if report else None),
            _yes_no(report.authenticated if report else None),
            _yes_no(report.sudo if report else None),
            (report.os if report else "") or "",  # last: a narrow terminal cuts it, not the verdicts
        ]
        words = f"{host.name} {ssh} {leaf} {leaf_search(index, host.name)}"  # '/leaf-r3' finds it
        return Entry(row, failed, words.lower())

    def refresh_view(self) -> None:
        engine = self.wizard.engine
        bar = self.query_one(FilterBar)
        rows, keys, headers, shown = filtered_rows(
            self._entries(),
            bar.filter,
            bar.grouped,
            self.wizard.facts_index().leaf,
            lambda leaf, hosts, failed: [f"▸ {leaf}", "", leaf_count(hosts, failed)],
        )
        self.query_one(VirtualTable).set_rows(rows, keys, headers)
        self.query_one(FilterBar).show_count(shown, len(engine.answers.hosts))
        reports = self.wizard.conn_reports
        # In the host list's order, not the order the answers came in: a reader finds a host where they expect it.
        problems = [f"{h.name}: {r.problem}" for h in engine.answers.hosts if (r := reports.get(h.name)) and r.problem]
        problem = self.query_one("#host-problem", Static)
        update_if_changed(
            problem, "\n".join(problems[:20]) + (f"\n… and {len(problems) - 20} more" if len(problems) > 20 else "")
        )
        problem.display = bool(problems)
        self.query_one("#h-key", Input).value = engine.answers.ssh.identity_file or ""
        self.query_one("#hosts-empty", Static).display = not engine.answers.hosts
        self.drawn += 1

    def on_filter_bar_changed(self, event: FilterBar.Changed) -> None:
        event.stop()
        self.refresh_view()

    def show_host(self, host: str) -> None:
        """The host picker chose ``host``: put the cursor on it (clearing a filter that hides it)."""
        table = self.query_one(VirtualTable)
        if host not in table.keys:
            self.query_one(FilterBar).clear()
            self.refresh_view()
        if host in table.keys:
            table.move_cursor(table.keys.index(host))
            table.focus()

    def on_virtual_table_row_highlighted(self, event: VirtualTable.RowHighlighted) -> None:
        event.stop()
        hosts = {h.name: h for h in self.wizard.engine.answers.hosts}
        host = hosts.get(str(event.key)) if event.key is not None else None
        if host is not None:
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
        """Replace the host list with the hosts of an Ansible inventory (or ssh_config),
        read by wizard.answers.inventory."""
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
