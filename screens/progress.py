"""What the wizard shows about a run: status per (stage, host), checks, plans; fed by runner events.

Pure Python (no Textual) so the bookkeeping is tested on its own; widgets read it, the app feeds it.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Any

from wizard.engine.events import PROBING, Event
from wizard.engine.interactive import StageProgress

STATUS_MARK = {
    "done": "✔",
    "failed": "✘",
    "running": "…",
    "interrupted": "…",  # a stage a stopped run left (SIGINT, SIGTERM, quit): resumed like a running one
    "pending": "·",
    "skipped": "–",
    "waiting": "?",
}
SHORT_STAGE = {"discovery": "discov", "network": "net", "gpudirect": "gdr", "inference": "infer"}
"""Column headers of the host x stage grids, short enough for 80 columns."""
LEGEND = "✔ done  ✘ failed  … running/interrupted  ? waiting for you  · pending  – skipped"


@dataclass(slots=True)
class Cell:
    """One stage on one host."""

    status: str = "pending"
    reason: str = ""
    checks: list[dict[str, Any]] = field(default_factory=list)
    plan: dict[str, Any] | None = None
    summary: list[str] = field(default_factory=list)
    fails: int = 0
    """Failed checks among ``checks`` (kept as they arrive: a filter asks it of 1,000 hosts on every redraw)."""

    @property
    def failed(self) -> bool:
        """Failed, waiting for the operator, or with a failed check."""
        return self.status == "failed" or (self.status == "pending" and bool(self.reason)) or self.fails > 0


@dataclass(slots=True)
class StageClock:
    """When a stage started in this session and how many hosts have been read since: the rate an ETA is drawn
    from. A host is read when it leaves "running: probing" for "read" or "done" (a failure says nothing of the
    time a probe takes)."""

    started: float
    finished: int = 0
    last: float = 0.0

    def eta_s(self, probing: int, now: float | None = None) -> float | None:
        """Seconds until the ``probing`` hosts are read at the rate seen so far; None before the first host."""
        if not self.finished or not probing:
            return None
        elapsed = (time.monotonic() if now is None else now) - self.started
        return probing * elapsed / self.finished


class Progress:
    """Status of every stage on every host, updated from runner events and from saved state."""

    def __init__(self, stages: list[str], hosts: list[str]) -> None:
        self.stages = list(stages)
        self.hosts = list(hosts)
        self.cells: dict[tuple[str, str], Cell] = {}
        self.simulated_hosts: set[str] = set()
        self.current_change: dict[str, str] = {}
        self.clocks: dict[str, StageClock] = {}
        """Per stage run in this session, the rate hosts finish their probe (for the ETA)."""
        self.revision = 0
        """Bumped on every change: views that are costly to rebuild skip the rebuild when it has not moved."""
        self.host_revision: dict[str, int] = {}
        """Per host, the revision of the last change that concerned it: a page rebuilds only those hosts' rows."""
        self.epoch = 0
        """Bumped when every host's row may have changed (hosts replaced, saved progress loaded, a stage started)."""
        self.stage_revision: dict[str, int] = {}
        """Per stage, the revision of its last change: the sidebar asks every stage's status at every redraw, a
        walk over every host each (9 stages x 1,000 hosts: 11 ms of a 28 ms redraw), for stages that did not move."""
        self._status_cache: dict[str, tuple[tuple[int, int, int], str]] = {}

    def cell(self, stage: str, host: str) -> Cell:
        found = self.cells.get((stage, host))  # no throwaway Cell per lookup: pages look up 7,000 per redraw
        if found is None:
            found = self.cells[(stage, host)] = Cell()
        return found

    def set_hosts(self, hosts: list[str]) -> None:
        self.hosts = list(hosts)
        self.revision += 1
        self.epoch += 1

    def load_saved(self, saved: dict[str, dict[str, StageProgress]], checks: dict[tuple[str, str], list]) -> None:
        """Start from what the state directory says (resume)."""
        self.revision += 1
        self.epoch += 1
        for host, row in saved.items():
            for stage, progress in row.items():
                cell = self.cell(stage, host)
                cell.status = "failed" if progress.status in ("running", "interrupted") else progress.status
                cell.reason = progress.reason if progress.status != "running" else "interrupted: " + progress.reason
                cell.checks = [
                    c.model_dump() if hasattr(c, "model_dump") else dict(c) for c in checks.get((stage, host), [])
                ]
                cell.fails = sum(1 for c in cell.checks if c.get("status") == "fail")

    def apply(self, event: Event) -> str | None:
        """Record one event; returns the stage it concerns (None when it concerns none)."""
        d = event.data
        stage, host = d.get("stage"), d.get("host")
        self.revision += 1
        if host:
            self.host_revision[host] = self.revision
        if stage:
            self.stage_revision[stage] = self.revision
        if event.kind == "host_simulated" and host:
            self.simulated_hosts.add(host)
            return None
        if event.kind == "stage_started" and stage:
            self.epoch += 1
            self.clocks[stage] = StageClock(time.monotonic())
            for h in self.hosts:
                cell = self.cell(stage, h)
                cell.checks, cell.fails = [], 0
            return stage
        if not stage or not host:
            return None
        cell = self.cell(stage, host)
        if event.kind == "host_status":
            clock = self.clocks.get(stage)
            probed = cell.status == "running" and cell.reason == PROBING and d.get("reason") != PROBING
            # Only hosts read count for the rate: a host that fails (a refused connection) does so at once, and one
            # in 0.1 s promised 20 minutes for 1,000 hosts.
            if clock is not None and probed and d["status"] not in ("failed", "interrupted"):
                clock.finished += 1
                clock.last = time.monotonic()
            # a stopped run's hosts show as failed (the reason says "interrupted by ..."), as on resume
            cell.status = "failed" if d["status"] == "interrupted" else d["status"]
            cell.reason = d.get("reason", "")
            if cell.status != "running":
                self.current_change.pop(host, None)
        elif event.kind == "plan":
            cell.plan = {k: v for k, v in d.items() if k not in ("stage", "host")}
        elif event.kind == "check":
            cell.checks.append({k: v for k, v in d.items() if k not in ("stage", "host")})
            cell.fails += d.get("status") == "fail"
        elif event.kind == "summary":
            cell.summary = list(d.get("lines", []))
        elif event.kind == "change_started":
            self.current_change[host] = d.get("summary", "")
        return stage

    def stage_status(self, stage: str) -> str:
        """One word for a stage across hosts: failed beats running beats waiting beats pending."""
        key = (self.stage_revision.get(stage, 0), self.epoch, len(self.hosts))
        cached = self._status_cache.get(stage)
        if cached is not None and cached[0] == key:
            return cached[1]
        status = self._stage_status(stage)
        self._status_cache[stage] = (key, status)
        return status

    def _stage_status(self, stage: str) -> str:
        if not self.hosts:
            return "pending"
        seen: set[str] = set()
        waiting = False
        for h in self.hosts:
            cell = self.cell(stage, h)
            seen.add(cell.status)
            waiting = waiting or (cell.status == "pending" and bool(cell.reason))
        for word in ("running", "failed"):
            if word in seen:
                return word
        if waiting:
            return "waiting"
        if seen == {"done"}:
            return "done"
        if seen <= {"done", "skipped"}:
            return "skipped" if seen == {"skipped"} else "done"
        return "pending"

    def counts(self, stage: str) -> dict[str, int]:
        result: dict[str, int] = {}
        for host in self.hosts:
            status = self.cell(stage, host).status
            result[status] = result.get(status, 0) + 1
        return result

    def failures(self) -> list[tuple[str, str, str]]:
        """(stage, host, reason) for every failed or waiting cell, in stage order."""
        found = []
        for stage in self.stages:
            for host in self.hosts:
                cell = self.cell(stage, host)
                if cell.status == "failed" or (cell.status == "pending" and cell.reason):
                    found.append((stage, host, cell.reason))
        return found
