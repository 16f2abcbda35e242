"""``ip [-force] -batch FILE|-``: one ip command per line, as iproute2's do_batch (lib/utils.c) runs them.

Each line is run as if given on the command line with the same global options (``-j`` makes every command print
its own JSON array on its own line: ip/iproute.c opens and closes the JSON writer per command). A failing line
prints its error, then ``Command failed FILE:LINE``; without ``-force`` the batch stops there. The exit status is
1 when any line failed.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable

from wizard.lab.streams import CommandFailed, Ctx
from wizard.lab.vfs import FsError

Dispatch = Callable[[Ctx, str, list[str], dict], Awaitable[int]]


async def batch(ctx: Ctx, name: str, opt: dict, dispatch: Dispatch) -> int:
    if name == "-":
        text = await ctx.stdin.read()
    else:
        try:
            text = ctx.read_text(name)
        except FsError as exc:
            raise CommandFailed(f'Cannot open file "{name}" for reading: {exc.reason}', 1) from None
    status = 0
    for number, raw in enumerate(text.splitlines(), start=1):
        words = raw.split("#", 1)[0].split()  # getcmdline drops comments; makeargs splits on blanks
        if not words:
            continue
        try:
            failed = await dispatch(ctx, words[0], words[1:], opt) != 0
        except CommandFailed as exc:
            ctx.eprint(exc.message)
            failed = True
        if failed:
            ctx.eprint(f"Command failed {name}:{number}")
            status = 1
            if not opt.get("force"):
                break
    return status
