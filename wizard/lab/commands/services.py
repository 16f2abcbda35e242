"""systemctl (incl. reboot/shutdown via argv[0]) and journalctl."""

from __future__ import annotations

import time

from wizard.lab import services as sd
from wizard.lab.commands import command
from wizard.lab.procfs import running_commands
from wizard.lab.streams import CommandFailed, Ctx

AUTH = "Interactive authentication required."


def _stamp(ts: float) -> str:
    return time.strftime("%a %Y-%m-%d %H:%M:%S UTC", time.gmtime(ts))


def _ago(ts: float) -> str:
    secs = max(1, int(time.time() - ts))
    return f"{secs}s ago" if secs < 60 else f"{secs // 60}min {secs % 60}s ago"


@command("systemctl")
async def systemctl(ctx: Ctx) -> int:
    if ctx.name in ("reboot", "shutdown", "poweroff"):
        return await _reboot(ctx)
    args = [a for a in ctx.args if not a.startswith("-")]
    flags = [a for a in ctx.args if a.startswith("-")]
    if not args:
        ctx.print("  UNIT                      LOAD   ACTIVE SUB     DESCRIPTION")
        for name, rt in sorted(ctx.host.units.items()):
            u = sd.find_unit(ctx.host, name)
            ctx.print(f"  {name:<25} loaded {rt.state:<6} {rt.sub:<7} {u.description if u else name}")
        return 0
    verb, names = args[0], args[1:]
    if verb in ("reboot", "poweroff", "halt"):
        return await _reboot(ctx)
    if verb == "daemon-reload":
        if not ctx.root:
            raise CommandFailed(f"Failed to reload daemon: {AUTH}")
        sd.daemon_reload(ctx.host)
        return 0
    if verb in ("is-active", "is-enabled", "is-failed", "status", "show", "cat"):
        return await _query(ctx, verb, names, flags)
    if verb in (
        "start",
        "stop",
        "restart",
        "reload",
        "try-restart",
        "enable",
        "disable",
        "mask",
        "unmask",
        "reload-or-restart",
        "kill",
        "reset-failed",
    ):
        return await _change(ctx, verb, names, flags)
    raise CommandFailed(f"Unknown command verb {verb}.")


async def _reboot(ctx: Ctx) -> int:
    if not ctx.root:
        raise CommandFailed(f"Failed to set wall message, ignoring: {AUTH}\nCall to Reboot failed: {AUTH}")
    ctx.host.request_reboot()
    return 0


async def _change(ctx: Ctx, verb: str, names: list[str], flags: list[str]) -> int:
    host = ctx.host
    if not names:
        raise CommandFailed("Too few arguments.")
    status = 0
    for raw in names:
        name = sd.normalize(raw)
        unit = sd.find_unit(host, name)
        if not ctx.root:
            what = {"enable": "enable unit", "disable": "disable unit", "mask": "mask unit", "unmask": "unmask unit"}
            if verb in what:
                raise CommandFailed(f"Failed to {what[verb]}: {AUTH}")
            raise CommandFailed(
                f"Failed to {verb} {name}: {AUTH}\nSee system logs and 'systemctl status {name}' for details."
            )
        if unit is None:
            if verb in ("enable", "disable"):
                raise CommandFailed(f"Failed to {verb} unit: Unit file {name} does not exist.")
            if verb == "stop":
                ctx.eprint(f"Failed to stop {name}: Unit {name} not loaded.")
                status = 5
                continue
            raise CommandFailed(f"Failed to {verb} {name}: Unit {name} not found.", 5)
        if verb in ("start", "restart", "reload", "try-restart", "reload-or-restart") and sd.unit_loaded_changed(
            host, unit
        ):
            ctx.eprint(
                f"Warning: The unit file, source configuration file or drop-ins of {name} changed on disk. "
                "Run 'systemctl daemon-reload' to reload units."
            )
        if verb == "enable":
            for msg in sd.enable(host, unit):
                ctx.eprint(msg)
            if "--now" in flags:
                await sd.start(host, unit)
        elif verb == "disable":
            for msg in sd.disable(host, unit):
                ctx.eprint(msg)
            if "--now" in flags:
                await sd.stop(host, unit)
        elif verb == "mask":
            link = f"/etc/systemd/system/{name}"
            if host.fs.lookup(link, follow=False) is None:
                host.fs.symlink("/dev/null", link)
                ctx.eprint(f"Created symlink {link} \u2192 /dev/null.")
        elif verb == "unmask":
            link = f"/etc/systemd/system/{name}"
            node = host.fs.lookup(link, follow=False)
            if node is not None and getattr(node, "target", "") == "/dev/null":
                host.fs.remove(link)
                ctx.eprint(f"Removed {link}.")
        elif verb in ("stop", "kill"):
            await sd.stop(host, unit)
        elif verb == "reset-failed":
            rt = sd.runtime(host, name)
            if rt.state == "failed":
                rt.state, rt.sub = "inactive", "dead"
        else:
            if "masked" in unit.sections:
                raise CommandFailed(f"Failed to {verb} {name}: Unit {name} is masked.")
            if verb == "try-restart" and sd.runtime(host, name).state != "active":
                continue
            ok = await sd.start(host, unit, "restart" if verb != "start" else "start", no_block="--no-block" in flags)
            if not ok and sd.runtime(host, name).state != "failed":
                ctx.eprint(f"A dependency job for {name} failed. See 'journalctl -xe' for details.")
                status = 1
            elif not ok:
                ctx.eprint(
                    f"Job for {name} failed because the control process exited with error code.\n"
                    f'See "systemctl status {name}" and "journalctl -xeu {name}" for details.'
                )
                status = 1
    return status


async def _query(ctx: Ctx, verb: str, names: list[str], flags: list[str]) -> int:
    host = ctx.host
    quiet = "--quiet" in flags or "-q" in flags
    status = 0
    for raw in names:
        name = sd.normalize(raw)
        unit = sd.find_unit(host, name)
        rt = host.units.get(name) or sd.Runtime()
        if verb == "is-active":
            state = rt.state if unit else "inactive"
            if not quiet:
                ctx.print(state)
            status = status or (0 if state == "active" else 3)
        elif verb == "is-failed":
            if not quiet:
                ctx.print(rt.state)
            status = status or (0 if rt.state == "failed" else 1)
        elif verb == "is-enabled":
            if unit is None:
                ctx.eprint(f"Failed to get unit file state for {name}: No such file or directory")
                status = 1
                continue
            state = sd.enabled_state(host, unit)
            if not quiet:
                ctx.print(state)
            status = status or (0 if state in ("enabled", "static") else 1)
        elif verb == "cat":
            if unit is None:
                raise CommandFailed(f"No files found for {name}.", 1)
            ctx.print(f"# {unit.path}\n{unit.text.rstrip()}")
        elif verb == "show":
            ctx.print(
                f"Id={name}\nActiveState={rt.state}\nSubState={rt.sub}\nUnitFileState="
                f"{sd.enabled_state(host, unit) if unit else ''}\nExecMainStatus={rt.status}"
            )
        else:
            if unit is None:
                ctx.eprint(f"Unit {name} could not be found.")
                status = 4
                continue
            _status(ctx, unit, rt)
            status = status or (0 if rt.state == "active" else 3)
    return status


def _status(ctx: Ctx, unit: sd.Unit, rt: sd.Runtime) -> None:
    host = ctx.host
    dot = {"active": "\u25cf", "failed": "\u00d7"}.get(rt.state, "\u25cb")
    enabled = sd.enabled_state(host, unit)
    ctx.print(f"{dot} {unit.name} - {unit.description}")
    ctx.print(f"     Loaded: loaded ({unit.path}; {enabled}; vendor preset: enabled)")
    if rt.state == "inactive":
        ctx.print("     Active: inactive (dead)")
    else:
        label = {"failed": "failed (Result: exit-code)"}.get(rt.state, f"{rt.state} ({rt.sub})")
        ctx.print(f"     Active: {label} since {_stamp(rt.since)}; {_ago(rt.since)}")
    exec_start = unit.get("Service", "ExecStart")
    if unit.type == "oneshot" and rt.state != "inactive":
        code = f"status={rt.status}/{'SUCCESS' if rt.status == 0 else 'FAILURE'}"
        ctx.print(f"    Process: {rt.pid} ExecStart={exec_start} (code=exited, {code})")
        ctx.print(f"   Main PID: {rt.pid} (code=exited, {code})")
    elif rt.state == "active":
        ctx.print(f"   Main PID: {rt.pid} ({unit.name.split('.')[0]})")
        argv = running_commands(host).get(rt.pid)
        if argv:  # the process as ps shows it, substituted variables included
            ctx.print(f"     CGroup: /system.slice/{unit.name}\n             \u2514\u2500{rt.pid} {' '.join(argv)}")
    entries = [e for e in host.journal if e.unit == unit.name][-10:]
    if entries:
        ctx.print("")
        for e in entries:
            ctx.print(f"{time.strftime('%b %d %H:%M:%S', time.gmtime(e.when))} {host.hostname} {e.ident}: {e.message}")


@command("journalctl")
async def journalctl(ctx: Ctx) -> int:
    args = list(ctx.args)
    units: list[str] = []
    limit = None
    while args:
        a = args.pop(0)
        if a in ("-u", "--unit") and args:
            units.append(sd.normalize(args.pop(0)))
        elif a.startswith("--unit="):
            units.append(sd.normalize(a.split("=", 1)[1]))
        elif a in ("-n", "--lines") and args:
            limit = int(args.pop(0))
    entries = [e for e in ctx.host.journal if not units or e.unit in units]
    if limit is not None:
        entries = entries[-limit:]
    if not entries:
        ctx.print("-- No entries --")
        return 0
    for e in entries:
        ctx.print(f"{time.strftime('%b %d %H:%M:%S', time.gmtime(e.when))} {ctx.host.hostname} {e.ident}: {e.message}")
    return 0
