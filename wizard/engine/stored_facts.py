"""Every host's facts, read from the state directory when first asked for, not all when the run opens.

A run that never looks at the saved facts (``bwtest``, ``verify`` of one stage, the TUI's first screen) should not
hold them: at 1,024 hosts they are tens of megabytes of JSON and several times that as Python objects, and bwtest's
controller peaked above its memory goal on them before a single test ran."""

from __future__ import annotations

from collections.abc import Iterator, MutableMapping
from typing import Any

from wizard.engine.state import StateStore

Facts = dict[str, Any]


class StoredFacts(MutableMapping[str, Facts]):
    """``{host: facts}`` for the answers' hosts (and any host set later), each loaded on its first use."""

    def __init__(self, store: StateStore, hosts: list[str]) -> None:
        self._store = store
        self._hosts = dict.fromkeys(hosts)  # an ordered set: `in` is asked for every host
        self._loaded: dict[str, Facts] = {}

    def __getitem__(self, host: str) -> Facts:
        if host not in self._loaded:
            if host not in self._hosts:
                raise KeyError(host)
            self._loaded[host] = self._store.load_facts(host)
        return self._loaded[host]

    def __setitem__(self, host: str, facts: Facts) -> None:
        self._hosts[host] = None
        self._loaded[host] = facts

    def __delitem__(self, host: str) -> None:
        del self._hosts[host]
        self._loaded.pop(host, None)

    def __iter__(self) -> Iterator[str]:
        return iter(list(self._hosts))

    def __len__(self) -> int:
        return len(self._hosts)

    def __contains__(self, host: object) -> bool:
        return host in self._hosts

    def loaded(self) -> int:
        """How many hosts' facts are in memory (for tests and the memory benchmark)."""
        return len(self._loaded)
