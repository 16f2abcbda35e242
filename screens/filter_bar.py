"""The filter line of the pages that list hosts: free text (host, port, check, switch), failed only, group by leaf."""

from __future__ import annotations

from textual.app import ComposeResult
from textual.containers import Horizontal
from textual.message import Message
from textual.widgets import Input, Label

from screens.fleet import HostFilter
from screens.vtable import update_if_changed


class FilterBar(Horizontal):
    """An input and a status label; posts ``Changed`` with the new ``HostFilter`` on every edit or toggle."""

    DEFAULT_CSS = """
    FilterBar { height: 1; width: 1fr; }
    FilterBar Input { width: 1fr; max-width: 50; }
    FilterBar .filter-state { width: auto; color: $text-muted; padding-left: 1; }
    """

    class Changed(Message):
        """The filter changed (text typed, or failed-only / grouping toggled)."""

        def __init__(self, bar: FilterBar, value: HostFilter) -> None:
            self.bar = bar
            self.filter = value
            super().__init__()

    def __init__(self, placeholder: str = "filter: host, port, check, switch (/)", **kwargs: object) -> None:
        super().__init__(**kwargs)  # type: ignore[arg-type]
        self.placeholder = placeholder
        self.filter = HostFilter()
        self.grouped = False

    def compose(self) -> ComposeResult:
        yield Input(placeholder=self.placeholder, compact=True, classes="filter-text")
        yield Label("", classes="filter-state")

    def focus_text(self) -> None:
        # At once, not with Widget.focus(): that defers the move behind the keys already queued, so a burst such as
        # "/leaf" (a fast typist, a paste) would send "leaf" to the page's bindings, and "a" starts the stage.
        self.screen.set_focus(self.query_one(Input))

    def set_text(self, text: str) -> None:
        self.query_one(Input).value = text  # Input.Changed follows

    def clear(self) -> None:
        """Show every row again (the grouping stays)."""
        self.filter = HostFilter()
        self.query_one(Input).value = ""

    def toggle_failed(self) -> HostFilter:
        self.filter = HostFilter(self.filter.text, not self.filter.failed_only)
        self.post_message(self.Changed(self, self.filter))
        return self.filter

    def toggle_grouped(self) -> bool:
        self.grouped = not self.grouped
        self.post_message(self.Changed(self, self.filter))
        return self.grouped

    def show_count(self, shown: int, total: int, noun: str = "hosts") -> None:
        """'37/1000 hosts (failed only) · by leaf · f failed · g group'."""
        words = self.filter.describe(shown, total, noun)
        if self.grouped:
            words += " · by leaf"
        update_if_changed(self.query_one(".filter-state", Label), words)

    def on_input_changed(self, event: Input.Changed) -> None:
        event.stop()
        if event.value != self.filter.text:
            self.filter = HostFilter(event.value, self.filter.failed_only)
            self.post_message(self.Changed(self, self.filter))

    def on_input_submitted(self, event: Input.Submitted) -> None:
        # Pages treat their own inputs' enter as "save": the filter's enter only hands focus back to the list.
        event.stop()
        self.screen.focus_next()
