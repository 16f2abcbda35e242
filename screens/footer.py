"""The key bar at the bottom of every screen, rebuilt only when the keys it shows change.

Textual's ``Footer`` recomposes (removes and mounts one widget per key, and restyles each) whenever its screen's
bindings are refreshed: on every focus change, page change, screen pushed or popped. The keys shown are most often
the same. Profiled on a 300-host discovery driven by bench/tui_real.py's operator, those recomposes took about a
tenth of the screen loop's time, and every key that moved the focus (the filter, the host finder) paid one.
"""

from __future__ import annotations

from typing import Any

from textual.screen import Screen
from textual.widgets import Footer


def shown_keys(screen: Screen[Any]) -> tuple[tuple[str, str, str, bool, str], ...]:
    """What the footer draws from the screen's active bindings: key, label, action, enabled, tooltip."""
    return tuple(
        (binding.key_display or binding.key, binding.description, binding.action, enabled, tooltip)
        for (_, binding, enabled, tooltip) in screen.active_bindings.values()
        if binding.show
    )


class KeyFooter(Footer):
    """A ``Footer`` that skips rebuilding when the keys to show are those already shown."""

    _shown: tuple[tuple[str, str, str, bool, str], ...] | None = None  # None: unknown, rebuild

    def bindings_changed(self, screen: Screen[Any]) -> None:
        # Footer recomposes only once ready, with the app focused and on its own screen: the keys are remembered
        # only when it will.
        if self._bindings_ready and screen.app.app_focus and self.is_attached and screen is self.screen:
            try:
                keys = shown_keys(screen)
            except Exception:  # noqa: BLE001 - a screen still composing may not answer its check_action yet
                keys = None
            if keys is not None and keys == self._shown:
                return
            self._shown = keys
        super().bindings_changed(screen)
