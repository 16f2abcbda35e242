"""What the wizard shows about a run: status per (stage, host), checks, plans; fed by runner events.

Pure Python (no Textual) so the bookkeeping is tested on its own; widgets read it, the app feeds it.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from wizard.events import Event
from wizard.interactive import StageProgress

STATUS_MARK = {
    "done": "✔",
    "failed": "✘",
    "running": "…",
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


class Progress:
    """Status of every stage on every host, updated from runner events and from saved state."""

    def __init__(self, stages: list[str], hosts: list[str]) -> None:
        self.stages = list(stages)
        self.hosts = list(hosts)
        self.cells: dict[tuple[str, str], Cell] = {}
        self.simulated_hosts: set[str] = set()
        self.current_change: dict[str, str] = {}

    def cell(self, stage: str, host: str) -> Cell:
        return self.cells.setdefault((stage, host), Cell())

    def set_hosts(self, hosts: list[str]) -> None:
        self.hosts = list(hosts)

    def load_saved(self, saved: dict[str, dict[str, StageProgress]], checks: dict[tuple[str, str], list]) -> None:
        """Start from what the state directory says (resume)."""
        for host, row in saved.items():
            for stage, progress in row.items():
                cell = self.cell(stage, host)
                cell.status = "failed" if progress.status == "running" else progress.status
                cell.reason = progress.reason if progress.status != "running" else "interrupted: " + progress.reason
                cell.checks = [
                    c.model_dump() if hasattr(c, "model_dump") else dict(c) for c in checks.get((stage, host), [])
                ]

    def apply(self, event: Event) -> str | None:
        """Record one event; returns the stage it concerns (None when it concerns none)."""
        d = event.data
        stage, host = d.get("stage"), d.get("host")
        if event.kind == "host_simulated" and host:
            self.simulated_hosts.add(host)
            return None
        if event.kind == "stage_started" and stage:
            for h in self.hosts:
                self.cell(stage, h).checks = []
            return stage
        if not stage or not host:
            return None
        cell = self.cell(stage, host)
        if event.kind == "host_status":
            cell.status = d["status"]
            cell.reason = d.get("reason", "")
            if cell.status != "running":
                self.current_change.pop(host, None)
        elif event.kind == "plan":
            cell.plan = {k: v for k, v in d.items() if k not in ("stage", "host")}
        elif event.kind == "check":
            cell.checks.append({k: v for k, v in d.items() if k not in ("stage", "host")})
        elif event.kind == "summary":
            cell.summary = list(d.get("lines", []))
        elif event.kind == "change_started":
            self.current_change[host] = d.get("summary", "")
        return stage

    def stage_status(self, stage: str) -> str:
        """One word for a stage across hosts: failed beats running beats waiting beats pending."""
        statuses = [self.cell(stage, h).status for h in self.hosts]
        if not statuses:
            return "pending"
        for word in ("running", "failed"):
            if word in statuses:
                return word
        if "pending" in statuses and any(
            self.cell(stage, h).reason for h in self.hosts if self.cell(stage, h).status == "pending"
        ):
            return "waiting"
        if all(s == "done" for s in statuses):
            return "done"
        if all(s in ("done", "skipped") for s in statuses):
            return "skipped" if all(s == "skipped" for s in statuses) else "done"
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
