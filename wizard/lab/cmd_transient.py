"""Transient systemd timers (`systemd-run --on-active`), which the wizard's automatic revert relies on.

Like real transient units they live in memory only: a reboot loses them, `systemctl stop NAME.timer` cancels one.
When a timer fires on a host that a change had cut off (the `lockout` fault), the revert it runs restores the
management network, so the host becomes reachable again.
"""

from __future__ import annotations

import asyncio
import shlex

from wizard.engine.clock import window_scale
from wizard.lab.commands import REGISTRY, Handler, command, require_root
from wizard.lab.streams import CommandFailed, Ctx, TextInput

_base_systemctl: Handler = REGISTRY["systemctl"]


def _timers(host) -> dict[str, asyncio.Task]:  # noqa: ANN001 - SimHost
    return host.__dict__.setdefault("transient_timers", {})


def _seconds(value: str) -> float:
    text = value.strip().lower()
    for suffix, factor in (("min", 60.0), ("ms", 0.001), ("s", 1.0), ("m", 60.0)):
        if text.endswith(suffix):
            return float(text[: -len(suffix)]) * factor
    return float(text)


@command("systemd-run")
async def systemd_run(ctx: Ctx) -> int:
    require_root(ctx, "Failed to start transient timer unit: Access denied")
    unit, delay, rest = None, None, list(ctx.args)
    while rest and rest[0].startswith("-"):
        opt = rest.pop(0)
        if opt.startswith("--unit="):
            unit = opt.split("=", 1)[1]
        elif opt.startswith("--on-active="):
            delay = _seconds(opt.split("=", 1)[1])
        elif opt in ("--collect", "--quiet", "-q", "--no-block"):
            continue
        elif opt.startswith(("--description=", "--timer-property=", "--property=")):
            continue
        else:
            raise CommandFailed(f"systemd-run: unrecognized option '{opt}'")
    if not rest:
        raise CommandFailed("systemd-run: Command line to execute required.")
    if delay is None:
        raise CommandFailed("systemd-run: this simulation only runs timers (--on-active=)")
    host = ctx.host
    name = unit or f"run-r{len(_timers(host)) + 1:x}"
    if name in _timers(host):
        raise CommandFailed(f"Failed to start transient timer unit: Unit {name}.timer was already loaded.")
    line = shlex.join(rest)

    async def fire() -> None:
        # A safety window: on the lab's fast clock it keeps a floor (wizard/engine/clock.py), as the wizard's wait does.
        await asyncio.sleep(delay * window_scale(host.time_scale))
        _timers(host).pop(name, None)
        await host.run_as_root(line, out=_Journal(host, name), err=_Journal(host, name), stdin=TextInput(""))
        if getattr(host, "locked_out", False):
            await host.restore_management()

    task = asyncio.get_running_loop().create_task(fire())
    host.background.add(task)
    task.add_done_callback(host.background.discard)
    _timers(host)[name] = task
    ctx.eprint(f"Running timer as unit: {name}.timer")
    ctx.eprint(f"Will run service as unit: {name}.service")
    return 0


class _Journal:
    def __init__(self, host, unit: str) -> None:  # noqa: ANN001
        self.host, self.unit = host, unit

    def write(self, text: str) -> None:
        for line in text.splitlines():
            self.host.journal_log(f"{self.unit}.service", line, ident=self.unit)


@command("systemctl")
async def systemctl(ctx: Ctx) -> int:
    args = [a for a in ctx.args if not a.startswith("-")]
    if len(args) == 2 and args[0] == "stop" and args[1].endswith(".timer"):
        task = _timers(ctx.host).pop(args[1].removesuffix(".timer"), None)
        if task is not None:
            require_root(ctx, "Failed to stop unit: Access denied")
            task.cancel()
            return 0
    return await _base_systemctl(ctx)
