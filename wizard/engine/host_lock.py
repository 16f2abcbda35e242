"""One writer per host: a flock(1) on the host held by a long-lived exec while the wizard changes that host.

The lock is ``flock -n`` on /run/lock/roce-wizard.lock around a ``cat`` that reads the exec's stdin: it holds until
the wizard closes stdin, or its SSH connection dies (sshd then closes the pipe and cat ends), so a control machine
that died never leaves a lock behind; /run is a tmpfs, so a reboot drops it too. Beside it the holder writes who it
is (control host, pid, state directory, since; nothing secret) for the message of a wizard that finds it taken.
Two wizards with different state directories, on different control machines, cannot change one host at once.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import shlex
import socket
from collections.abc import Callable
from dataclasses import asdict, dataclass
from datetime import datetime
from pathlib import Path
from typing import Any

from wizard.engine.apply import StepFailed
from wizard.executors.base import ConnectionLost, Executor

LOCK_PATH = "/run/lock/roce-wizard.lock"
HOLDER_PATH = "/run/lock/roce-wizard.holder"
BUSY = 75  # flock -E: EX_TEMPFAIL, told apart from flock's own errors (sysexits 64-78) and a shell's 1 and 127
LOCKED_LINE = "roce-wizard-lock: locked"
BUSY_LINE = "roce-wizard-lock: busy"


class HostBusy(StepFailed):
    """Another roce-wizard holds the host's lock; the message names it."""


@dataclass(frozen=True)
class HostHolder:
    """Who is changing a host: written to HOLDER_PATH by the wizard that holds the lock."""

    control: str  # the control machine's host name
    pid: int
    state_dir: str
    since: str  # ISO 8601, local time with offset, seconds

    @classmethod
    def this_process(cls, state_dir: Path | str) -> HostHolder:
        since = datetime.now().astimezone().isoformat(timespec="seconds")
        return cls(socket.gethostname(), os.getpid(), str(Path(state_dir).absolute()), since)

    def to_json(self) -> str:
        return json.dumps(asdict(self), sort_keys=True)

    @classmethod
    def from_text(cls, text: str) -> HostHolder | None:
        """The recorded holder, or None when there is none (not written yet, left half, or foreign)."""
        try:
            data = json.loads(text)
            return cls(str(data["control"]), int(data["pid"]), str(data["state_dir"]), str(data["since"]))
        except (ValueError, TypeError, KeyError):
            return None


def busy_message(holder: HostHolder | None) -> str:
    """The one line a wizard that finds the host locked fails with."""
    if holder is None:
        who = f"it left no record of itself in {HOLDER_PATH}"
    else:
        who = f"pid {holder.pid} on {holder.control} since {holder.since}, state {holder.state_dir}"
    return f"host is being changed by another roce-wizard ({who}); wait for it or stop it"


def lock_script(holder: HostHolder) -> str:
    """The shell script run (as root) to take the lock; it stays running while the lock is held.

    Holding: record the holder, say LOCKED_LINE, then read stdin until EOF; the record goes when the lock does.
    Taken by another: exit BUSY after BUSY_LINE and the other holder's record.
    """
    held = (
        f"printf '%s\\n' {shlex.quote(holder.to_json())} > {HOLDER_PATH}.new && mv -f {HOLDER_PATH}.new {HOLDER_PATH}"
        f" && echo {shlex.quote(LOCKED_LINE)} && cat >/dev/null; rm -f {HOLDER_PATH}"
    )
    return "\n".join(
        [
            "mkdir -p /run/lock || exit 1",  # always there on systemd hosts; a bare container may lack it
            f"flock -n -E {BUSY} {LOCK_PATH} -c {shlex.quote(held)}",
            "rc=$?",
            f'if [ "$rc" -eq {BUSY} ]; then echo {shlex.quote(BUSY_LINE)}; cat {HOLDER_PATH} 2>/dev/null; fi',
            'exit "$rc"',
        ]
    )


class HostLock:
    """The lock on one host for one apply: ``ensure`` before each change (it re-takes a lock that a reboot or a
    dropped connection ended), ``release`` at the end. Executors that cannot hold a process (test fakes) skip it."""

    def __init__(
        self,
        executor: Executor,
        holder: HostHolder,
        *,
        timeout_s: float = 30.0,
        note: Callable[[str], None] | None = None,
    ) -> None:
        self.executor = executor
        self.holder = holder
        self.timeout_s = timeout_s
        self.note = note or (lambda _text: None)
        self._process: Any = None  # asyncssh.SSHClientProcess while held

    @property
    def held(self) -> bool:
        process = self._process
        return process is not None and process.exit_status is None and not process.is_closing()

    async def ensure(self) -> None:
        """Hold the lock; raises HostBusy naming the holder, StepFailed or ExecutorError when it cannot."""
        if self.held:
            return
        opener = getattr(self.executor, "open_process", None)
        if opener is None:
            return
        again = self._process is not None
        if again:
            with contextlib.suppress(Exception):
                self._process.close()  # its channel or connection is gone already
            self._process = None
        process = await opener(["sh", "-c", lock_script(self.holder)], sudo=True)
        try:
            seen = await asyncio.wait_for(_read_until_locked(process), self.timeout_s)
        except TimeoutError:
            process.close()
            raise StepFailed(f"no answer from flock on {LOCK_PATH} within {self.timeout_s:g}s") from None
        except (OSError, EOFError) as exc:
            process.close()
            raise ConnectionLost(self.executor.name, f"connection lost while taking the host lock: {exc}") from None
        if seen is None:
            self._process = process
            self.note(f"{'took the host lock again' if again else 'took the host lock'} {LOCK_PATH}")
            return
        await self._refused(process, seen)

    async def _refused(self, process: Any, stdout: list[str]) -> None:
        with contextlib.suppress(TimeoutError, OSError):
            await asyncio.wait_for(process.wait(), self.timeout_s)
        status = process.exit_status
        stderr = await _rest(process.stderr)
        process.close()
        if status == BUSY and BUSY_LINE in stdout:
            after = stdout[stdout.index(BUSY_LINE) + 1 :]
            raise HostBusy(busy_message(HostHolder.from_text("\n".join(after))))
        if status is None:
            raise ConnectionLost(self.executor.name, "connection lost while taking the host lock")
        lines = [line for line in stderr.splitlines() if line.strip()]
        why = lines[-1].strip() if lines else f"exit status {status}"
        raise StepFailed(f"could not take the host lock {LOCK_PATH} with flock(1): {why}")

    async def release(self) -> None:
        """Close the holder's stdin: cat ends, flock drops the lock. A dead connection has dropped it already."""
        process, self._process = self._process, None
        if process is None:
            return
        with contextlib.suppress(Exception):
            process.stdin.write_eof()
            await asyncio.wait_for(process.wait(), min(self.timeout_s, 5.0))  # a blackholed link: close regardless
        with contextlib.suppress(Exception):
            process.close()


async def _read_until_locked(process: Any) -> list[str] | None:
    """None once the lock is held; else every stdout line up to the end (the lock was refused)."""
    lines: list[str] = []
    while True:
        line = await process.stdout.readline()
        if not line:
            return lines
        text = line.rstrip("\r\n")
        if text == LOCKED_LINE:
            return None
        lines.append(text)


async def _rest(reader: Any) -> str:
    with contextlib.suppress(Exception):
        return await asyncio.wait_for(reader.read(), 5.0)
    return ""
