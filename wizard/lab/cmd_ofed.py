"""Simulation for stage ofed: `apt-get autoremove`, the last step of NVIDIA's documented DOCA/MLNX_OFED uninstall.

The base apt-get knows update/install/remove; NVIDIA's "Uninstalling Software from Host" ends with
`apt-get autoremove`. Here nothing is left to remove (ofed_uninstall.sh --force already took NVIDIA's packages and
the lab keeps no auto-installed marks), so it prints what apt prints then and exits 0; without root it fails on the
dpkg lock like the other apt operations.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable

from wizard.lab.commands import REGISTRY, command
from wizard.lab.streams import CommandFailed, Ctx

_original: dict[str, Callable[[Ctx], Awaitable[int]]] = {n: REGISTRY[n] for n in ("apt-get", "apt")}
LOCK_ERROR = (
    "E: Could not open lock file /var/lib/dpkg/lock-frontend - open (13: Permission denied)\n"
    "E: Unable to acquire the dpkg frontend lock (/var/lib/dpkg/lock-frontend), are you root?"
)


def _operation(args: list[str]) -> str | None:
    words, skip = [], False
    for arg in args:
        if skip:
            skip = False
        elif arg == "-o":
            skip = True
        elif not arg.startswith("-"):
            words.append(arg)
    return words[0] if words else None


@command("apt-get", "apt")
async def apt_get(ctx: Ctx) -> int:
    if _operation(ctx.args) != "autoremove":
        return await _original[ctx.name if ctx.name in _original else "apt-get"](ctx)
    if not ctx.root:
        raise CommandFailed(LOCK_ERROR, 100)
    ctx.print("Reading package lists...\nBuilding dependency tree...\nReading state information...")
    ctx.print("0 upgraded, 0 newly installed, 0 to remove and 0 not upgraded.")
    return 0
