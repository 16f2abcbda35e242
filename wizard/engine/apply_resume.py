"""Crash anywhere, resume: what a change will do is on the stage record before it runs, and a resumed run settles
the automatic reverts a killed wizard left armed (found by bench/chaos_vm.py on the qemu lab)."""

from __future__ import annotations

import asyncio
import posixpath
import time
from dataclasses import dataclass, field

from wizard.engine.apply import BACKUP_ROOT, REVERT_DIR, REVERT_RUNS_FOR_S, ArmedRevert
from wizard.engine.clock import window_scale
from wizard.engine.state import StageRecord
from wizard.engine.step import Change
from wizard.executors.base import Executor


@dataclass(slots=True)
class Intent:
    """What ``record_intent`` put on the stage record before a change ran (reconciled by ``record_written``)."""

    created: set[str] = field(default_factory=set)
    backups: dict[str, str] = field(default_factory=dict)
    own: set[str] = field(default_factory=set)
    """Paths an earlier run or change created: a backup of them now would be of the wizard's own file."""
    unbacked: set[str] = field(default_factory=set)
    """Secret files the wizard itself created, rewritten without a backup: rollback removes them anyway, and a
    copy of an old key under the backup directory is one more place a secret lives."""
    earlier: dict[str, str] = field(default_factory=dict)
    """Path -> its first recorded backup from an earlier run (missing if that run died before its copy)."""
    links: set[str] = field(default_factory=set)
    """Links this change put on the record before creating them."""


def _original(backup: str) -> str:
    rest = backup.removeprefix(BACKUP_ROOT + "/").split("/", 2)
    return "/" + rest[2] if len(rest) == 3 else backup


def record_intent(record: StageRecord, change: Change, backup_dir: str) -> Intent:
    """Put on ``record`` the files and links ``change`` will create and the backups it will take, BEFORE it runs.

    A wizard killed after a change wrote a file but before it recorded it would otherwise leave a created file (or
    the original's backup) unknown to rollback; the resumed run then finds the file in place and records nothing.
    """
    first = {}
    for backup in record.backups:
        first.setdefault(_original(backup), backup)
    intent = Intent(own=set(record.created), earlier=first)
    intent.unbacked = {f.path for f in change.files if f.secret and f.path in intent.own}
    for file in change.files:
        if file.path in record.created or file.path in first:
            continue
        if file.before is None:
            record.created.append(file.path)
            intent.created.add(file.path)
        else:
            intent.backups[file.path] = posixpath.join(backup_dir, file.path.lstrip("/"))
            record.backups.append(intent.backups[file.path])
    for path in change.creates_files:
        if path not in record.created and path not in first:
            record.created.append(path)
            intent.created.add(path)
    intent.links = {n for n in change.creates_links if n not in record.created_links}
    record.created_links += [n for n in change.creates_links if n in intent.links]
    return intent


def record_written(record: StageRecord, written: list[tuple[str, str | None]], intent: Intent) -> list[str]:
    """Reconcile ``record`` with what the change really did; returns earlier backups to check on the host."""
    check: list[str] = []
    for path, backup in written:
        if path in intent.created or path in intent.backups:
            planned = intent.backups.get(path)
            if planned is not None and planned in record.backups:
                record.backups.remove(planned)
            if path in record.created:
                record.created.remove(path)
            if backup:  # the step's idea of the file ("before") was wrong either way: the host decides
                record.backups.append(backup)
            else:
                record.created.append(path)
        elif backup and path not in intent.own:
            # Rollback restores the first backup; a later one is of an earlier run's version. Unless that earlier
            # run died between recording its backup and taking it: then this one is the original (checked below).
            record.backups.append(backup)
            if path in intent.earlier:
                check.append(intent.earlier[path])
    return check


async def forget_what_failed_to_stay(executor: Executor, record: StageRecord, intent: Intent) -> None:
    """After a change failed (or the host rolled itself back): forget what its intent recorded but the host does not
    have, so a rollback neither restores a backup never taken nor removes a file or link that is not there."""
    await drop_missing_backups(executor, record, list(intent.backups.values()))
    for path in sorted(intent.created):
        if (await executor.run(["test", "-e", path], sudo=True)).exit_status == 1 and path in record.created:
            record.created.remove(path)
    for link in sorted(intent.links):
        if not (await executor.run(["ip", "link", "show", "dev", link])).ok and link in record.created_links:
            record.created_links.remove(link)


async def drop_missing_backups(executor: Executor, record: StageRecord, backups: list[str]) -> None:
    """Forget recorded backups that were never taken (the run recording them died before its copy)."""
    for backup in backups:
        if (await executor.run(["test", "-e", backup], sudo=True)).exit_status == 1:
            record.backups.remove(backup)


async def settle_reverts(executor: Executor, clock_scale: float = 1.0) -> list[str]:
    """Disarm the automatic reverts a killed wizard left armed on the host; returns what was done, per revert.

    A resumed run reaches the host over a new connection, which is what a confirm needs; if the resumed run found
    the change in place and planned nothing, the old timer would otherwise fire later and undo a verified host.
    A revert that already ran keeps only its ``.reverted`` marker; one running now is waited for.
    """
    listing = await executor.run(["ls", "-1", "--", REVERT_DIR], sudo=True)
    if not listing.ok:
        return []
    names = sorted(e[: -len(".sh")] for e in listing.stdout.split() if e.endswith(".sh"))
    done = []
    for name in names:
        armed = ArmedRevert(name, f"{REVERT_DIR}/{name}.sh", 0.0)
        if (await executor.run(["mkdir", "--", armed.claim], sudo=True)).ok:
            done.append(f"{name}: disarmed (left armed by an interrupted run)")
        else:
            running = await executor.run(["systemctl", "is-active", "--quiet", f"{name}.service"], sudo=True)
            deadline = time.monotonic() + REVERT_RUNS_FOR_S * window_scale(clock_scale)
            while running.ok and time.monotonic() < deadline:
                if (await executor.run(["test", "-e", armed.reverted_marker], sudo=True)).ok:
                    break
                await asyncio.sleep(min(2.0, REVERT_RUNS_FOR_S * window_scale(clock_scale) / 30))
            if (await executor.run(["test", "-e", armed.reverted_marker], sudo=True)).ok:
                await executor.run(["rm", "-rf", "--", armed.claim], sudo=True)
                done.append(f"{name}: had rolled the host back; the stage re-plans")
            else:
                done.append(f"{name}: confirmed earlier; its timer is stopped")
        await executor.run(["systemctl", "stop", f"{name}.timer"], sudo=True)
        await executor.run(["rm", "-f", "--", armed.script], sudo=True)
    return done
