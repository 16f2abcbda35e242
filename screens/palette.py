"""Command palette entries: jump to any page, save answers, open a host's full log, extra tools (the host finder, h,
is screens/host_finder.py)."""

from __future__ import annotations

import importlib.util
from functools import partial
from typing import TYPE_CHECKING

from textual.command import Hit, Hits, Provider

if TYPE_CHECKING:
    from screens.app import WizardApp


class WizardCommands(Provider):
    """Every page, every host's log, and the answers file."""

    def _commands(self) -> list[tuple[str, object, str]]:
        app: WizardApp = self.app  # type: ignore[assignment]
        found: list[tuple[str, object, str]] = []
        if app.main is not None:
            for page, title in app.pages():
                found.append((f"Go to {title}", partial(app.main.show_page, page), f"open the {page} page"))
            found.append(("Run report", app.main.action_report, "write the whole run as one HTML page (R)"))
        found.append(("Save answers", app.action_save_answers, "write the answers file headless mode replays"))
        found.append(("Import answers", app.action_import_answers, "load hosts and answers from a file"))
        for host in app.engine.host_names:
            found.append((f"Full log: {host}", partial(app.open_full_log, host), "open the log file from disk"))
        if importlib.util.find_spec("screens.bwtest") is not None:
            found.append(("Bandwidth test", app.open_bandwidth_test, "ib_write_bw between hosts, per rail (B)"))
        if importlib.util.find_spec("screens.doctor") is not None:
            found.append(("Doctor", app.open_doctor, "diagnose what stands between the hosts and a working fabric"))
        return found

    async def search(self, query: str) -> Hits:
        matcher = self.matcher(query)
        for name, callback, help_text in self._commands():
            score = matcher.match(name)
            if score > 0:
                yield Hit(score, matcher.highlight(name), callback, help=help_text)  # type: ignore[arg-type]
