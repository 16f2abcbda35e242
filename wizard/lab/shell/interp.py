"""The simulated shell's interpreter: runs the AST against a host, with bash-like errors and set -euo pipefail."""

from __future__ import annotations

import asyncio
import contextvars
import fnmatch
import logging
import posixpath
from dataclasses import dataclass
from typing import TYPE_CHECKING

from wizard.lab.shell import parser as P
from wizard.lab.shell import programs, redirect
from wizard.lab.shell.expand import ExpansionError, expand_str, expand_words
from wizard.lab.shell.lexer import ShellSyntaxError
from wizard.lab.shell.programs import DEFAULT_PATH, MARKER
from wizard.lab.streams import BufferSink, Input, Sink, TextInput
from wizard.lab.vfs import Cred, FsError, invalidate

if TYPE_CHECKING:
    from wizard.lab.host import SimHost

log = logging.getLogger(__name__)

# The jobs an SSH exec started with ``&``, however deep: its process group. sshd answers the "signal" request with
# kill() on the session's process group, and a non-interactive shell puts its ``&`` jobs in that same group, so they
# end with it (host.exec cancels them). A job detached on purpose (``nohup ... &`` left running after the exec
# ended normally) is not touched. Tasks copy the context, so a job's own jobs join the same group.
EXEC_GROUP: contextvars.ContextVar[set[asyncio.Task[int]] | None] = contextvars.ContextVar("exec_group", default=None)


class ShellExit(Exception):
    def __init__(self, status: int) -> None:
        super().__init__(status)
        self.status = status


class _Break(Exception):
    def __init__(self, n: int) -> None:
        self.n = n


class _Continue(_Break):
    pass


class _Return(Exception):
    def __init__(self, status: int) -> None:
        self.status = status


@dataclass
class IO:
    stdin: Input
    out: Sink
    err: Sink


class Shell:
    """One shell process. ``argv0`` prefixes diagnostics ("bash: line 1: x: command not found")."""

    def __init__(
        self,
        host: SimHost,
        *,
        cred: Cred,
        env: dict[str, str],
        cwd: str,
        io: IO,
        argv0: str = "bash",
        positional: list[str] | None = None,
    ) -> None:
        self.host = host
        self.cred = cred
        self.vars: dict[str, str] = dict(env)
        self.exported: set[str] = set(env)
        self.cwd = cwd
        self.io = io
        self.argv0 = argv0
        self.positional = list(positional or [])
        self.functions: dict[str, P.Node] = {}
        self.status = 0
        self.opts = {"errexit": False, "nounset": False, "pipefail": False, "xtrace": False, "noexec": False}
        self.cond_depth = 0
        self.line = 1
        self.tasks: list[asyncio.Task[int]] = []
        self.last_job = 0  # for $!: a stand-in PID of the last ``&`` job

    # -- variables ---------------------------------------------------------------------------------------
    def get_var(self, name: str) -> str | None:
        if name == "?":
            return str(self.status)
        if name == "#":
            return str(len(self.positional))
        if name in ("@", "*"):
            return " ".join(self.positional)
        if name == "$":
            return str(self.host.pid_hint)
        if name == "!":
            return str(self.host.pid_hint + self.last_job) if self.last_job else None
        if name == "0":
            return self.argv0
        if name == "-":
            return "".join(f for f, o in (("e", "errexit"), ("u", "nounset"), ("x", "xtrace")) if self.opts[o]) + "hB"
        if name.isdigit():
            k = int(name)
            return self.positional[k - 1] if 0 < k <= len(self.positional) else None
        return self.vars.get(name)

    def set_var(self, name: str, value: str, export: bool = False) -> None:
        self.vars[name] = value
        if export:
            self.exported.add(name)

    def environ(self, extra: dict[str, str] | None = None) -> dict[str, str]:
        env = {k: v for k, v in self.vars.items() if k in self.exported}
        env.update(extra or {})
        return env

    def child(self, io: IO | None = None) -> Shell:
        sub = Shell(self.host, cred=self.cred, env={}, cwd=self.cwd, io=io or self.io, argv0=self.argv0)
        sub.vars, sub.exported = dict(self.vars), set(self.exported)
        sub.positional, sub.functions, sub.opts = list(self.positional), dict(self.functions), dict(self.opts)
        sub.status, sub.line = self.status, self.line
        return sub

    # -- diagnostics ---------------------------------------------------------------------------------------
    def diag(self, msg: str, io: IO | None = None) -> None:
        target = (io or self.io).err
        if posixpath.basename(self.argv0) == "sh":
            target.write(f"{self.argv0}: {self.line}: {msg}\n")
        else:
            target.write(f"{self.argv0}: line {self.line}: {msg}\n")

    # -- entry points --------------------------------------------------------------------------------------
    async def run(self, source: str) -> int:
        """Parse and run a whole script/-c string; returns the exit status."""
        try:
            tree = P.parse(source)
        except ShellSyntaxError as exc:
            self.line = exc.line
            self.diag(str(exc))
            return 2
        if self.opts["noexec"]:
            return 0
        try:
            self.status = await self.run_seq(tree, self.io)
        except ShellExit as exc:
            self.status = exc.status
        except (_Break, _Return) as exc:
            self.status = getattr(exc, "status", 0)
        return self.status

    async def command_substitution(self, source: str) -> str:
        buf = BufferSink()
        sub = self.child(IO(self.io.stdin, buf, self.io.err))
        status = await sub.run(source)
        self.status = status
        return buf.getvalue().rstrip("\n")

    # -- evaluation ----------------------------------------------------------------------------------------
    async def run_seq(self, seq: P.Seq, io: IO) -> int:
        status = 0
        for node, background in seq.items:
            if background:
                task = asyncio.get_running_loop().create_task(self._background(node, io))
                group = EXEC_GROUP.get()
                if group is not None:
                    group.add(task)
                    task.add_done_callback(group.discard)
                self.last_job += 1
                self.tasks.append(task)
                self.host.background.add(task)
                task.add_done_callback(self.host.background.discard)
                status = 0
            else:
                status = await self.execute(node, io)
            self.status = status
        return status

    async def _background(self, node: P.Node, io: IO) -> int:
        sub = self.child(IO(TextInput(""), io.out, io.err))
        try:
            return await sub.execute(node, sub.io)
        except (ShellExit, _Return) as exc:
            return exc.status
        except Exception:  # a background job must never take the session down
            log.exception("background job failed on %s", self.host.name)
            return 1

    async def execute(self, node: P.Node, io: IO) -> int:
        if isinstance(node, P.Simple):
            status = await self.run_simple(node, io)
            return self._check_errexit(status)
        if isinstance(node, P.Pipeline):
            status = await self.run_pipeline(node, io)
            return status if node.negate else self._check_errexit(status)
        if isinstance(node, P.AndOr):
            self.cond_depth += 1
            try:
                status = await self.execute(node.first, io)
                for i, (op, nxt) in enumerate(node.rest):
                    last = i == len(node.rest) - 1
                    if (op == "&&" and status == 0) or (op == "||" and status != 0):
                        if last:
                            self.cond_depth -= 1
                            try:
                                status = await self.execute(nxt, io)
                            finally:
                                self.cond_depth += 1
                        else:
                            status = await self.execute(nxt, io)
            finally:
                self.cond_depth -= 1
            return status
        if isinstance(node, P.Seq):
            return await self.run_seq(node, io)
        if isinstance(node, P.FuncDef):
            self.functions[node.name] = node.body
            return 0
        io2 = await self._redirect(getattr(node, "redirs", []), io)
        if io2 is None:
            return 1
        if isinstance(node, P.If):
            for cond, body in node.clauses:
                if await self._cond(cond, io2) == 0:
                    return await self.run_seq(body, io2)
            return await self.run_seq(node.orelse, io2) if node.orelse else 0
        if isinstance(node, P.For):
            items = await expand_words(self, node.words) if node.words is not None else list(self.positional)
            return await self._loop(node.body, io2, items=items, var=node.var)
        if isinstance(node, P.While):
            return await self._loop(node.body, io2, cond=node.cond, until=node.until)
        if isinstance(node, P.Case):
            value = await expand_str(self, node.word)
            for pats, body in node.arms:
                for pat in pats:
                    if fnmatch.fnmatchcase(value, await expand_str(self, pat)):
                        return await self.run_seq(body, io2)
            return 0
        if isinstance(node, P.Group):
            if not node.subshell:
                return await self.run_seq(node.body, io2)
            sub = self.child(io2)
            try:
                return await sub.run_seq(node.body, io2)
            except ShellExit as exc:
                return exc.status
        raise TypeError(node)

    def _check_errexit(self, status: int) -> int:
        if status != 0 and self.opts["errexit"] and self.cond_depth == 0:
            raise ShellExit(status)
        return status

    async def _cond(self, seq: P.Seq, io: IO) -> int:
        self.cond_depth += 1
        try:
            return await self.run_seq(seq, io)
        finally:
            self.cond_depth -= 1

    async def _loop(self, body: P.Seq, io: IO, *, items=None, var="", cond=None, until=False) -> int:
        status = 0
        index = 0
        while True:
            if items is not None:
                if index >= len(items):
                    break
                self.set_var(var, items[index])
                index += 1
            else:
                ok = await self._cond(cond, io) == 0
                if ok == until:
                    break
            try:
                status = await self.run_seq(body, io)
            except _Continue as exc:
                if exc.n > 1:
                    exc.n -= 1
                    raise
                continue
            except _Break as exc:
                if exc.n > 1:
                    exc.n -= 1
                    raise
                break
            await asyncio.sleep(0)
        return status

    async def run_pipeline(self, node: P.Pipeline, io: IO) -> int:
        statuses = []
        stdin = io.stdin
        for i, cmd in enumerate(node.commands):
            last = i == len(node.commands) - 1
            buf = BufferSink()
            stage_io = IO(stdin, io.out if last else buf, io.err)
            # Every stage runs like a subshell: its failure (or exit) is judged on the pipeline as a whole.
            self.cond_depth += 1
            try:
                statuses.append(await self._stage(cmd, stage_io))
            finally:
                self.cond_depth -= 1
            stdin = TextInput(buf.getvalue())
        status = statuses[-1]
        if self.opts["pipefail"]:
            status = next((s for s in reversed(statuses) if s != 0), 0)
        return int(not status) if node.negate else status

    async def _stage(self, cmd: P.Node, io: IO) -> int:
        try:
            return await self.execute(cmd, io)
        except ShellExit as exc:  # a pipeline stage runs in a subshell
            return exc.status

    # -- simple commands -----------------------------------------------------------------------------------
    async def run_simple(self, node: P.Simple, io: IO) -> int:
        self.line = node.line
        try:
            argv = await expand_words(self, node.words)
            assigns = [(n, await expand_str(self, w), app) for n, w, app in node.assigns]
        except ExpansionError as exc:
            self.diag(str(exc), io)
            raise ShellExit(1) from None
        io2 = await self._redirect(node.redirs, io)
        if io2 is None:
            return 1
        if not argv:
            for name, value, append in assigns:
                self.set_var(name, (self.vars.get(name, "") + value) if append else value)
            return self.status if node.words else 0
        if self.opts["xtrace"]:
            io.err.write("+ " + " ".join(argv) + "\n")
        env_extra = {n: v for n, v, _ in assigns}
        return await self.run_argv(argv, io2, env_extra)

    async def run_argv(self, argv: list[str], io: IO, env_extra: dict[str, str] | None = None) -> int:
        from wizard.lab.shell.builtins import BUILTINS

        invalidate()  # host state may have changed since the last command: recompute /sys listings
        name = argv[0]
        if name in self.functions:
            saved = self.positional
            self.positional = argv[1:]
            try:
                return await self.execute(self.functions[name], io)
            except _Return as exc:
                return exc.status
            finally:
                self.positional = saved
        if name in BUILTINS:
            self.host.note_argv(argv)
            try:
                return await BUILTINS[name](self, argv, io)
            except FsError as exc:
                self.diag(f"{name}: write error: {exc.reason}", io)
                return 1
        return await self.exec_external(argv, io, self.environ(env_extra))

    def find_executable(self, name: str, path_var: str | None = None) -> str | None:
        return programs.find_executable(self, name, path_var)

    async def exec_external(
        self,
        argv: list[str],
        io: IO,
        env: dict[str, str],
        *,
        cred: Cred | None = None,
        path: str | None = None,
        not_found_prefix: str | None = None,
    ) -> int:
        """Run a program file: a simulated binary (its handler) or a shell script."""
        return await programs.exec_external(
            self, argv, io, env, cred=cred, path=path, not_found_prefix=not_found_prefix
        )

    async def call_handler(self, tool: str, argv: list[str], io: IO, env: dict[str, str], cred: Cred) -> int:
        return await programs.call_handler(self, tool, argv, io, env, cred)

    async def _redirect(self, redirs: list[P.Redir], io: IO) -> IO | None:
        return await redirect.apply(self, redirs, io)


__all__ = ["DEFAULT_PATH", "IO", "MARKER", "Shell", "ShellExit"]
