"""One writer per state directory: an exclusive flock on ``<state_dir>/lock`` held for the life of the process."""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
import re
import shlex
import socket
import sys
from collections.abc import Sequence
from dataclasses import asdict, dataclass
from datetime import datetime
from pathlib import Path

from wizard.errors import StateError

LOCK_NAME = "lock"
# An option whose name says it carries a secret keeps its name in the holder record, never its value.
_SECRET_OPTION = re.compile(r"^--?[\w-]*(password|passwd|token|secret|api-key|apikey)[\w-]*$", re.IGNORECASE)
_HIDDEN = "***"


@dataclass(frozen=True)
class Holder:
    """Who holds a state directory: written into the lock file by the process that holds it."""

    pid: int
    host: str
    since: str  # ISO 8601, local time with offset, seconds
    command: str  # "roce-wizard <arguments>", secret-looking option values hidden; never the environment

    def to_text(self) -> str:
        return json.dumps(asdict(self), sort_keys=True) + "\n"

    @classmethod
    def from_text(cls, text: str) -> Holder | None:
        """The recorded holder, or None when the file is empty or not a holder record (written half, foreign)."""
        try:
            data = json.loads(text)
            return cls(
                pid=int(data["pid"]), host=str(data["host"]), since=str(data["since"]), command=str(data["command"])
            )
        except (ValueError, TypeError, KeyError):
            return None


def command_line(argv: Sequence[str] | None = None) -> str:
    """``roce-wizard`` and its arguments as typed, with the value of any secret-looking option hidden."""
    args = list(sys.argv[1:] if argv is None else argv)
    shown: list[str] = []
    hide_next = False
    for arg in args:
        if hide_next:
            shown.append(_HIDDEN)
            hide_next = False
            continue
        name, equals, _ = arg.partition("=")
        if _SECRET_OPTION.match(name):
            shown.append(f"{name}={_HIDDEN}" if equals else name)
            hide_next = not equals
        else:
            shown.append(arg)
    return shlex.join(["roce-wizard", *shown])


class StateLock:
    """Exclusive, non-blocking lock on one state directory. The kernel drops it when the holder dies, so a lock
    left by a killed process is simply taken by the next one (and its holder record overwritten)."""

    def __init__(self, state_dir: Path, *, argv: Sequence[str] | None = None) -> None:
        self.state_dir = Path(state_dir)
        self.path = self.state_dir / LOCK_NAME
        self._argv = argv
        self._fd: int | None = None
        self.holder: Holder | None = None

    @property
    def held(self) -> bool:
        """True while this object holds the lock on the file that is at ``path`` now."""
        return self._fd is not None and self._same_file(self._fd)

    def acquire(self) -> StateLock:
        """Take the lock (a no-op when already held); raises StateError naming the holder when another has it.

        The file is checked to still be the one at ``path`` after locking: a state directory removed or moved
        (--reset, start over) leaves the old lock on a file nobody else can open, so it is taken again."""
        if self.held:
            return self
        self.release()
        for _ in range(5):
            try:
                self.state_dir.mkdir(parents=True, exist_ok=True, mode=0o700)
                fd = os.open(self.path, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC | os.O_NOFOLLOW, 0o600)
            except OSError as exc:  # full, read-only or not ours: the same one line as any refused state write
                from wizard.engine.state import write_error

                raise write_error(self.state_dir, exc, self.path) from None
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                text = _read_all(fd)
                os.close(fd)
                raise StateError(_in_use(self.state_dir, Holder.from_text(text))) from None
            except BaseException:
                os.close(fd)
                raise
            if not self._same_file(fd):  # removed or replaced between our open and our lock: try the new one
                os.close(fd)
                continue
            self._fd = fd
            self._record()
            return self
        raise StateError(
            f"state directory {self.state_dir}: its lock file keeps being replaced; is another tool removing it?"
        )

    def release(self) -> None:
        """Clear the holder record and drop the lock. The file stays: removing it would let two wizards lock two
        different files."""
        fd, self._fd, self.holder = self._fd, None, None
        if fd is None:
            return
        with contextlib.suppress(OSError):
            if self._same_file(fd):
                os.ftruncate(fd, 0)
        os.close(fd)  # closing the only descriptor of the open file drops the flock

    def _record(self) -> None:
        assert self._fd is not None
        with contextlib.suppress(OSError):  # a file made by another user with another mode: keep it private
            os.fchmod(self._fd, 0o600)
        self.holder = Holder(
            pid=os.getpid(),
            host=socket.gethostname(),
            since=datetime.now().astimezone().isoformat(timespec="seconds"),
            command=command_line(self._argv),
        )
        data = self.holder.to_text().encode("utf-8")
        os.ftruncate(self._fd, 0)  # a dead holder's longer record must not leave a tail behind
        os.pwrite(self._fd, data, 0)

    def _same_file(self, fd: int) -> bool:
        try:
            here, mine = os.stat(self.path, follow_symlinks=False), os.fstat(fd)
        except OSError:
            return False
        return (here.st_dev, here.st_ino) == (mine.st_dev, mine.st_ino)

    def __enter__(self) -> StateLock:
        return self.acquire()

    def __exit__(self, *exc: object) -> None:
        self.release()


_HELD: dict[Path, StateLock] = {}


def lock_state_dir(state_dir: Path, *, argv: Sequence[str] | None = None) -> StateLock:
    """Take the state directory's lock for the rest of this process (the usual entry point).

    Calling it again for the same directory in the same process returns the same lock (the TUI applies many
    times; a rollback inside it must not trip over its own lock), and re-takes it if the directory was replaced."""
    key = Path(os.path.abspath(state_dir))
    lock = _HELD.get(key)
    if lock is None:
        lock = StateLock(key, argv=argv)
    lock.acquire()
    _HELD[key] = lock  # kept referenced: a collected lock object would close its file and drop the lock
    return lock


def unlock_state_dir(state_dir: Path) -> None:
    """Drop the lock taken by :func:`lock_state_dir` (quitting the TUI, or a test)."""
    lock = _HELD.pop(Path(os.path.abspath(state_dir)), None)
    if lock is not None:
        lock.release()


def recorded_holder(state_dir: Path) -> Holder | None:
    """The holder written in the lock file, without touching the lock (for status). A holder on this machine
    whose process is gone is not reported; one on another machine cannot be checked and is."""
    try:
        holder = Holder.from_text((Path(state_dir) / LOCK_NAME).read_text(encoding="utf-8"))
    except OSError:
        return None
    if holder is not None and holder.host == socket.gethostname() and not _alive(holder.pid):
        return None
    return holder


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def _read_all(fd: int) -> str:
    with contextlib.suppress(OSError):
        return os.pread(fd, 4096, 0).decode("utf-8", "replace")
    return ""


def _in_use(state_dir: Path, holder: Holder | None) -> str:
    if holder is None:  # locked a moment ago, record not written yet
        return f"state directory {state_dir} is in use by another roce-wizard (just started); wait for it or stop it"
    return (
        f"state directory {state_dir} is in use by pid {holder.pid} on {holder.host} since {holder.since} "
        f"({holder.command}); wait for it or stop it"
    )
