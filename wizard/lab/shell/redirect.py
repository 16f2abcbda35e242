"""Redirections of the simulated shell: > >> < 2>&1 &> here-documents and here-strings."""

from __future__ import annotations

from typing import TYPE_CHECKING

from wizard.lab.shell import parser as P
from wizard.lab.shell.expand import expand_str, expand_text, expand_word
from wizard.lab.streams import NullSink, Sink, TextInput
from wizard.lab.vfs import Cred, Dir, DynFile, FsError

if TYPE_CHECKING:
    from wizard.lab.host import SimHost
    from wizard.lab.shell.interp import IO, Shell


class FileSink(Sink):
    """``> FILE`` / ``>> FILE``: truncates on open (not for sysfs), appends each write."""

    def __init__(self, host: SimHost, path: str, cred: Cred, cwd: str, append: bool) -> None:
        self.fs, self.path, self.cred, self.cwd = host.fs, path, cred, cwd
        node = self.fs.lookup(path, cwd)
        if isinstance(node, Dir):
            raise FsError(21, path)
        if node is None or (not append and not isinstance(node, DynFile)):
            self.fs.write_bytes(path, b"", cred, cwd)
        elif not node.allows(cred, 2):
            raise FsError(13, path)

    def write(self, text: str) -> None:
        self.fs.write_bytes(self.path, text.encode(), self.cred, self.cwd, append=True)


async def apply(shell: Shell, redirs: list[P.Redir], io: IO) -> IO | None:
    if not redirs:
        return io
    stdin, out, err = io.stdin, io.out, io.err
    for r in redirs:
        fd = r.fd if r.fd is not None else (0 if r.op.startswith("<") else 1)
        if r.heredoc is not None:
            doc = r.heredoc
            stdin = TextInput(doc.body if doc.quoted else await expand_text(shell, doc.body))
            continue
        assert r.target is not None
        if r.op == "<<<":
            stdin = TextInput(await expand_str(shell, r.target) + "\n")
            continue
        fields = await expand_word(shell, r.target, split=False)
        if len(fields) != 1:
            shell.diag(f"{r.target.plain()}: ambiguous redirect", io)
            return None
        target = fields[0]
        try:
            if r.op in (">&", "<&") and (target.isdigit() or target == "-"):
                src = {"1": out, "2": err}.get(target, NullSink())
                if fd == 1:
                    out = src
                elif fd == 2:
                    err = src
                continue
            if r.op == "<":
                stdin = TextInput(shell.host.fs.read_text(target, shell.cred, shell.cwd))
                continue
            sink = open_sink(shell, target, append=r.op in (">>", "&>>"))
            if r.op in ("&>", "&>>", ">&"):
                out = err = sink
            elif fd == 2:
                err = sink
            else:
                out = sink
        except FsError as exc:
            shell.diag(f"{target}: {exc.reason}", io)
            return None
    from wizard.lab.shell.interp import IO

    return IO(stdin, out, err)


def open_sink(shell: Shell, target: str, *, append: bool) -> Sink:
    if shell.host.fs.abspath(target, shell.cwd) == "/dev/null":
        return NullSink()
    return FileSink(shell.host, target, shell.cred, shell.cwd, append)
