"""Standard streams of simulated processes and the context a command handler runs in."""

from __future__ import annotations

import posixpath
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from wizard.lab.vfs import Cred, FsError

if TYPE_CHECKING:
    from wizard.lab.host import SimHost
    from wizard.lab.shell.interp import Shell


class Sink:
    """Where a process writes; ``write`` may raise :class:`FsError` (e.g. a sysfs store refused the value)."""

    def write(self, text: str) -> None:
        raise NotImplementedError

    def close(self) -> None:
        """Called when the redirection ends."""


class NullSink(Sink):
    def write(self, text: str) -> None:
        return None


class BufferSink(Sink):
    def __init__(self) -> None:
        self.parts: list[str] = []

    def write(self, text: str) -> None:
        self.parts.append(text)

    def getvalue(self) -> str:
        return "".join(self.parts)


class CallbackSink(Sink):
    def __init__(self, fn: Callable[[str], Any]) -> None:
        self.fn = fn

    def write(self, text: str) -> None:
        if text:
            self.fn(text)


class Input:
    """Standard input; reading waits for data (an SSH client that never sends EOF blocks ``read``)."""

    async def read(self) -> str:
        return ""

    async def readline(self) -> str:
        return ""


class TextInput(Input):
    def __init__(self, text: str = "") -> None:
        self._text = text

    async def read(self) -> str:
        text, self._text = self._text, ""
        return text

    async def readline(self) -> str:
        line, sep, rest = self._text.partition("\n")
        self._text = rest
        return line + sep


class ReaderInput(Input):
    """Wraps an asyncio-style reader with ``read(n)`` (asyncssh's SSHReader)."""

    def __init__(self, reader: Any) -> None:
        self._reader = reader
        self._buf = ""
        self._eof = False

    async def _fill(self) -> bool:
        if self._eof:
            return False
        chunk = await self._reader.read(65536)
        if not chunk:
            self._eof = True
            return False
        self._buf += chunk if isinstance(chunk, str) else chunk.decode(errors="replace")
        return True

    async def read(self) -> str:
        while await self._fill():
            pass
        text, self._buf = self._buf, ""
        return text

    async def readline(self) -> str:
        while "\n" not in self._buf and await self._fill():
            pass
        line, sep, rest = self._buf.partition("\n")
        self._buf = rest
        return line + sep


class CommandFailed(Exception):
    """Raised by handlers: print ``message`` on stderr (prefixed by nothing) and exit with ``status``."""

    def __init__(self, message: str, status: int = 1) -> None:
        super().__init__(message)
        self.message = message
        self.status = status


@dataclass
class Ctx:
    """Everything a command handler may use; handlers return an exit status."""

    host: SimHost
    argv: list[str]
    env: dict[str, str]
    cwd: str
    cred: Cred
    stdin: Input
    out: Sink
    err: Sink
    shell: Shell
    extra: dict[str, Any] = field(default_factory=dict)

    @property
    def name(self) -> str:
        return posixpath.basename(self.argv[0])

    @property
    def args(self) -> list[str]:
        return self.argv[1:]

    @property
    def root(self) -> bool:
        return self.cred.root

    @property
    def fs(self):  # noqa: ANN201 - VFS, imported lazily to keep this module light
        return self.host.fs

    def print(self, text: str = "") -> None:
        self.out.write(text + "\n")

    def eprint(self, text: str) -> None:
        self.err.write(text + "\n")

    def path(self, p: str) -> str:
        return self.host.fs.abspath(p, self.cwd)

    def read_text(self, path: str) -> str:
        return self.host.fs.read_text(path, self.cred, self.cwd)

    def fs_error(self, exc: FsError, path: str | None = None) -> str:
        return f"{path if path is not None else exc.path}: {exc.reason}"
