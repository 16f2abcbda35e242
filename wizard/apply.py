"""Applying one planned change on one host: files first (with backups), then commands, then a reboot."""

from __future__ import annotations

from wizard.executors.base import ConnectionLost, Executor
from wizard.step import Change

BACKUP_ROOT = "/var/lib/roce-wizard/backups"


class StepFailed(Exception):
    """A change could not be applied; the message is the one line the operator sees."""


async def apply_change(executor: Executor, change: Change, backup_dir: str, reboot_timeout_s: float) -> list[str]:
    """Carry out ``change``; returns the backups made. A command outside its accepted exit codes raises StepFailed."""
    backups = []
    for file in change.files:
        backup = await executor.write_file(
            file.path, file.content, mode=file.mode, owner=file.owner, group=file.group, backup_dir=backup_dir
        )
        if backup:
            backups.append(backup)
    for command in change.commands:
        result = await executor.run(command.argv, sudo=command.sudo, input=command.input, timeout_s=command.timeout_s)
        if result.exit_status not in command.ok_exit_codes:
            raise StepFailed(
                f"{change.summary}: `{command.shell()}` exited {result.exit_status}: {result.first_error_line()}"
            )
    if change.reboot:
        try:
            await executor.run(["systemctl", "reboot"], sudo=True, timeout_s=30)
        except ConnectionLost:
            pass  # the connection going away is what a reboot looks like
        await executor.wait_until_back(timeout_s=reboot_timeout_s)
    return backups
