"""flock(1) of util-linux on the simulated host: a lock held while a command runs, dropped when it ends.

Options, forms and exit codes follow the util-linux manual page (https://man.archlinux.org/man/flock.1.txt):
``flock [options] FILE -c COMMAND`` hands COMMAND to ``$SHELL -c`` (``/bin/sh`` without $SHELL), ``flock [options]
FILE COMMAND [ARGS]`` runs it directly; options stop at the first non-option (``+`` in its getopt string). ``-n``
fails at once and ``-w SECONDS`` after that long when the lock is taken, with the status given by ``-E`` (1 by
default); otherwise the status is the command's. FILE is created if missing; a file that cannot be opened is
"cannot open lock file" with EX_NOINPUT (66). Like a kernel flock(2) lock, the lock belongs to the running command:
it is released when the command ends for any reason (its SSH channel closed, the connection dropped) and a reboot
drops every lock.
"""

from __future__ import annotations

import asyncio
import getopt
import time

from wizard.engine.clock import window_scale
from wizard.lab.commands import command
from wizard.lab.shell.interp import IO
from wizard.lab.streams import CommandFailed, Ctx, Input
from wizard.lab.vfs import FsError

EX_USAGE, EX_NOINPUT, EX_CANTCREAT = 64, 66, 73
_SHORT = "+sexnoFuw:E:hV"
_LONG = ["shared", "exclusive", "unlock", "nonblock", "nb", "timeout=", "wait=", "conflict-exit-code=", "close",
         "no-fork", "verbose", "help", "version"]  # fmt: skip


class _Lock:
    """One file's flock(2) state: shared holders or one exclusive holder."""

    def __init__(self) -> None:
        self.shared = 0
        self.exclusive = False
        self.changed = asyncio.Event()

    def try_take(self, exclusive: bool) -> bool:
        if self.exclusive or (exclusive and self.shared):
            return False
        if exclusive:
            self.exclusive = True
        else:
            self.shared += 1
        return True

    def drop(self, exclusive: bool) -> None:
        if exclusive:
            self.exclusive = False
        else:
            self.shared = max(0, self.shared - 1)
        self.changed.set()
        self.changed = asyncio.Event()


class _PipeInput(Input):
    """stdin as a command under real sshd sees it: a channel or connection that went away is end of file."""

    def __init__(self, inner: Input) -> None:
        self.inner = inner

    async def read(self) -> str:
        try:
            return await self.inner.read()
        except Exception:  # noqa: BLE001 - asyncssh's ConnectionLost and friends: sshd closes the pipe
            return ""

    async def readline(self) -> str:
        try:
            return await self.inner.readline()
        except Exception:  # noqa: BLE001
            return ""


def locks(host) -> dict[str, _Lock]:  # noqa: ANN001 - SimHost
    """The host's lock table (path -> lock); kernel memory, so powering off empties it."""
    table = host.__dict__.get("flocks")
    if table is None:
        table = host.__dict__["flocks"] = {}

        def power(event: str) -> None:
            if event == "off":
                table.clear()

        host.power_listeners.append(power)
    return table


def _usage(message: str) -> CommandFailed:
    return CommandFailed(f"flock: {message}\nTry 'flock --help' for more information.", EX_USAGE)


async def _acquire(ctx: Ctx, lock: _Lock, exclusive: bool, wait_s: float | None) -> bool:
    """Take ``lock``; ``wait_s`` None waits for ever, 0 not at all (-n)."""
    deadline = None if wait_s is None else time.monotonic() + wait_s * window_scale(ctx.host.time_scale)
    while not lock.try_take(exclusive):
        if deadline is not None and time.monotonic() >= deadline:
            return False
        changed = lock.changed.wait()
        try:
            await asyncio.wait_for(changed, None if deadline is None else max(0.0, deadline - time.monotonic()))
        except TimeoutError:
            pass
    return True


@command("flock")
async def flock(ctx: Ctx) -> int:
    try:
        pairs, rest = getopt.getopt(ctx.args, _SHORT.lstrip("+"), _LONG)
    except getopt.GetoptError as exc:
        raise _usage(f"invalid option -- '{exc.opt}'") from None
    opts = {k.lstrip("-"): v for k, v in pairs}
    if "V" in opts or "version" in opts:
        ctx.print("flock from util-linux 2.37.2")
        return 0
    exclusive = not ({"s", "shared"} & opts.keys())
    wait_s: float | None = 0.0 if {"n", "nb", "nonblock"} & opts.keys() else None
    try:
        conflict_status = int(opts.get("E", opts.get("conflict-exit-code", "1")))
        timeout = opts.get("w", opts.get("timeout", opts.get("wait")))
        if timeout is not None and wait_s is None:
            wait_s = float(timeout)
    except ValueError as exc:
        raise _usage(f"invalid number: {exc}") from None
    if not rest:
        raise _usage("not enough arguments")
    if len(rest) == 1:
        raise CommandFailed(f"flock: the file descriptor form (flock {rest[0]}) is not simulated", EX_USAGE)
    target, argv = rest[0], rest[1:]
    if argv[0] in ("-c", "--command"):
        if len(argv) != 2:
            raise CommandFailed(f"flock: {argv[0]} requires exactly one command argument", EX_USAGE)
        argv = [ctx.env.get("SHELL") or "/bin/sh", "-c", argv[1]]
    path = ctx.path(target)
    try:
        if ctx.fs.lookup(path) is None:
            ctx.fs.write_bytes(path, b"", ctx.cred, ctx.cwd)
        else:
            ctx.read_text(path)  # flock opens it read-only: it must be readable
    except FsError as exc:
        status = EX_CANTCREAT if exc.errno in (28, 30) else EX_NOINPUT  # ENOSPC, EROFS
        raise CommandFailed(f"flock: cannot open lock file {target}: {exc.reason}", status) from None
    lock = locks(ctx.host).setdefault(path, _Lock())
    if not await _acquire(ctx, lock, exclusive, wait_s):
        return conflict_status
    try:
        return await ctx.shell.exec_external(argv, IO(_PipeInput(ctx.stdin), ctx.out, ctx.err), ctx.env, cred=ctx.cred)
    finally:
        # Whatever ended the command (EOF on stdin, the channel or connection gone, a cancelled task), the lock goes
        # with it, as a kernel lock goes with the last descriptor.
        lock.drop(exclusive)
