"""Command palette entries: jump to any page, save answers, open a host's full log, extra tools; and the host finder
(h): a palette over the host names alone."""

from __future__ import annotations

import importlib.util
from functools import partial
from typing import TYPE_CHECKING

from rich.text import Text
from textual.command import CommandPalette, DiscoveryHit, Hit, Hits, Provider

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


MAX_HITS = 60
"""Hits listed by the host finder: with 1,000 hosts, typing narrows faster than scrolling a long list."""


def find_hosts(hosts: list[str], query: str, limit: int = MAX_HITS) -> list[tuple[float, str, int]]:
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


class HostFinder(Provider):
    """Substring matches over the host names (fuzzy when nothing contains the query); picking one shows that host
    on the page shown (hosts table row, discovery facts, a stage's log, plan and checks, the summary row)."""

    def _hosts(self) -> list[str]:
        app: WizardApp = self.app  # type: ignore[assignment]
        return app.engine.host_names

    def _about(self, host: str) -> str:
        """The help line of a hit: the host's leaf and the stages it failed."""
        app: WizardApp = self.app  # type: ignore[assignment]
        progress = app.progress
        failed = [s for s in progress.stages if progress.cell(s, host).failed]
        leaf = app.facts_index().leaf(host)
        words = [f"leaf {leaf}"] if leaf else []
        words.append(f"failed: {', '.join(failed)}" if failed else "nothing failed")
        return " · ".join(words)

    def _pick(self, host: str) -> None:
        app: WizardApp = self.app  # type: ignore[assignment]
        if app.main is not None:
            app.main.pick_host(host)

    async def discover(self) -> Hits:
        for host in self._hosts()[:MAX_HITS]:
            yield DiscoveryHit(host, partial(self._pick, host), help=self._about(host))

    async def search(self, query: str) -> Hits:
        hosts = self._hosts()
        found = find_hosts(hosts, query)
        for score, host, at in found:
            text = Text(host)
            text.stylize("bold reverse", at, at + len(query.strip()))
            yield Hit(score, text, partial(self._pick, host), help=self._about(host))
        if found:
            return
        matcher = self.matcher(query)
        hits = 0
        for host in hosts:
            score = matcher.match(host)
            if score > 0:
                yield Hit(score * 0.5, matcher.highlight(host), partial(self._pick, host), help=self._about(host))
                hits += 1
                if hits >= MAX_HITS:
                    return


def host_finder() -> CommandPalette:
    return CommandPalette(providers=[HostFinder], placeholder="Find a host: type part of its name…")
