"""A live log pane with a host picker: shows one host's recent lines; the full log is on disk."""

from __future__ import annotations

from textual.app import ComposeResult
from textual.containers import Horizontal, Vertical
from textual.widgets import Label, Log, Select

from screens.log_buffer import LogBuffers

MAX_LINES = 2000


class LogPanel(Vertical):
    """One Log widget fed in batches; switching host reloads that host's bounded buffer."""

    def __init__(self, buffers: LogBuffers, hosts: list[str], **kwargs: object) -> None:
        super().__init__(**kwargs)  # type: ignore[arg-type]
        self.buffers = buffers
        self.hosts = list(hosts)
        self.host: str | None = self.hosts[0] if self.hosts else None

    def compose(self) -> ComposeResult:
        with Horizontal(classes="log-bar"):
            yield Select(
                [(h, h) for h in self.hosts],
                value=self.host or Select.NULL,
                allow_blank=not self.hosts,
                compact=True,
                id="log-host",
            )
            yield Label("  [ ] other host · L full log", classes="hint")
        yield Log(max_lines=MAX_LINES, id="log")

    def on_mount(self) -> None:
        """A page built after its host's lines arrived (a stage page first opened after a bandwidth test, say)
        shows them: only lines drained while the page is shown reach it through ``ingest``."""
        if self.host is not None:
            self.query_one(Log).write_lines(self.buffers.tail(self.host))

    def set_hosts(self, hosts: list[str], *, keep_host: bool = False) -> None:
        """The hosts [ and ] step through (a filtered list); ``keep_host`` keeps the shown one when it is listed."""
        if hosts == self.hosts and (keep_host or self.host == (hosts[0] if hosts else None)):
            return
        self.hosts = list(hosts)
        select = self.query_one(Select)
        select.set_options([(h, h) for h in hosts])
        if keep_host and self.host in hosts:
            select.value = self.host
            return
        self.show_host(hosts[0] if hosts else None)

    def show_host(self, host: str | None) -> None:
        self.host = host
        select = self.query_one(Select)
        if host is not None and host not in self.hosts:
            # Picked from the search: shown even when the filter hides it from [ / ].
            self.hosts = [*self.hosts, host]
            select.set_options([(h, h) for h in self.hosts])
        if host is not None and select.value != host:
            select.value = host
        log = self.query_one(Log)
        log.clear()
        if host is not None:
            log.write_lines(self.buffers.tail(host))

    def step_host(self, delta: int) -> None:
        if not self.hosts:
            return
        index = self.hosts.index(self.host) if self.host in self.hosts else 0
        self.show_host(self.hosts[(index + delta) % len(self.hosts)])

    def ingest(self, batch: dict[str, list[str]]) -> None:
        """New lines per host; only the shown host's lines touch the screen."""
        if self.host in batch:
            for log in self.query(Log):  # none while the pane is being taken down
                log.write_lines(batch[self.host])

    def on_select_changed(self, event: Select.Changed) -> None:
        event.stop()
        if isinstance(event.value, str) and event.value != self.host:
            self.show_host(event.value)
