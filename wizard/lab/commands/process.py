"""Process-level commands: sudo, bash/sh, env, nohup, sleep, timeout and the binary echo/printf/test."""

from __future__ import annotations

import asyncio
import re

from wizard.lab import strange
from wizard.lab.commands import command
from wizard.lab.shell.builtins import BUILTINS, echo_text, printf_text
from wizard.lab.shell.interp import IO, Shell
from wizard.lab.streams import CommandFailed, Ctx
from wizard.lab.vfs import ROOT, Cred, FsError

SECURE_PATH = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin:/snap/bin"


def _io(ctx: Ctx) -> IO:
    return IO(ctx.stdin, ctx.out, ctx.err)


@command("echo")
async def echo(ctx: Ctx) -> int:
    ctx.out.write(echo_text(ctx.args))
    return 0


@command("printf")
async def printf(ctx: Ctx) -> int:
    if not ctx.args:
        raise CommandFailed("printf: missing operand")
    ctx.out.write(printf_text(ctx.args[0], ctx.args[1:]))
    return 0


@command("test", "[", "true", "false")
async def test(ctx: Ctx) -> int:
    return await BUILTINS[ctx.name](ctx.shell, ctx.argv, _io(ctx))


@command("printenv")
async def printenv(ctx: Ctx) -> int:
    if not ctx.args:
        for k, v in ctx.env.items():
            ctx.print(f"{k}={v}")
        return 0
    status = 0
    for name in ctx.args:
        if name in ctx.env:
            ctx.print(ctx.env[name])
        else:
            status = 1
    return status


@command("env")
async def env(ctx: Ctx) -> int:
    args = list(ctx.args)
    new_env = dict(ctx.env)
    while args:
        a = args[0]
        if a in ("-i", "--ignore-environment", "-"):
            new_env = {}
        elif a == "-u" and len(args) > 1:
            new_env.pop(args[1], None)
            args.pop(0)
        elif "=" in a and not a.startswith("="):
            k, _, v = a.partition("=")
            new_env[k] = v
        else:
            break
        args.pop(0)
    if not args:
        for k, v in new_env.items():
            ctx.print(f"{k}={v}")
        return 0
    return await ctx.shell.exec_external(args, _io(ctx), new_env, cred=ctx.cred, not_found_prefix="env")


@command("nohup")
async def nohup(ctx: Ctx) -> int:
    if not ctx.args:
        raise CommandFailed("nohup: missing operand", 125)
    return await ctx.shell.exec_external(ctx.args, _io(ctx), ctx.env, cred=ctx.cred, not_found_prefix="nohup")


def parse_duration(text: str) -> float:
    if text == "infinity":
        return float("inf")
    m = re.fullmatch(r"(\d+(?:\.\d*)?|\.\d+)([smhd]?)", text)
    if not m:
        raise ValueError(text)
    return float(m.group(1)) * {"": 1, "s": 1, "m": 60, "h": 3600, "d": 86400}[m.group(2)]


@command("sleep")
async def sleep(ctx: Ctx) -> int:
    if not ctx.args:
        raise CommandFailed("sleep: missing operand\nTry 'sleep --help' for more information.")
    try:
        total = sum(parse_duration(a) for a in ctx.args)
    except ValueError as exc:
        raise CommandFailed(f"sleep: invalid time interval '{exc}'\nTry 'sleep --help' for more information.") from None
    if total == float("inf"):
        await asyncio.Event().wait()
    await asyncio.sleep(total * ctx.host.time_scale)
    return 0


@command("timeout")
async def timeout(ctx: Ctx) -> int:
    args = list(ctx.args)
    while args and args[0].startswith("-"):
        a = args.pop(0)
        if a in ("-s", "-k", "--signal", "--kill-after") and args:
            args.pop(0)
    if len(args) < 2:
        raise CommandFailed("timeout: missing operand\nTry 'timeout --help' for more information.", 125)
    try:
        limit = parse_duration(args[0])
    except ValueError:
        raise CommandFailed(f"timeout: invalid time interval '{args[0]}'", 125) from None
    if ctx.shell.find_executable(args[1], ctx.env.get("PATH")) is None or not ctx.fs.exists(
        ctx.shell.find_executable(args[1], ctx.env.get("PATH")) or "/nonexistent"
    ):
        raise CommandFailed(f"timeout: failed to run command '{args[1]}': No such file or directory", 127)
    job = ctx.shell.exec_external(args[1:], _io(ctx), ctx.env, cred=ctx.cred)
    try:
        return await asyncio.wait_for(job, None if limit == float("inf") else limit * ctx.host.time_scale)
    except TimeoutError:
        return 124


@command("bash")
async def bash(ctx: Ctx) -> int:
    """bash/sh/dash: -c STRING, a script file, or a script on stdin (-s ARGS: with $1...); -e -u -x -n -o pipefail
    honoured."""
    args = list(ctx.args)
    opts: dict[str, bool] = {}
    source: str | None = None
    letters = {"e": "errexit", "u": "nounset", "x": "xtrace", "n": "noexec"}
    argv0 = ctx.name
    while args and args[0].startswith(("-", "+")) and args[0] not in ("-", "--"):
        a = args.pop(0)
        if a in ("-o", "+o") and args:
            opts[args.pop(0)] = a == "-o"
            continue
        for ch in a[1:]:
            if ch == "c":
                source = "c"
            elif ch == "s" and source is None:  # bash(1), -s: commands from stdin, the arguments are $1...
                source = "s"
            elif ch in letters:
                opts[letters[ch]] = a[0] == "-"
    if args and args[0] == "--":
        args.pop(0)
    positional: list[str] = []
    if source == "c":
        if not args:
            raise CommandFailed(f"{ctx.name}: -c: option requires an argument", 2)
        text = args.pop(0)
        if args:
            argv0, positional = args[0], args[1:]
    elif source == "s":
        text, positional = await ctx.stdin.read(), args
    elif args:
        path = args[0]
        try:
            text = ctx.fs.read_text(path, ctx.cred, ctx.cwd)
        except FsError as exc:
            ctx.eprint(f"{ctx.name}: {path}: {exc.reason}")
            return 127 if exc.errno == 2 else 126
        argv0, positional = path, args[1:]
    else:
        text = await ctx.stdin.read()
    shell = Shell(ctx.host, cred=ctx.cred, env=ctx.env, cwd=ctx.cwd, io=_io(ctx), argv0=argv0, positional=positional)
    for name, value in opts.items():
        if name in shell.opts:
            shell.opts[name] = value
    return await shell.run(text)


@command("sudo")
async def sudo(ctx: Ctx) -> int:
    args = list(ctx.args)
    non_interactive = read_stdin = keep_env = False
    user = "root"
    while args and args[0].startswith("-"):
        a = args.pop(0)
        if a == "--":
            break
        if a in ("-p", "--prompt", "-u", "--user", "-g", "-C") and args:
            value = args.pop(0)
            if a in ("-u", "--user"):
                user = value
            continue
        if a.startswith("--"):
            non_interactive |= a == "--non-interactive"
            read_stdin |= a == "--stdin"
            keep_env |= a.startswith("--preserve-env")
            continue
        for ch in a[1:]:
            non_interactive |= ch == "n"
            read_stdin |= ch == "S"
            keep_env |= ch == "E"
        if "p" in a[1:] and args and a.endswith("p"):
            args.pop(0)
    if not args:
        raise CommandFailed(
            "usage: sudo -h | -K | -k | -V\nusage: sudo [-AbEHknPS] [-u user] [VAR=value] [-i|-s] [<command>]"
        )
    if not ctx.root:
        strange.sudo_lecture(ctx.host, ctx.err)  # the ``sudo_lecture`` fault
        refused = ctx.host.fault("sudo_refused") is not None
        asks = refused or ctx.host.fault("sudo_password") is not None
        if read_stdin:
            password = (await ctx.stdin.readline()).rstrip("\n")
            if not password:
                raise CommandFailed("sudo: no password was provided\nsudo: a password is required")
            if refused:
                raise CommandFailed("Sorry, try again.\nsudo: 1 incorrect password attempt")
        elif asks:
            if non_interactive:
                raise CommandFailed("sudo: a password is required")
            raise CommandFailed(
                "sudo: a terminal is required to read the password; either use the -S option to read from standard "
                "input or configure an askpass helper\nsudo: a password is required"
            )
    target: Cred = ROOT if user == "root" else ctx.host.cred_for(user)
    env = (
        dict(ctx.env) if keep_env else {k: v for k, v in ctx.env.items() if k in ("TERM", "LANG", "LC_ALL", "DISPLAY")}
    )
    env.update(
        {
            "PATH": SECURE_PATH,
            "HOME": "/root" if user == "root" else f"/home/{user}",
            "USER": user,
            "LOGNAME": user,
            "SHELL": "/bin/bash",
            "SUDO_USER": ctx.cred.user,
            "SUDO_UID": str(ctx.cred.uid),
            "SUDO_GID": str(ctx.cred.gid),
            "SUDO_COMMAND": " ".join(args),
        }
    )
    while args and re.match(r"^[A-Za-z_][A-Za-z0-9_]*=", args[0]):
        k, _, v = args.pop(0).partition("=")
        env[k] = v
    if not args:
        return 0
    exe = ctx.shell.find_executable(args[0], SECURE_PATH)
    if exe is None or not ctx.fs.exists(exe):
        raise CommandFailed(f"sudo: {args[0]}: command not found")
    return await ctx.shell.exec_external(args, _io(ctx), env, cred=target, path=exe)
