"""Discovery: per host, the ConnectX ports, RDMA devices, links, MTU, GIDs and GPU affinity; differences marked."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from rich.text import Text
from textual.app import ComposeResult
from textual.containers import Horizontal, Vertical, VerticalScroll
from textual.widgets import Button, DataTable, Label, Static

from screens.facts_index import PORT_COLUMNS, FactsIndex, host_cells, majority, platform_cell, port_cells  # noqa: F401
from screens.filter_bar import FilterBar
from screens.fleet import Entry, RowCache, filtered_rows, leaf_count, problems_label, stage_progress_line
from screens.progress import STATUS_MARK, Progress
from screens.vtable import VirtualTable, update_if_changed
from wizard.engine.events import HOST_READ

if TYPE_CHECKING:
    from screens.app import WizardApp


class DiscoveryPage(Vertical):
    """Every host in a filterable list (leaf, ports up, problems), and the highlighted host's facts with the cells
    that differ from most hosts highlighted, and its problems."""

    DEFAULT_CSS = """
    DiscoveryPage #disc-hosts { height: auto; max-height: 8; }
    """
    drawn = 0
    """How many times the host list was redrawn (the scale benchmark waits for it)."""
    _cache: tuple[tuple[int, ...], dict[str, Entry]] | None = None

    def __init__(self, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.host: str | None = None
        self._rows = RowCache()
        self._ports_key: list[list[tuple[str, str]]] | None = None

    @property
    def wizard(self) -> WizardApp:
        return self.app  # type: ignore[return-value]

    def compose(self) -> ComposeResult:
        yield Label("Discovery", id="disc-title", classes="page-title")
        with Horizontal(classes="log-bar"):
            yield FilterBar("/ filter: host, port, switch, check · f · g", id="disc-filter")
        yield VirtualTable("host", "status", "leaf", "ports", "problems", id="disc-hosts")
        yield Label("yellow: differs from most hosts · red: a problem · [ ] host · h find a host", classes="hint")
        with VerticalScroll(id="disc-body"):
            yield Static("", id="disc-host-facts")
            table: DataTable[Any] = DataTable(zebra_stripes=True, id="ports", cursor_type="row")
            yield table
            yield Static("", id="disc-gpus")
            yield Static("", id="disc-problems")
        with Horizontal(classes="actions"):
            yield Button("Discover (a)", id="discover", variant="primary", compact=True)

    def on_mount(self) -> None:
        self.query_one(DataTable).add_columns(*PORT_COLUMNS)
        self.refresh_view()

    def _entries(self) -> dict[str, Entry]:
        """Per host its row (status, leaf, ports up, problems); a host's row is rebuilt when its progress or its
        facts moved."""
        wizard = self.wizard
        progress, index = wizard.progress, wizard.facts_index()
        source = (progress.revision, id(progress), wizard.facts_epoch)
        if self._cache is not None and self._cache[0] == source:
            return self._cache[1]
        entries = self._rows.for_hosts(progress, index, lambda host: self._entry(host, progress, index))
        self._cache = (source, entries)
        return entries

    @staticmethod
    def _entry(host: str, progress: Progress, index: FactsIndex) -> Entry:
        cell = progress.cell("discovery", host)
        summary = index.summaries.get(host)
        problems = [c for c in cell.checks if c["status"] in ("fail", "warn")]
        failed = cell.status == "failed" or cell.fails > 0
        titles = " ".join(c["title"] for c in problems)
        ports = f"{len(summary.ports) - summary.ports_down}/{len(summary.ports)} up" if summary else "·"
        if problems:
            words = Text(problems_label(problems), style="bold red" if failed else "yellow")
        else:
            words = Text(cell.reason if cell.status == "failed" else "", style="bold red")
        # A host whose facts are in reads "read" while the others are still probed (its row is filled in).
        word = "read" if cell.status == "running" and cell.reason == HOST_READ else cell.status
        status = Text(f"{STATUS_MARK.get(cell.status, '?')} {word}", style="bold red" if failed else "")
        row = [host, status, (summary.leaf if summary else None) or "·", ports, words]
        haystack = f"{host} {summary.search if summary else ''} {titles}".lower()
        return Entry(row, failed, haystack)

    def refresh_view(self) -> None:
        progress = self.wizard.progress
        status = progress.stage_status("discovery")
        title = self.query_one("#disc-title", Label)
        line = stage_progress_line(progress, "discovery").split(": ", 1)[1]
        update_if_changed(title, f"{STATUS_MARK.get(status, '')} Discovery  ·  {line}")
        if not title.has_class(f"st-{status}"):
            title.set_classes(f"page-title st-{status}")
        bar = self.query_one(FilterBar)
        rows, keys, headers, shown = filtered_rows(
            self._entries(),
            bar.filter,
            bar.grouped,
            self.wizard.facts_index().leaf,
            lambda leaf, hosts, failed: [f"▸ {leaf}", leaf_count(hosts, failed)],
        )
        table = self.query_one("#disc-hosts", VirtualTable)
        table.set_rows(rows, keys, headers)
        self.query_one(FilterBar).show_count(shown, len(progress.hosts))
        listed = [k for k in keys if k is not None]
        if self.host not in listed:  # the filter hid it: show what the list shows
            self.host = listed[0] if listed else (progress.hosts[0] if progress.hosts else None)
        if self.host in table.keys and table.cursor_key != self.host:
            table.move_cursor(table.keys.index(self.host), announce=False)
        self._show()
        self.drawn += 1

    def _show(self) -> None:
        index = self.wizard.facts_index()
        facts = index.full(self.host or "")
        summary = self.query_one("#disc-host-facts", Static)
        if facts is None:
            cell = self.wizard.progress.cell("discovery", self.host) if self.host else None
            words = "No facts yet for this host: press a to discover (reads only, changes nothing)."
            if cell is not None and cell.status == "running":
                words = f"{self.host} is being read; its facts show here when it answers."
            elif cell is not None and cell.status == "failed" and cell.reason:
                words = f"No facts for this host: {cell.reason}"
            if not self.wizard.progress.hosts:
                words = "No hosts yet: add them on the Hosts page, then press a to discover."
            update_if_changed(summary, Text(words, style="dim"))
            self._set_ports([])
            update_if_changed(self.query_one("#disc-gpus", Static), "")
            self._problems()
            return
        several = len(index.summaries) > 1
        common_cells = index.majority_cells()
        text = Text()
        text.append(f"{'host':>15}: ", style="dim")
        text.append(f"{self.host}\n", style="bold")
        for key, value in host_cells(facts).items():
            common = common_cells.get(key)
            style = "bold yellow" if several and value != common else ""
            text.append(f"{key:>15}: ", style="dim")
            text.append(value + (f"  (most hosts: {common})" if style else "") + "\n", style=style)
        update_if_changed(summary, text)
        rails = index.majority_ports()
        rows = []
        for number, port in enumerate(facts.rdma_ports()):
            cells = port_cells(port)
            common_port = rails[number] if number < len(rails) else {}
            peers = index.rail_peers(number)
            row = []
            for column in PORT_COLUMNS:
                value = cells[column]
                style = ""
                if column in ("model", "fw", "speed", "mtu") and peers > 1 and value != common_port.get(column):
                    style = "bold yellow"
                if column == "state" and value not in ("active", "up"):
                    style = "bold red"
                if column == "v2 GID" and value == "-":
                    # Without an IPv4 address there is no IPv4 GID yet (the network stage adds them).
                    style = "bold red" if port.ipv4 else "dim"
                row.append(Text(value, style=style))
            rows.append(row)
        self._set_ports(rows)
        gpus = Text()
        for gpu in facts.gpus:
            gpus.append(f"GPU {gpu.index} {gpu.name}", style="bold")
            gpus.append(f"  nearest NIC: {', '.join(gpu.nearest_nics) or '?'}\n")
        update_if_changed(self.query_one("#disc-gpus", Static), gpus)
        self._problems()

    def _set_ports(self, rows: list[list[Text]]) -> None:
        """The ports table, rebuilt only when a cell or its colour changed: refresh_view runs at every redraw while
        a discovery runs, and a DataTable rebuilt is laid out and repainted whole (3 ms a row at 1,000 hosts)."""
        key = [[(cell.plain, str(cell.style)) for cell in row] for row in rows]
        if key == self._ports_key:
            return
        self._ports_key = key
        table = self.query_one("#ports", DataTable)
        table.clear()
        for row in rows:
            table.add_row(*row)

    def _problems(self) -> None:
        cell = self.wizard.progress.cell("discovery", self.host or "")
        text = Text()
        for item in cell.checks:
            if item["status"] in ("fail", "warn"):
                style = "bold red" if item["status"] == "fail" else "yellow"
                text.append(f"{'✘' if item['status'] == 'fail' else '!'} {item['title']}: ", style=style)
                text.append(f"{item.get('evidence', '')}\n")
                if item.get("fix"):
                    text.append(f"   fix: {item['fix']}\n", style="italic")
        if cell.status == "failed" and not text:
            text.append(f"✘ {cell.reason}\n", style="bold red")
        update_if_changed(self.query_one("#disc-problems", Static), text)

    def show_host(self, host: str) -> None:
        """Show ``host`` (from [ / ], the list or the host picker; a filter that hides it is cleared)."""
        table = self.query_one("#disc-hosts", VirtualTable)
        if host not in table.keys:
            self.query_one(FilterBar).clear()
            self.host = host
            self.refresh_view()
            return
        self.host = host
        if table.cursor_key != host:
            table.move_cursor(table.keys.index(host), announce=False)
        self._show()
        self.drawn += 1

    def step_host(self, delta: int) -> None:
        """The next or previous host of the list as filtered."""
        listed = [k for k in self.query_one("#disc-hosts", VirtualTable).keys if k is not None]
        if listed:
            index = listed.index(self.host) if self.host in listed else (-1 if delta > 0 else 0)
            self.show_host(str(listed[(index + delta) % len(listed)]))

    def on_virtual_table_row_highlighted(self, event: VirtualTable.RowHighlighted) -> None:
        event.stop()
        if event.key is not None and event.key != self.host:
            self.show_host(str(event.key))

    def on_filter_bar_changed(self, event: FilterBar.Changed) -> None:
        event.stop()
        self.refresh_view()

    def on_button_pressed(self, event: Button.Pressed) -> None:
        event.stop()
        self.wizard.start_action("apply", "discovery")
