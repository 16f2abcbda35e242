"""Running programs: PATH lookup, simulated binaries dispatched to their handlers, shell scripts by shebang."""

from __future__ import annotations

import posixpath
from typing import TYPE_CHECKING

from wizard.lab import strange
from wizard.lab.streams import CommandFailed, Ctx
from wizard.lab.vfs import Cred, Dir, FsError, invalidate

if TYPE_CHECKING:
    from wizard.lab.shell.interp import IO, Shell

MARKER = b"\x7fELF roce-wizard-sim:"
DEFAULT_PATH = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"


def find_executable(shell: Shell, name: str, path_var: str | None = None) -> str | None:
    if strange.hidden(shell.host, name):  # the ``missing=TOOL`` fault
        return None
    if "/" in name:
        return shell.host.fs.abspath(name, shell.cwd)
    search = path_var if path_var is not None else (shell.vars.get("PATH") or DEFAULT_PATH)
    for d in search.split(":"):
        cand = posixpath.join(d or ".", name)
        node = shell.host.fs.lookup(cand, shell.cwd)
        if node is not None and not isinstance(node, Dir):
            return shell.host.fs.abspath(cand, shell.cwd)
    return None


async def exec_external(
    shell: Shell,
    argv: list[str],
    io: IO,
    env: dict[str, str],
    *,
    cred: Cred | None = None,
    path: str | None = None,
    not_found_prefix: str | None = None,
) -> int:
    """Run a program file: a simulated binary (dispatch to its handler) or a shell script."""
    cred = cred or shell.cred
    name = argv[0]
    exe = path or shell.find_executable(name, env.get("PATH"))
    node = shell.host.fs.lookup(exe, shell.cwd) if exe else None
    if node is None:
        msg = f"{name}: No such file or directory" if "/" in name else f"{name}: command not found"
        if posixpath.basename(shell.argv0) == "sh" and "/" not in name:
            msg = f"{name}: not found"
        if not_found_prefix:
            io.err.write(f"{not_found_prefix}: {msg}\n")
        else:
            shell.diag(msg, io)
        return 127
    if isinstance(node, Dir):
        shell.diag(f"{name}: Is a directory", io)
        return 126
    if not node.allows(cred, 1):
        shell.diag(f"{name}: Permission denied", io)
        return 126
    data = node.read()  # type: ignore[attr-defined]
    shell.host.note_argv(argv)
    if data.startswith(MARKER):
        tool = data[len(MARKER) :].split()[0].decode()
        return await shell.call_handler(tool, argv, io, env, cred)
    text = data.decode(errors="replace")
    interp = text.split("\n", 1)[0][2:].strip().split() if text.startswith("#!") else ["/bin/sh"]
    prog = posixpath.basename(interp[0]) if interp else "sh"
    if prog == "env" and len(interp) > 1:
        prog = interp[1]
    if prog not in ("bash", "sh", "dash"):
        io.err.write(f"{name}: {prog} scripts cannot run on the simulated host\n")
        return 126
    from wizard.lab.shell.interp import Shell

    sub = Shell(shell.host, cred=cred, env=env, cwd=shell.cwd, io=io, argv0=exe or name, positional=argv[1:])
    return await sub.run(text)


async def call_handler(shell: Shell, tool: str, argv: list[str], io: IO, env: dict[str, str], cred: Cred) -> int:
    from wizard.lab.commands import REGISTRY

    handler = REGISTRY.get(tool)
    if handler is None:
        io.err.write(f"{argv[0]}: this program is installed but not simulated\n")
        return 126
    out = strange.localised(shell.host, tool, env, io.out)  # the ``locale`` fault
    ctx = Ctx(shell.host, list(argv), dict(env), shell.cwd, cred, io.stdin, out, io.err, shell)
    invalidate()
    try:
        return await handler(ctx)
    except CommandFailed as exc:
        if exc.message:
            io.err.write(exc.message.rstrip("\n") + "\n")
        return exc.status
    except FsError as exc:
        io.err.write(f"{ctx.name}: write error: {exc.reason}\n")
        return 1
