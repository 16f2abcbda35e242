"""The key bar at the bottom of every screen: one widget that draws the keys as a line of text.

Textual's ``Footer`` recomposes whenever its screen's bindings are refreshed (every page change, focus change, screen
pushed or popped): it removes and mounts one widget per key and styles each, then the screen lays itself out again.
With 1,000 hosts on the page that was most of a page change's time: `b`/`n` between two host pages took 62-74 ms
(p95 106-246 ms) with it and 26-32 ms (p95 37-44 ms) without any key bar (bench.tui_real's page keys on a
1,000-host state). This bar only repaints its one line, and only when the keys shown change; clicking a key
presses it, as on Textual's footer.
"""

from __future__ import annotations

from typing import Any

from rich.style import Style
from rich.text import Text
from textual import events
from textual.screen import Screen
from textual.widget import Widget

Key = tuple[str, str, str, bool, str]
"""What the bar shows of one binding: key, key as displayed, label, enabled, action."""


def shown_keys(screen: Screen[Any]) -> tuple[Key, ...]:
    """The screen's active bindings the bar shows, in their order; the command palette's key goes last."""
    app = screen.app
    keys: list[Key] = []
    palette: Key | None = None
    seen: set[str] = set()
    palette_key = (
        getattr(app, "COMMAND_PALETTE_BINDING", None) if getattr(app, "ENABLE_COMMAND_PALETTE", False) else None
    )
    for _, binding, enabled, _tooltip in screen.active_bindings.values():
        key = (binding.key, app.get_key_display(binding), binding.description, enabled, binding.action)
        if binding.key == palette_key:  # shown at the right end even though its binding is hidden, as on Textual's
            palette = key
        elif binding.show and binding.action not in seen:  # one entry per action, as Textual's footer groups them
            seen.add(binding.action)
            keys.append(key)
    return (*keys, palette) if palette is not None else tuple(keys)


class KeyFooter(Widget):
    """The screen's keys in one line; repainted (never laid out again) when they change."""

    COMPONENT_CLASSES = {"key-bar--key", "key-bar--label"}
    DEFAULT_CSS = """
    KeyFooter {
        dock: bottom;
        height: 1;
        width: 1fr;
        background: $footer-background;
        text-wrap: nowrap;
        text-overflow: clip;
        .key-bar--key { color: $footer-key-foreground; background: $footer-key-background; text-style: bold; }
        .key-bar--label { color: $footer-description-foreground; background: $footer-description-background; }
    }
    """

    def __init__(self) -> None:
        super().__init__()
        self._keys: tuple[Key, ...] = ()
        self._spans: list[tuple[int, int, Key]] = []  # x range of each key on the bar, for clicks

    def on_mount(self) -> None:
        self.screen.bindings_updated_signal.subscribe(self, self.bindings_changed)
        self.bindings_changed(self.screen)

    def on_unmount(self) -> None:
        self.screen.bindings_updated_signal.unsubscribe(self)

    def bindings_changed(self, screen: Screen[Any]) -> None:
        if screen is not self.screen:
            return
        try:
            keys = shown_keys(screen)
        except Exception:  # noqa: BLE001 - a screen still composing may not answer its check_action yet
            return
        if keys != self._keys:
            self._keys = keys
            self.refresh()

    @property
    def labels(self) -> list[str]:
        """The labels shown, in order (tests read them)."""
        return [label for _, _, label, _, _ in self._keys]

    def render(self) -> Text:
        key_style = self.get_component_rich_style("key-bar--key")
        label_style = self.get_component_rich_style("key-bar--label")
        text = Text(no_wrap=True, overflow="crop")
        self._spans = []
        for index, key in enumerate(self._keys):
            _, display, label, enabled, _ = key
            palette = index == len(self._keys) - 1 and key[0] == getattr(self.app, "COMMAND_PALETTE_BINDING", None)
            if palette:  # right-aligned, as on Textual's footer
                width = len(display) + len(label) + 3
                text.append(" " * max(1, self.size.width - text.cell_len - width))
            start = text.cell_len
            dim = Style() if enabled else Style(dim=True)
            text.append(f" {display} ", key_style + dim)
            text.append(f"{label} " if label else "", label_style + dim)
            self._spans.append((start, text.cell_len, key))
        return text

    def on_click(self, event: events.Click) -> None:
        for start, end, (key, _, _, enabled, _) in self._spans:
            if start <= event.x < end:
                if enabled:
                    self.app.simulate_key(key)
                else:
                    self.app.bell()
                return
