"""`roce-wizard rollback`: put back the files stages replaced and remove those they created, from the backups."""

from __future__ import annotations

import asyncio
import posixpath
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Literal

from wizard.engine.apply import BACKUP_ROOT, StepFailed, apply_change
from wizard.engine.events import EventBus
from wizard.engine.state import StateStore, now
from wizard.engine.step import Change, Impact, RemoteCommand
from wizard.executors.base import Executor, ExecutorError


def original_path(backup: str) -> str:
    """``<backup root>/<run>/<stage>/etc/x`` -> ``/etc/x``."""
    rest = backup.removeprefix(BACKUP_ROOT + "/").split("/", 2)
    return "/" + rest[2] if len(rest) == 3 else backup


def rollback_change(store: StateStore, host: str, stages: Sequence[str]) -> Change | None:
    """The commands that undo ``stages`` on ``host`` (the first backup of each file is its state before the
    wizard touched it), or None when those stages changed no file there."""
    record = store.host(host)
    restores: dict[str, str] = {}
    created: list[str] = []
    links: list[str] = []
    for stage in stages:
        stage_record = record.stages.get(stage)
        if stage_record is None:
            continue
        for backup in stage_record.backups:
            restores.setdefault(original_path(backup), backup)
        created += [p for p in stage_record.created if p not in created]
        links += [n for n in stage_record.created_links if n not in links]
    created = [p for p in created if p not in restores]
    if not restores and not created:
        return None
    commands: list[RemoteCommand] = []
    for path in created:
        if path.startswith("/etc/systemd/system/") and path.endswith(".service"):
            unit = posixpath.basename(path)
            commands.append(RemoteCommand(argv=["systemctl", "disable", "--now", unit], ok_exit_codes=[0, 1, 5]))
    commands += [RemoteCommand(argv=["cp", "-a", "--", backup, path]) for path, backup in restores.items()]
    commands += [RemoteCommand(argv=["rm", "-f", "--", path]) for path in created]
    touched = [*restores, *created]
    if any(p.startswith("/etc/systemd/system/") for p in touched):
        commands.append(RemoteCommand(argv=["systemctl", "daemon-reload"]))
    if any(p.startswith("/etc/sysctl.d/") for p in touched):
        commands.append(RemoteCommand(argv=["sysctl", "--system"]))
    # Exit 1: the device is already gone (an earlier rollback, a reboot).
    commands += [RemoteCommand(argv=["ip", "link", "delete", "dev", link], ok_exit_codes=[0, 1]) for link in links]
    if any(p.startswith("/etc/netplan/") for p in touched):
        commands.append(RemoteCommand(argv=["netplan", "apply"]))
    files = ", ".join(sorted(touched))
    return Change(
        summary=f"roll back {', '.join(stages)}: restore {len(restores)} file(s), remove {len(created)} ({files})",
        why="put the host's files back as they were before roce-wizard changed them; runtime settings (QoS, loaded "
        "modules) stay until the next reboot or driver reload",
        impact=Impact.DISRUPTIVE,
        commands=commands,
    )


def mark_rolled_back(store: StateStore, host: str, stages: Sequence[str]) -> None:
    """After a rollback the stages are pending again, and their backups are spent."""
    record = store.host(host)
    for stage in stages:
        if stage in record.stages:
            stage_record = record.stages[stage]
            stage_record.status = "pending"
            stage_record.reason = f"rolled back at {now()}; run the stage again to re-apply it"
            stage_record.backups.clear()
            stage_record.created.clear()
            stage_record.created_links.clear()
            stage_record.checks = []
    store.save_host(host)


@dataclass(slots=True)
class RollbackOutcome:
    host: str
    status: Literal["rolled_back", "nothing", "failed"]
    detail: str


def rollback_plans(store: StateStore, hosts: Sequence[str], stages: Sequence[str]) -> dict[str, Change | None]:
    """What a rollback would run on each host (None: nothing recorded to undo there). Reads only the state."""
    return {host: rollback_change(store, host, stages) for host in hosts}


async def roll_back(
    store: StateStore,
    executors: Mapping[str, Executor],
    hosts: Sequence[str],
    stages: Sequence[str],
    bus: EventBus | None = None,
) -> list[RollbackOutcome]:
    """Undo ``stages`` on ``hosts`` at once (the CLI and the TUI both come here); one host failing stops no other."""

    async def one(host: str) -> RollbackOutcome:
        change = rollback_change(store, host, stages)
        if change is None:
            return RollbackOutcome(host, "nothing", f"nothing to roll back for {', '.join(stages)}")
        touched = [s for s in stages if s in store.host(host).stages]
        if bus is not None:
            bus.emit("change_started", stage=touched[0], host=host, summary=change.summary, impact=change.impact)
        try:
            await apply_change(executors[host], change, "", 900.0)
        except (ExecutorError, StepFailed) as exc:
            detail = "rollback FAILED: " + (exc.detail if isinstance(exc, ExecutorError) else str(exc))
            _record(store, host, touched, "failed", detail + "; the host is between the two states", bus)
            return RollbackOutcome(host, "failed", detail)
        mark_rolled_back(store, host, stages)
        if bus is not None:
            for stage in touched:
                bus.emit(
                    "host_status",
                    stage=stage,
                    host=host,
                    status="pending",
                    reason=store.host(host).stages[stage].reason,
                )
        return RollbackOutcome(host, "rolled_back", f"rolled back {', '.join(touched)}; run them again to re-apply")

    return list(await asyncio.gather(*(one(h) for h in hosts)))


def _record(
    store: StateStore, host: str, stages: Sequence[str], status: str, reason: str, bus: EventBus | None
) -> None:
    record = store.host(host)
    for stage in stages:
        record.stages[stage].status = status  # type: ignore[assignment]
        record.stages[stage].reason = reason
        if bus is not None:
            bus.emit("host_status", stage=stage, host=host, status=status, reason=reason)
    store.save_host(host)
