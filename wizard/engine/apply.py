"""Applying one planned change on one host: files first (with backups), then commands, then a reboot.

A disruptive change that rewrites files is applied like a switch's "commit confirmed": the host first gets a revert
script and a timer that will run it; after the change the wizard must reach the host over a NEW SSH connection,
and only then disarms the timer. If it cannot, the host restores the old files and network configuration by itself,
the wizard reconnects and reports exactly that.
"""

from __future__ import annotations

import asyncio
import secrets
import shlex
import time
from dataclasses import dataclass

from wizard.answers.model import Answers
from wizard.engine.clock import said, window_scale
from wizard.engine.step import Change, Impact, RemoteCommand
from wizard.executors.base import CommandTimeout, ConnectionLost, Executor, ExecutorError

BACKUP_ROOT = "/var/lib/roce-wizard/backups"
REVERT_DIR = "/var/lib/roce-wizard/revert"
REVERT_RUNS_FOR_S = 90.0  # how long a revert may take once it started (netplan apply, a bond coming back)


class StepFailed(Exception):
    """A change could not be applied; the message is the one line the operator sees."""


@dataclass(slots=True)
class Guard:
    """Commit-confirmed settings: the host reverts unless a new connection succeeds within ``revert_after_s``."""

    revert_after_s: float = 120.0
    confirm_timeout_s: float = 45.0
    clock_scale: float = 1.0
    """The simulated lab runs its clocks faster; the wizard's own waits follow it (1.0 on real hosts)."""

    def window(self, seconds: float) -> float:
        """Real seconds of a safety window on this clock (wizard/engine/clock.py: never below a floor)."""
        return seconds * window_scale(self.clock_scale)

    def said(self, seconds: float) -> str:
        return said(seconds, self.clock_scale)


def guard_for(answers: Answers, clock_scale: float = 1.0) -> Guard:
    """The answers' safe_apply settings as a Guard (clock_scale < 1 only for the simulated lab)."""
    section = answers.safe_apply
    return Guard(section.revert_after_s, section.confirm_within_s, clock_scale)


@dataclass(slots=True)
class ArmedRevert:
    name: str
    script: str
    armed_at: float

    @property
    def claim(self) -> str:
        """A directory both sides try to create: mkdir is atomic, so exactly one of confirm and revert wins."""
        return f"{REVERT_DIR}/{self.name}.claimed"

    @property
    def reverted_marker(self) -> str:
        return f"{REVERT_DIR}/{self.name}.reverted"


async def apply_change(
    executor: Executor,
    change: Change,
    backup_dir: str,
    reboot_timeout_s: float,
    guard: Guard | None = None,
    unbacked: frozenset[str] | set[str] = frozenset(),
) -> list[tuple[str, str | None]]:
    """Carry out ``change``; returns each file written with its backup (None: the file is new or in ``unbacked``).

    A command outside its accepted exit codes raises StepFailed.
    """
    written: list[tuple[str, str | None]] = []
    for file in change.files:
        backup = await executor.write_file(
            file.path,
            file.content,
            mode=file.mode,
            owner=file.owner,
            group=file.group,
            backup_dir=None if file.path in unbacked else backup_dir,
        )
        written.append((file.path, backup))
    armed = None
    if guard is not None and change.impact == Impact.DISRUPTIVE and change.commands and written:
        try:
            armed = await _arm(executor, change, written, guard)
        except StepFailed:
            await _restore(executor, written)
            raise
    try:
        for command in change.commands:
            result = await executor.run(
                command.argv, sudo=command.sudo, input=command.input, timeout_s=command.timeout_s
            )
            if result.exit_status not in command.ok_exit_codes:
                raise StepFailed(
                    f"{change.summary}: `{command.shell()}` exited {result.exit_status}: {result.first_error_line()}"
                )
    except (ConnectionLost, CommandTimeout) as exc:
        if armed is None:
            raise
        await _confirm_or_report(executor, change, armed, guard, cause=exc.detail)  # type: ignore[arg-type]
    else:
        if armed is not None:
            await _confirm_or_report(executor, change, armed, guard, cause=None)  # type: ignore[arg-type]
    if change.reboot:
        try:
            await executor.run(["systemctl", "reboot"], sudo=True, timeout_s=30)
        except ConnectionLost:
            pass  # the connection going away is what a reboot looks like
        await executor.wait_until_back(timeout_s=reboot_timeout_s)
    return written


def revert_script(change: Change, written: list[tuple[str, str | None]], armed: ArmedRevert) -> str:
    """A flat script that puts the old files back and re-applies the previous network configuration."""
    lines = [
        "#!/bin/bash",
        f"# roce-wizard automatic revert for: {change.summary}",
        "# It runs only if roce-wizard could not reach this host over SSH again after the change.",
        "set -u",
        f"mkdir -- {shlex.quote(armed.claim)} 2>/dev/null || exit 0  # the wizard confirmed the change first",
    ]
    for path, backup in written:
        if backup:
            lines.append(f"cp -a -- {shlex.quote(backup)} {shlex.quote(path)}")
        else:
            lines.append(f"rm -f -- {shlex.quote(path)}")
    for link in change.creates_links:
        lines.append(shlex.join(["ip", "link", "delete", "dev", link]))
    for command in _revert_commands(change, written):
        lines.append(shlex.join(command.argv))
    lines.append(f"touch {shlex.quote(armed.reverted_marker)}")
    return "\n".join(lines) + "\n"


def _revert_commands(change: Change, written: list[tuple[str, str | None]]) -> list[RemoteCommand]:
    commands = list(change.revert)
    if any(path.startswith("/etc/netplan/") for path, _ in written) and not commands:
        commands.append(RemoteCommand(argv=["netplan", "apply"]))
    return commands


async def _arm(executor: Executor, change: Change, written: list[tuple[str, str | None]], guard: Guard) -> ArmedRevert:
    armed = ArmedRevert(f"roce-wizard-revert-{secrets.token_hex(4)}", "", time.monotonic())
    armed.script = f"{REVERT_DIR}/{armed.name}.sh"
    await executor.write_file(armed.script, revert_script(change, written, armed), mode=0o700)
    seconds = f"{int(guard.revert_after_s)}s"
    result = await executor.run(
        ["systemd-run", f"--unit={armed.name}", f"--on-active={seconds}", "/bin/bash", armed.script], sudo=True
    )
    if result.exit_status == 127 or "command not found" in result.stderr:
        # No systemd: a detached sleeper does the same job.
        sleeper = f"sleep {int(guard.revert_after_s)}; exec /bin/bash {shlex.quote(armed.script)}"
        background = f"nohup /bin/sh -c {shlex.quote(sleeper)} >/dev/null 2>&1 &"
        result = await executor.run(background, sudo=True)
    if not result.ok:
        raise StepFailed(
            f"{change.summary}: could not arm the automatic revert ({result.first_error_line()}); "
            "the files were put back and nothing was applied"
        )
    armed.armed_at = time.monotonic()
    return armed


async def _restore(executor: Executor, written: list[tuple[str, str | None]]) -> None:
    """Put back the files of a change that will not go ahead, so the host is as it was."""
    for path, backup in written:
        argv = ["cp", "-a", "--", backup, path] if backup else ["rm", "-f", "--", path]
        await executor.run(argv, sudo=True)


async def _confirm_or_report(
    executor: Executor, change: Change, armed: ArmedRevert, guard: Guard, cause: str | None
) -> None:
    deadline = time.monotonic() + guard.window(guard.confirm_timeout_s)
    last = cause or ""
    while time.monotonic() < deadline:
        try:
            await executor.check_new_connection()
            if not (await executor.run(["mkdir", "--", armed.claim], sudo=True)).ok:
                # The timer fired first (the change took longer than revert_after_s): the host is reverting.
                await _await_revert(executor, armed, guard)
                window = guard.said(guard.revert_after_s)
                raise StepFailed(
                    f"the host rolled itself back: its revert timer fired before the wizard could confirm the "
                    f"change (the change took longer than safe_apply.revert_after_s = {window}; "
                    f"raise it); the change is NOT in place; change: {change.summary}"
                )
            await executor.run(["systemctl", "stop", f"{armed.name}.timer"], sudo=True)
            await executor.run(["rm", "-f", "--", armed.script], sudo=True)
            if cause is None:
                return
            raise StepFailed(
                f"{change.summary}: the connection dropped during the change ({cause}); "
                "a new SSH connection works, so the change was kept; re-run to verify it"
            )
        except ExecutorError as exc:
            last = exc.detail
            await asyncio.sleep(min(1.0, guard.window(guard.confirm_timeout_s) / 5))
    revert_in = guard.window(guard.revert_after_s)
    await asyncio.sleep(max(0.0, armed.armed_at + revert_in - time.monotonic()))
    reverted = await _await_revert(executor, armed, guard)
    # The verdict comes first: a narrow screen or a one-line log still shows what happened.
    why = f"no new SSH connection within {guard.said(guard.confirm_timeout_s)} after the change ({last})"
    if reverted:
        raise StepFailed(
            f"the host rolled itself back after {guard.said(guard.revert_after_s)}: the change is NOT in place and "
            f"the host is reachable again; {why}; change: {change.summary}"
        )
    raise StepFailed(
        f"the host is reachable again but its revert did not report back: check its files against the backups; "
        f"{why}; change: {change.summary}"
    )


async def _await_revert(executor: Executor, armed: ArmedRevert, guard: Guard) -> bool:
    """Reconnect and wait for the revert to report back (it re-applies the network: that takes a while)."""
    deadline = time.monotonic() + guard.window(REVERT_RUNS_FOR_S)
    await executor.wait_until_back(timeout_s=guard.revert_after_s + 120)
    while True:
        try:
            if (await executor.run(["test", "-e", armed.reverted_marker], sudo=True)).ok:
                # The script and its claim are spent; the .reverted marker stays as the evidence.
                await executor.run(["rm", "-rf", "--", armed.script, armed.claim], sudo=True)
                return True
        except ExecutorError:
            await executor.wait_until_back(timeout_s=guard.revert_after_s + 120)
        if time.monotonic() > deadline:
            return False
        await asyncio.sleep(min(2.0, guard.window(REVERT_RUNS_FOR_S) / 30))
