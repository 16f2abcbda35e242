"""The host finder (h): a box over the page that lists the hosts whose names hold what was typed; Enter shows the
highlighted one on the page (hosts table row, discovery facts, a stage's log, plan and checks, the summary row).

It lives on the main screen instead of a pushed command palette: the palette is a screen of its own with a
see-through background, so opening it and every key typed into it composed the whole 160x50 frame, page beneath
included (p95 273-463 ms per key while 1,000 hosts were being discovered, bench/tui_real.py). Here a key repaints
the box alone."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Vertical
from textual.fuzzy import FuzzySearch
from textual.widget import Widget
from textual.widgets import Input, Label, OptionList
from textual.widgets.option_list import Option

from screens.vtable import update_if_changed

if TYPE_CHECKING:
    from screens.app import WizardApp

SHOWN = 12
"""Hits listed at once: with 1,000 hosts, typing narrows faster than scrolling a long list."""

WIDTH = 72


def find_hosts(hosts: list[str], query: str, limit: int | None = SHOWN) -> list[tuple[float, str, int]]:
    """(score, host, where the query starts) for hosts containing the query, best first: a whole name, then names
    starting with it, then the earliest match; ties keep the host order."""
    q = query.strip().lower()
    found = []
    for order, host in enumerate(hosts):
        at = host.lower().find(q)
        if at >= 0:
            score = 1.0 if len(q) == len(host) else 0.9 if at == 0 else 0.8 - min(at, 40) / 100
            found.append((score, order, host, at))
    found.sort(key=lambda item: (-item[0], item[1]))
    return [(score, host, at) for score, _, host, at in found[:limit]]


def fuzzy_hosts(hosts: list[str], query: str) -> list[tuple[float, Text]]:
    """When no name contains the query: names holding its letters in order ("g0200" finds gpu-0200), best first."""
    search = FuzzySearch()
    scored = []
    for host in hosts:
        score, offsets = search.match(query, host)
        if score > 0:
            text = Text(host)
            for at in offsets:
                text.stylize("bold reverse", at, at + 1)
            scored.append((score, text))
    scored.sort(key=lambda item: -item[0])
    return scored


class HostFinder(Vertical):
    """Hidden until ``h``: an input and the hosts matching it. Enter picks, Escape closes; up and down move."""

    DEFAULT_CSS = f"""
    HostFinder {{
        layer: finder;
        dock: top;
        display: none;
        width: {WIDTH};
        height: auto;
        max-height: {SHOWN + 5};
        margin-top: 1;
        background: $panel;
        border: tall $accent;
        padding: 0 1;
    }}
    HostFinder > #finder-input {{ border: none; height: 1; padding: 0; background: $boost; }}
    HostFinder > #finder-hits {{ border: none; height: auto; max-height: {SHOWN}; padding: 0; }}
    HostFinder > #finder-count {{ color: $text-muted; width: 100%; height: 1; }}
    """

    BINDINGS = [
        Binding("escape", "close", "Close", show=False),
        Binding("down", "move(1)", show=False),
        Binding("up", "move(-1)", show=False),
    ]

    def __init__(self, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self._before: Widget | None = None
        self._hosts: list[str] = []  # the hit for each option, in order

    @property
    def wizard(self) -> WizardApp:
        return self.app  # type: ignore[return-value]

    def compose(self) -> ComposeResult:
        yield Input(placeholder="Find a host: type part of its name…", id="finder-input")
        yield OptionList(id="finder-hits")
        yield Label("", id="finder-count")

    @property
    def is_open(self) -> bool:
        return bool(self.display)

    def open(self) -> None:
        """Show the box centred over the page, focus the input, list the first hosts."""
        if self.is_open:
            return
        self._before = self.app.focused
        self.styles.margin = (1, 0, 0, max(0, (self.screen.size.width - WIDTH) // 2))
        field = self.query_one(Input)
        field.value = ""
        self._show_hits("")
        self.display = True
        field.focus()

    def action_close(self) -> None:
        self.display = False
        before, self._before = self._before, None
        if before is not None and before.is_attached and before.focusable:
            before.focus()
        else:
            self.screen.set_focus(None)

    def action_move(self, step: int) -> None:
        hits = self.query_one(OptionList)
        if hits.option_count:
            now = hits.highlighted if hits.highlighted is not None else -step
            hits.highlighted = max(0, min(hits.option_count - 1, now + step))

    def on_input_changed(self, event: Input.Changed) -> None:
        event.stop()
        self._show_hits(event.value)

    def on_input_submitted(self, event: Input.Submitted) -> None:
        event.stop()
        hits = self.query_one(OptionList)
        if hits.highlighted is not None and hits.highlighted < len(self._hosts):
            self._pick(self._hosts[hits.highlighted])

    def on_option_list_option_selected(self, event: OptionList.OptionSelected) -> None:
        event.stop()  # a click on a hit
        self._pick(self._hosts[event.option_index])

    def _pick(self, host: str) -> None:
        self.action_close()
        if self.wizard.main is not None:
            self.wizard.main.pick_host(host)

    def _show_hits(self, query: str) -> None:
        hosts = self.wizard.engine.host_names
        if not query.strip():
            found = [(host, Text(host)) for host in hosts]
        else:
            found = []
            for _, host, at in find_hosts(hosts, query, limit=None):
                text = Text(host)
                text.stylize("bold reverse", at, at + len(query.strip()))
                found.append((host, text))
            if not found:
                found = [(text.plain, text) for _, text in fuzzy_hosts(hosts, query)]
        shown = found[:SHOWN]
        self._hosts = [host for host, _ in shown]
        hits = self.query_one(OptionList)
        hits.set_options(Option(self._line(host, text)) for host, text in shown)
        if shown:
            hits.highlighted = 0
        more = len(found) - len(shown)
        count = f"{len(found)} of {len(hosts)} hosts" + (", keep typing to narrow" if more > 0 else "")
        keys = " · ↑↓ move · Enter show · Esc close"
        # A fixed-size label updated without a layout: each key repaints the box alone (update_if_changed).
        update_if_changed(self.query_one("#finder-count", Label), (count if found else "no host matches") + keys)

    def _line(self, host: str, name: Text) -> Text:
        """A hit: the name (match marked), the stages it failed (first: what the operator is usually after), then its
        leaf, dimmed."""
        progress = self.wizard.progress
        failed = [s for s in progress.stages if progress.cell(s, host).failed]
        leaf = self.wizard.facts_index().leaf(host)
        line = name.copy()
        line.pad_right(max(1, 18 - len(host)))
        if failed:
            line.append(f"failed: {', '.join(failed)}  ", style="red")
        if leaf:
            line.append(f"leaf {leaf}", style="dim")
        line.truncate(WIDTH - 6, overflow="ellipsis")  # one line per hit: a long leaf list must not wrap
        return line
