"""Shell builtins: control flow, variables, echo/printf/test and friends."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING

from wizard.lab.shell import parser as P
from wizard.lab.shell.lexer import ShellSyntaxError
from wizard.lab.shell.printing import echo_text, printf_text
from wizard.lab.vfs import Dir, FsError

if TYPE_CHECKING:
    from wizard.lab.shell.interp import IO, Shell

Builtin = Callable[["Shell", list[str], "IO"], Awaitable[int]]
BUILTINS: dict[str, Builtin] = {}


def builtin(*names: str) -> Callable[[Builtin], Builtin]:
    def deco(fn: Builtin) -> Builtin:
        for n in names:
            BUILTINS[n] = fn
        return fn

    return deco


@builtin(":", "true")
async def _true(sh: Shell, argv: list[str], io: IO) -> int:
    return 0


@builtin("false")
async def _false(sh: Shell, argv: list[str], io: IO) -> int:
    return 1


@builtin("trap", "umask", "shopt", "hash", "alias", "unalias", "ulimit", "disown", "builtin")
async def _noop(sh: Shell, argv: list[str], io: IO) -> int:
    return 0


@builtin("exit")
async def _exit(sh: Shell, argv: list[str], io: IO) -> int:
    from wizard.lab.shell.interp import ShellExit

    raise ShellExit(_int(argv[1], 2) & 0xFF if len(argv) > 1 else sh.status)


@builtin("return")
async def _return(sh: Shell, argv: list[str], io: IO) -> int:
    from wizard.lab.shell.interp import _Return

    raise _Return(_int(argv[1], 2) if len(argv) > 1 else sh.status)


@builtin("break", "continue")
async def _break(sh: Shell, argv: list[str], io: IO) -> int:
    from wizard.lab.shell.interp import _Break, _Continue

    n = _int(argv[1], 1) if len(argv) > 1 else 1
    raise (_Break if argv[0] == "break" else _Continue)(n)


def _int(text: str, default: int) -> int:
    try:
        return int(text)
    except ValueError:
        return default


@builtin("set")
async def _set(sh: Shell, argv: list[str], io: IO) -> int:
    letters = {"e": "errexit", "u": "nounset", "x": "xtrace", "n": "noexec"}
    args = argv[1:]
    i = 0
    while i < len(args):
        a = args[i]
        if a == "--":
            sh.positional = args[i + 1 :]
            return 0
        if a in ("-o", "+o") and i + 1 < len(args):
            name = args[i + 1]
            if name in sh.opts:
                sh.opts[name] = a == "-o"
            i += 2
            continue
        if a[:1] in "-+" and len(a) > 1:
            for ch in a[1:]:
                if ch == "o" and i + 1 < len(args):
                    i += 1
                    if args[i] in sh.opts:
                        sh.opts[args[i]] = a[0] == "-"
                elif ch in letters:
                    sh.opts[letters[ch]] = a[0] == "-"
            i += 1
            continue
        sh.positional = args[i:]
        return 0
    return 0


@builtin("shift")
async def _shift(sh: Shell, argv: list[str], io: IO) -> int:
    n = _int(argv[1], 1) if len(argv) > 1 else 1
    if n > len(sh.positional):
        return 1
    sh.positional = sh.positional[n:]
    return 0


@builtin("export", "readonly", "local", "declare", "typeset")
async def _export(sh: Shell, argv: list[str], io: IO) -> int:
    export = argv[0] == "export"
    for a in argv[1:]:
        if a.startswith("-"):
            continue
        name, eq, value = a.partition("=")
        if eq:
            sh.set_var(name, value, export=export)
        elif export:
            sh.exported.add(name)
        else:
            sh.vars.setdefault(name, "")
    return 0


@builtin("unset")
async def _unset(sh: Shell, argv: list[str], io: IO) -> int:
    for a in argv[1:]:
        if a.startswith("-"):
            continue
        sh.vars.pop(a, None)
        sh.functions.pop(a, None)
        sh.exported.discard(a)
    return 0


@builtin("cd")
async def _cd(sh: Shell, argv: list[str], io: IO) -> int:
    target = argv[1] if len(argv) > 1 else (sh.vars.get("HOME") or "/")
    node = sh.host.fs.lookup(target, sh.cwd)
    if node is None:
        sh.diag(f"cd: {target}: No such file or directory", io)
        return 1
    if not isinstance(node, Dir):
        sh.diag(f"cd: {target}: Not a directory", io)
        return 1
    sh.cwd = sh.host.fs.realpath(target, sh.cwd)
    sh.vars["PWD"] = sh.cwd
    return 0


@builtin("pwd")
async def _pwd(sh: Shell, argv: list[str], io: IO) -> int:
    io.out.write(sh.cwd + "\n")
    return 0


@builtin("wait")
async def _wait(sh: Shell, argv: list[str], io: IO) -> int:
    status = 0
    for task in list(sh.tasks):
        status = await asyncio.shield(task)
    sh.tasks.clear()
    return status


@builtin("echo")
async def _echo(sh: Shell, argv: list[str], io: IO) -> int:
    io.out.write(echo_text(argv[1:]))
    return 0


@builtin("printf")
async def _printf(sh: Shell, argv: list[str], io: IO) -> int:
    args = argv[1:]
    if args and args[0] == "--":
        args = args[1:]
    if not args:
        io.err.write("printf: usage: printf [-v var] format [arguments]\n")
        return 2
    io.out.write(printf_text(args[0], args[1:]))
    return 0


@builtin("read")
async def _read(sh: Shell, argv: list[str], io: IO) -> int:
    names = [a for a in argv[1:] if not a.startswith("-")]
    raw = "-r" in argv
    line = await io.stdin.readline()
    if not line:
        for n in names or ["REPLY"]:
            sh.set_var(n, "")
        return 1
    text = line.rstrip("\n")
    if not raw:
        text = text.replace("\\", "")
    names = names or ["REPLY"]
    pieces = text.split(None, len(names) - 1) if len(names) > 1 else [text.strip()]
    for i, n in enumerate(names):
        sh.set_var(n, pieces[i] if i < len(pieces) else "")
    return 0


@builtin("source", ".")
async def _source(sh: Shell, argv: list[str], io: IO) -> int:
    if len(argv) < 2:
        sh.diag(f"{argv[0]}: filename argument required", io)
        return 2
    try:
        text = sh.host.fs.read_text(argv[1], sh.cred, sh.cwd)
    except FsError as exc:
        sh.diag(f"{argv[1]}: {exc.reason}", io)
        return 1
    return await _eval_text(sh, text, io, argv[2:] or None)


@builtin("eval")
async def _eval(sh: Shell, argv: list[str], io: IO) -> int:
    return await _eval_text(sh, " ".join(argv[1:]), io, None)


async def _eval_text(sh: Shell, text: str, io: IO, positional: list[str] | None) -> int:
    try:
        tree = P.parse(text)
    except ShellSyntaxError as exc:
        sh.diag(str(exc), io)
        return 2
    saved = sh.positional
    if positional is not None:
        sh.positional = positional
    try:
        return await sh.run_seq(tree, io)
    finally:
        sh.positional = saved


@builtin("exec")
async def _exec(sh: Shell, argv: list[str], io: IO) -> int:
    from wizard.lab.shell.interp import ShellExit

    if len(argv) == 1:
        return 0
    raise ShellExit(await sh.exec_external(argv[1:], io, sh.environ()))


@builtin("command", "type")
async def _command(sh: Shell, argv: list[str], io: IO) -> int:
    args = argv[1:]
    verbose = argv[0] == "type" or (args[:1] == ["-V"])
    if args[:1] in (["-v"], ["-V"]) or argv[0] == "type":
        names = args[1:] if args[:1] in (["-v"], ["-V"]) else args
        status = 0
        for n in names:
            if n in sh.functions:
                io.out.write(f"{n} is a function\n" if verbose else f"{n}\n")
            elif n in BUILTINS:
                io.out.write(f"{n} is a shell builtin\n" if verbose else f"{n}\n")
            elif (path := sh.find_executable(n)) and sh.host.fs.exists(path):
                io.out.write(f"{n} is {path}\n" if verbose else f"{path}\n")
            else:
                if verbose:
                    sh.diag(f"{argv[0]}: {n}: not found", io)
                status = 1
        return status
    if not args:
        return 0
    if args[0] in BUILTINS:
        return await BUILTINS[args[0]](sh, args, io)
    return await sh.exec_external(args, io, sh.environ())


# test/[/[[ live in their own module and register here (imported last: they use @builtin).
from wizard.lab.shell import testexpr  # noqa: E402, F401

__all__ = ["BUILTINS", "builtin", "echo_text", "printf_text"]
