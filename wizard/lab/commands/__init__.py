"""Registry of simulated programs: a handler per tool name, dispatched when the shell runs its binary."""

from __future__ import annotations

import getopt
from collections.abc import Awaitable, Callable

from wizard.lab.streams import CommandFailed, Ctx

Handler = Callable[[Ctx], Awaitable[int]]
REGISTRY: dict[str, Handler] = {}


def command(*names: str) -> Callable[[Handler], Handler]:
    """Register ``fn`` as the implementation of the simulated binaries ``names``."""

    def deco(fn: Handler) -> Handler:
        for n in names:
            REGISTRY[n] = fn
        return fn

    return deco


def gnu_getopt(args: list[str], short: str, long: list[str]) -> tuple[list[tuple[str, str]], list[str]]:
    """getopt.gnu_getopt in linear time: the standard one copies the rest of the list after every operand, which
    made a `grep` over 3,000 sysfs files spend a third of its time parsing its arguments."""
    opts: list[tuple[str, str]] = []
    rest: list[str] = []
    i = 0
    while i < len(args):
        arg = args[i]
        if arg == "--":
            rest += args[i + 1 :]
            break
        if arg.startswith("-") and arg != "-":
            following = args[i + 1 : i + 2]  # the most an option can take as its value
            if arg.startswith("--"):
                opts, left = getopt.do_longs(opts, arg[2:], long, following)
            else:
                opts, left = getopt.do_shorts(opts, arg[1:], short, following)
            i += 1 + len(following) - len(left)
        else:
            rest.append(arg)
            i += 1
    return opts, rest


def getopts(ctx: Ctx, short: str, long: list[str] | None = None) -> tuple[dict[str, str], list[str]]:
    """GNU-style option parsing; unknown options fail like coreutils ("invalid option -- 'x'")."""
    try:
        pairs, rest = gnu_getopt(ctx.args, short, long or [])
    except getopt.GetoptError as exc:
        opt = exc.opt
        if len(opt) == 1:
            raise CommandFailed(
                f"{ctx.name}: invalid option -- '{opt}'\nTry '{ctx.name} --help' for more information."
            ) from None
        raise CommandFailed(
            f"{ctx.name}: unrecognized option '--{opt}'\nTry '{ctx.name} --help' for more information."
        ) from None
    opts: dict[str, str] = {}
    for k, v in pairs:
        key = k.lstrip("-")
        opts[key] = v  # the last value wins; "KEY#" counts repeats (-vv)
        opts[f"{key}#"] = str(int(opts.get(f"{key}#", "0")) + 1)
    return opts, rest


def require_root(ctx: Ctx, message: str, status: int = 1) -> None:
    if not ctx.root:
        raise CommandFailed(message, status)


def _load() -> None:
    from wizard.lab.commands import (  # noqa: F401
        downloads,
        dpkg,
        ethtool,
        fileinfo,
        files,
        gpu,
        ibdiag,
        kernel,
        net,
        netplan,
        ofed,
        packages,
        ping,
        process,
        qos,
        rdma,
        sedawk,
        services,
        system,
        text,
    )


def _load_stage_extensions() -> None:
    # Stage simulations wrap base handlers (they look them up in REGISTRY): they must load after _load().
    import wizard.lab.cmd_flock  # noqa: F401
    import wizard.lab.cmd_gpudirect  # noqa: F401
    import wizard.lab.cmd_inference  # noqa: F401
    import wizard.lab.cmd_lldp  # noqa: F401
    import wizard.lab.cmd_nccl  # noqa: F401
    import wizard.lab.cmd_ofed  # noqa: F401
    import wizard.lab.cmd_pcie  # noqa: F401
    import wizard.lab.cmd_perftest  # noqa: F401
    import wizard.lab.cmd_transient  # noqa: F401


_load()
_load_stage_extensions()

__all__ = ["REGISTRY", "Handler", "command", "getopts", "require_root"]
