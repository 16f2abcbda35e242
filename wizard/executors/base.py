"""The executor protocol, command results and the errors a host can raise."""

from __future__ import annotations

import shlex
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Literal, Protocol

Stream = Literal["stdout", "stderr"]
LineCallback = Callable[[Stream, str], None]


class ExecutorError(Exception):
    """A host-level failure; the message is one line that names the host."""

    def __init__(self, host: str, message: str) -> None:
        self.host = host
        self.detail = message
        super().__init__(f"{host}: {message}")


class HostUnreachable(ExecutorError):
    """No SSH connection could be made (refused, timed out, name not resolved)."""


class AuthenticationFailed(ExecutorError):
    """The host refused every key or method offered."""


class HostKeyRejected(ExecutorError):
    """The host key is unknown (and accepting new keys is off) or differs from the recorded one."""


class ConnectionLost(ExecutorError):
    """The connection died while a command ran; its outcome is unknown."""


class CommandTimeout(ExecutorError):
    """A command ran past its time limit and was stopped."""


class SudoRefused(ExecutorError):
    """sudo would not run the command (password needed, user not in sudoers)."""


@dataclass(frozen=True, slots=True)
class CommandResult:
    """What one remote command did."""

    command: str
    exit_status: int
    stdout: str
    stderr: str
    duration_s: float
    raw_stdout: str = ""
    """stdout exactly as received (``stdout`` is its lines joined without the final newline, for parsing)."""

    @property
    def ok(self) -> bool:
        return self.exit_status == 0

    def first_error_line(self) -> str:
        """The most telling line for a one-line failure message."""
        for text in (self.stderr, self.stdout):
            lines = [line.strip() for line in text.splitlines() if line.strip()]
            if lines:
                return lines[-1] if len(lines[-1]) > 8 else lines[0]
        return f"exit status {self.exit_status}"


def render_command(argv: Sequence[str] | str) -> str:
    """Quote an argv for the remote shell; a string is taken as an already-built command line."""
    if isinstance(argv, str):
        return argv
    return shlex.join(argv)


class Executor(Protocol):
    """Runs commands and moves files on one host."""

    name: str

    async def connect(self) -> None: ...

    async def run(
        self,
        argv: Sequence[str] | str,
        *,
        sudo: bool = False,
        input: str | None = None,
        timeout_s: float | None = None,
        on_line: LineCallback | None = None,
    ) -> CommandResult: ...

    async def ensure_sudo(self) -> None:
        """Prove sudo works for the login (once per connection); raises SudoRefused saying what to fix."""
        ...

    async def read_file(self, path: str, *, sudo: bool = False) -> str | None: ...

    async def write_file(
        self,
        path: str,
        content: str,
        *,
        mode: int = 0o644,
        owner: str = "root",
        group: str = "root",
        backup_dir: str | None = None,
    ) -> str | None: ...

    async def wait_until_back(self, *, timeout_s: float) -> None: ...

    async def check_new_connection(self) -> None: ...

    async def close(self) -> None: ...
