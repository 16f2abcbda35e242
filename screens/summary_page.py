"""The summary: every stage on every host, what failed and why, and where the logs are."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from rich.text import Text
from textual.app import ComposeResult
from textual.containers import Vertical
from textual.widgets import Label, Static

from screens.checklist import Checklist
from screens.facts_index import FactsIndex, leaf_search
from screens.filter_bar import FilterBar
from screens.fleet import Entry, RowCache, compress_hosts, filtered_rows, leaf_count, stage_counts, stage_progress_line
from screens.progress import LEGEND, SHORT_STAGE, STATUS_MARK, Progress
from screens.vtable import VirtualTable, update_if_changed

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
STATUS_TEXT = {status: Text(f"  {STATUS_MARK[status]}", style=style) for status, style in STATUS_STYLE.items()}


class SummaryPage(Vertical):
    """A host x stage grid, the failed and warned checks with their evidence, and the log location."""

    DEFAULT_CSS = """
    SummaryPage #sum-progress { height: auto; color: $text-muted; }
    SummaryPage #sum-checks { min-height: 6; }
    """
    drawn = 0
    """How many times the grid was redrawn (the scale benchmark waits for it)."""
    _cache: tuple[tuple[int, int, int], dict[str, Entry]] | None = None
    _rows: RowCache | None = None

    @property
    def wizard(self) -> WizardApp:
        return self.app  # type: ignore[return-value]

    def compose(self) -> ComposeResult:
        yield Label("Summary", id="sum-title", classes="page-title")
        yield Static("", id="sum-progress")
        yield FilterBar("/ filter: host, leaf, check · f failed · g leaf", id="sum-filter")
        stages = [SHORT_STAGE.get(s, s) for s in self.wizard.progress.stages]
        yield VirtualTable("host", *stages, id="grid")
        yield Static(LEGEND, classes="hint")
        yield Static("", id="sum-verdict")
        yield Static("", id="sum-endpoints")
        yield Checklist(with_stage=True, id="sum-checks")
        yield Static("", id="sum-logs", classes="hint")

    def on_mount(self) -> None:
        self.refresh_view()

    def on_resize(self) -> None:
        """The grid gets at most half the page: at 80x24 with hundreds of hosts the failed checks keep their rows."""
        self.query_one("#grid", VirtualTable).styles.max_height = max(4, min(10, self.size.height // 3))

    def _entries(self) -> dict[str, Entry]:
        """Per host its grid row; rebuilt only when the progress or the facts moved, not on a filter key."""
        wizard = self.wizard
        progress = wizard.progress
        source = (progress.revision, id(progress), wizard.facts_epoch)
        if self._cache is not None and self._cache[0] == source:
            return self._cache[1]
        index = wizard.facts_index()
        if self._rows is None:
            self._rows = RowCache()
        entries = self._rows.for_hosts(progress, index, lambda host: self._entry(host, progress, index))
        self._cache = (source, entries)
        return entries

    @staticmethod
    def _entry(host: str, progress: Progress, index: FactsIndex) -> Entry:
        cells = progress.cells
        row: list[Any] = [host + (" [sim]" if host in progress.simulated_hosts else "")]
        failed = False
        for stage in progress.stages:
            cell = cells.get((stage, host)) or progress.cell(stage, host)
            status = "waiting" if cell.status == "pending" and cell.reason else cell.status
            row.append(STATUS_TEXT.get(status) or Text(f"  {status}"))
            failed = failed or cell.failed
        # Every leaf name, not just the group's phrase: '/leaf-r3' finds the hosts cabled to leaf-r3.
        return Entry(row, failed, f"{host} {index.leaf(host) or ''} {leaf_search(index, host)}".lower())

    def refresh_view(self) -> None:
        progress = self.wizard.progress
        bar = self.query_one(FilterBar)
        rows, keys, headers, shown = filtered_rows(
            self._entries(),
            bar.filter,
            bar.grouped,
            self.wizard.facts_index().leaf,
            lambda leaf, hosts, failed: [f"▸ {leaf} ({leaf_count(hosts, failed)})"],
        )
        self.query_one("#grid", VirtualTable).set_rows(rows, keys, headers)
        bar.show_count(shown, len(progress.hosts))
        started = []
        for stage in progress.stages:
            counts = stage_counts(progress, stage)
            if set(counts) != {"pending"}:
                started.append(stage_progress_line(progress, stage))
        update_if_changed(self.query_one("#sum-progress", Static), "\n".join(started))
        self.query_one("#sum-progress", Static).display = bool(started)
        failures = progress.failures()
        verified = all(progress.stage_status(s) in ("done",) for s in progress.stages)
        verdict = self.query_one("#sum-verdict", Static)
        if verified and progress.hosts:
            update_if_changed(verdict, Text("✔ every stage is verified on every host", style="bold green"))
        elif failures:
            update_if_changed(
                verdict,
                Text(f"✘ {attention(failures)}", style="bold red"),
            )
        else:
            update_if_changed(verdict, Text("not finished: some stages are still pending or skipped", style="yellow"))
        endpoints = self._endpoints()
        shown = self.query_one("#sum-endpoints", Static)
        update_if_changed(shown, endpoints)
        shown.display = bool(endpoints.plain)
        self.query_one(Checklist).show(progress, progress.stages, only_problems=True, flt=bar.filter)
        self.drawn += 1
        logs = self.wizard.engine.store.logs_dir
        update_if_changed(
            self.query_one("#sum-logs", Static),
            f"full logs: {logs}/<host>.log  (L opens one) · answers: ctrl+s saves {self.wizard.engine.answers_path}",
        )

    def on_filter_bar_changed(self, event: FilterBar.Changed) -> None:
        event.stop()
        self.refresh_view()

    def show_host(self, host: str) -> None:
        """The host picker chose ``host``: its row and its failed checks only."""
        self.query_one(FilterBar).set_text(host)

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


def attention(failures: list[tuple[str, str, str]]) -> str:
    """What needs the operator, per stage in words: 'discovery: 2 hosts need attention (gpu-005, gpu-009)' (failed,
    or waiting for an answer; their checks are listed below it), the hosts' names compressed and cut short."""
    hosts: dict[str, list[str]] = {}
    for stage, host, _ in failures:
        hosts.setdefault(stage, []).append(host)
    parts = []
    for stage, names in hosts.items():
        count = "1 host needs" if len(names) == 1 else f"{len(names)} hosts need"
        parts.append(f"{stage}: {count} attention ({compress_hosts(names, limit=30)})")
    return " · ".join(parts)
