"""A scrape of the whole cluster: every host read at once (one batch each, bounded), the port list and the lint
kept from the validation probes and refreshed in the background so a scrape never waits for them."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from wizard.answers.model import Answers
from wizard.metrics.collect import HostReading, Port, read_host

LINT_INTERVAL_S = 300.0  # the lint re-reads discovery and QoS on every host: minutes apart, never per scrape
RETRY_TOPOLOGY_S = 30.0  # a host whose ports are not known yet (down at start) is probed again this often


@dataclass(slots=True)
class LintItem:
    """One lint check as the exporter shows it."""

    id: str
    status: str  # pass / warn / fail
    evidence: str = ""


@dataclass(slots=True)
class Snapshot:
    """Everything one scrape exposes."""

    hosts: dict[str, HostReading]
    priority: int
    simulated: bool = False
    lint: list[LintItem] | None = None
    lint_time: float | None = None
    last_success: dict[str, float] = field(default_factory=dict)
    duration_s: float = 0.0


def ports_of(facts: Any) -> list[Port]:
    """The rail ports of a host from its validation facts (wizard/validate/hostfacts.py HostFacts.rails)."""
    return [
        Port(p.netdev, p.rdma_device, p.rdma_port or 1, rail)
        for rail, p in enumerate(facts.rails())
        if p.netdev and p.rdma_device
    ]


class Scraper:
    """Reads the cluster through the session's executors; one scrape at a time (a lock), each bounded."""

    def __init__(
        self,
        answers: Answers,
        executors: Mapping[str, Any],
        *,
        timeout_s: float = 5.0,
        simulated: bool = False,
        lint_interval_s: float = LINT_INTERVAL_S,
    ) -> None:
        self.answers = answers
        self.executors = dict(executors)
        self.timeout_s = timeout_s
        self.simulated = simulated
        self.lint_interval_s = lint_interval_s
        self.topology: dict[str, list[Port]] = {}
        self.lint: list[LintItem] | None = None
        self.lint_time: float | None = None
        self.last_success: dict[str, float] = {}
        self.probe_errors: dict[str, str] = {}  # hosts whose last probe failed: why
        self._refreshed_at: float | None = None  # monotonic
        self._refresh: asyncio.Task[None] | None = None
        self._lock = asyncio.Lock()

    @property
    def hosts(self) -> list[str]:
        return [h.name for h in self.answers.hosts if h.name in self.executors]

    async def refresh(self) -> None:
        """Probe every host as validation does (discovery + roce facts): its rail ports and the lint."""
        from steps.discovery.facts import DiscoveryFacts
        from wizard.validate.hostfacts import HostFacts, probe_host
        from wizard.validate.lint import lint

        limit = max(30.0, 6 * self.timeout_s)  # a full probe is several round trips, not one batch

        async def one(name: str) -> HostFacts:
            try:
                return await asyncio.wait_for(probe_host(self.answers, name, self.executors[name]), limit)
            except TimeoutError:
                return HostFacts(name, DiscoveryFacts(), error=f"{name}: no answer within {limit:g} s")

        self._refreshed_at = time.monotonic()
        facts = dict(zip(self.hosts, await asyncio.gather(*(one(n) for n in self.hosts)), strict=True))
        for name, f in facts.items():
            if f.error is None or ports_of(f):
                self.topology[name] = ports_of(f)
            if f.error is None:
                self.probe_errors.pop(name, None)
            else:
                self.probe_errors[name] = f.error
        self.lint = [LintItem(c.id, c.status, c.evidence) for c in lint(self.answers, facts)]
        self.lint_time = time.time()

    def _refresh_due(self) -> bool:
        if self._refreshed_at is None:
            return True
        age = time.monotonic() - self._refreshed_at
        missing = any(h not in self.topology for h in self.hosts)
        return age >= self.lint_interval_s or (missing and age >= RETRY_TOPOLOGY_S)

    def start_refresh(self) -> None:
        """Refresh in the background when due (the scrape serves what it has meanwhile)."""
        if self._refresh_due() and (self._refresh is None or self._refresh.done()):
            self._refresh = asyncio.create_task(self.refresh())

    async def close(self) -> None:
        if self._refresh is not None and not self._refresh.done():
            self._refresh.cancel()
            await asyncio.gather(self._refresh, return_exceptions=True)

    async def _read(self, name: str, priority: int) -> HostReading:
        if name not in self.topology and name in self.probe_errors:
            # never probed successfully: nothing to read until the background refresh reaches it
            return HostReading(name, reason="unreachable", detail=self.probe_errors[name])
        return await read_host(name, self.executors[name], self.topology.get(name, []), priority, self.timeout_s)

    async def scrape(self) -> Snapshot:
        """Read every host at once; a slow or dead host is stale after ``timeout_s`` and never delays the others."""
        async with self._lock:
            start = time.monotonic()
            priority = self.answers.roce.priority
            names = self.hosts
            readings = await asyncio.gather(*(self._read(n, priority) for n in names))
            hosts = dict(zip(names, readings, strict=True))
            for name, r in hosts.items():
                if r.finished_at is not None:
                    self.last_success[name] = r.finished_at
            return Snapshot(
                hosts=hosts,
                priority=priority,
                simulated=self.simulated,
                lint=self.lint,
                lint_time=self.lint_time,
                last_success=dict(self.last_success),
                duration_s=time.monotonic() - start,
            )
