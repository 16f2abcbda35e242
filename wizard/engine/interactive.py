"""Engine helpers the interactive wizard needs beside Runner.run: verify only, skip, saved progress per stage."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

from wizard.engine.runner import Runner, StageOutcome
from wizard.engine.state import StateStore, now


async def verify_stage(
    runner: Runner, stage: str, only: list[str] | None = None, *, fresh_discovery: bool = False
) -> StageOutcome:
    """Probe and check ``stage`` on every host (or the ``only`` ones, the others left as saved) without changing
    anything; statuses are saved as in a run. ``fresh_discovery``: the caller has just read discovery again."""
    outcome = StageOutcome(stage)
    runner.bus.emit("stage_started", stage=stage, title=runner.steps[stage].title)
    if stage != "discovery" and "discovery" in runner.steps and not fresh_discovery:
        await runner._refresh_discovery(only)
    hosts = [h for h in runner._hosts_in_run() if only is None or h in only]
    for host in [h.name for h in runner.answers.hosts if h.name not in hosts and (only is None or h.name in only)]:
        runner._finish(stage, host, "skipped", runner._out_of_run[host], outcome)
    for host in hosts:
        runner._set(stage, host, "running", "verifying (no changes)")
    await runner._probe_hosts(stage, hosts, outcome)
    remaining = [h for h in hosts if h not in outcome.statuses]
    await runner._cluster_probe(stage, remaining, outcome)
    runner._verify(stage, [h for h in remaining if h not in outcome.statuses], outcome)
    runner.bus.emit("stage_finished", stage=stage, statuses=dict(outcome.statuses))
    return outcome


@contextmanager
def failed_checks(runner: Runner) -> Iterator[dict[tuple[str, str], list[dict[str, Any]]]]:
    """The failed checks, by (stage, host), of whatever is verified while the block runs."""
    found: dict[tuple[str, str], list[dict[str, Any]]] = {}

    def collect(event: Any) -> None:
        d = event.data
        if event.kind == "check" and d.get("status") == "fail":
            found.setdefault((d["stage"], d["host"]), []).append(d)

    runner.bus.subscribe(collect)
    try:
        yield found
    finally:
        runner.bus.unsubscribe(collect)


def what_failed(runner: Runner, found: dict[tuple[str, str], list[dict[str, Any]]], stage: str, host: str) -> list:
    """The host's failed checks for ``stage``, or its saved reason as one (a probe that failed has no checks)."""
    return found.get((stage, host)) or [{"title": stage, "evidence": runner.store.host(host).stage(stage).reason}]


def skip_stage(store: StateStore, stage: str, hosts: list[str], reason: str) -> None:
    """Record that the operator skipped ``stage``; a later run still re-checks it."""
    for host in hosts:
        record = store.host(host).stage(stage)
        record.status = "skipped"
        record.reason = reason
        record.finished_at = now()
        store.save_host(host)


@dataclass(frozen=True, slots=True)
class StageProgress:
    """Where one stage stands on one host, as saved."""

    status: str
    reason: str


def saved_progress(store: StateStore, hosts: list[str], stages: list[str]) -> dict[str, dict[str, StageProgress]]:
    """Saved status of every (host, stage); a stage never started reads as pending."""
    table: dict[str, dict[str, StageProgress]] = {}
    for host in hosts:
        record = store.host(host)
        table[host] = {}
        for stage in stages:
            saved = record.stages.get(stage)
            table[host][stage] = StageProgress(saved.status, saved.reason) if saved else StageProgress("pending", "")
    return table


def resume_point(progress: dict[str, dict[str, StageProgress]], stages: list[str]) -> str | None:
    """The first stage not done (or skipped) on every host; None when everything is done."""
    for stage in stages:
        if any(row[stage].status not in ("done", "skipped") for row in progress.values()):
            return stage
    return None
