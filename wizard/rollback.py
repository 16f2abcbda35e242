"""`roce-wizard rollback`: put back the files stages replaced and remove those they created, from the backups."""

from __future__ import annotations

import posixpath
from collections.abc import Sequence

from wizard.apply import BACKUP_ROOT
from wizard.state import StateStore, now
from wizard.step import Change, Impact, RemoteCommand


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
            stage_record.checks = []
    store.save_host(host)
