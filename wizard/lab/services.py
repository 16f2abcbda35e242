"""systemd on a simulated host: unit files, enablement symlinks, runtime state, oneshot units run by the shell."""

from __future__ import annotations

import asyncio
import posixpath
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from wizard.lab.streams import CallbackSink, TextInput
from wizard.lab.unit_env import expand
from wizard.lab.vfs import ROOT, FsError, Symlink

if TYPE_CHECKING:
    from wizard.lab.host import SimHost

UNIT_DIRS = ("/etc/systemd/system", "/run/systemd/system", "/lib/systemd/system")
# Units shipped by packages whose programs the lab runs as written (other packaged units are modelled by hooks or
# stand for daemons the lab does not run): nginx, the inference entry point's load balancer (wizard/lab/nginx_sim.py).
RUN_PACKAGED = {"nginx.service"}
BOOT_TARGETS = ("sysinit.target", "network-online.target", "network.target", "multi-user.target", "default.target")


@dataclass
class Unit:
    name: str
    path: str
    text: str
    sections: dict[str, dict[str, list[str]]] = field(default_factory=dict)

    def get(self, section: str, key: str, default: str = "") -> str:
        vals = self.sections.get(section, {}).get(key)
        return vals[-1] if vals else default

    def all(self, section: str, key: str) -> list[str]:
        return [v for v in self.sections.get(section, {}).get(key, []) if v]

    @property
    def description(self) -> str:
        return self.get("Unit", "Description", self.name)

    @property
    def type(self) -> str:
        return self.get("Service", "Type", "simple")

    @property
    def wanted_by(self) -> list[str]:
        return [t for v in self.all("Install", "WantedBy") + self.all("Install", "RequiredBy") for t in v.split()]

    @property
    def after(self) -> list[str]:
        return [t for v in self.all("Unit", "After") for t in v.split()]

    @property
    def requires(self) -> list[str]:
        """Requires= and BindsTo= ("similar to Requires=, but stronger": a bound unit that stops takes this one with
        it, systemd.unit(5)); both start the named units and stop or restart this one with them."""
        bound = [t for v in self.all("Unit", "BindsTo") for t in v.split() if t.endswith(".service")]
        # A BindsTo= on a .device unit (a udev-started per-port unit) is handled where devices go away (udev.py).
        return [t for v in self.all("Unit", "Requires") for t in v.split()] + bound


@dataclass
class Runtime:
    state: str = "inactive"  # active | inactive | failed
    sub: str = "dead"  # running | exited | dead | failed
    since: float = 0.0
    pid: int = 0
    status: int = 0
    loaded_text: str | None = None
    generation: int = 0  # bumped by every start/stop: a running ExecStart from an older start stops caring


def parse_unit(name: str, path: str, text: str) -> Unit:
    unit = Unit(name, path, text)
    section = ""
    for raw in text.splitlines():
        line = raw.strip()
        if not line or line.startswith(("#", ";")):
            continue
        if line.startswith("[") and line.endswith("]"):
            section = line[1:-1]
            unit.sections.setdefault(section, {})
            continue
        key, sep, value = line.partition("=")
        if sep:
            unit.sections.setdefault(section, {}).setdefault(key.strip(), []).append(value.strip())
    return unit


def normalize(name: str) -> str:
    return name if "." in name else f"{name}.service"


def find_unit(host: SimHost, name: str) -> Unit | None:
    name = normalize(name)
    prefix, at, rest = name.partition("@")
    instance, dot, suffix = rest.rpartition(".")
    if at and instance:
        # An instance without its own file is its template with %i/%I replaced (systemd.unit(5), "Description")
        found = _find_file(host, name) or _find_file(host, f"{prefix}@.{suffix}")
        if found is None or found.name == name or "masked" in found.sections:
            return found
        text = found.text.replace("%%", "\0").replace("%i", instance).replace("%I", instance).replace("\0", "%%")
        return parse_unit(name, found.path, text)
    return _find_file(host, name)


def _find_file(host: SimHost, name: str) -> Unit | None:
    for d in UNIT_DIRS:
        path = f"{d}/{name}"
        node = host.fs.lookup(path, follow=False)
        if node is None:
            continue
        if isinstance(node, Symlink) and node.target == "/dev/null":
            return Unit(name, path, "", {"masked": {}})
        try:
            return parse_unit(name, path, host.fs.read_text(path))
        except FsError:
            continue
    return None


def enabled_state(host: SimHost, unit: Unit) -> str:
    if "masked" in unit.sections:
        return "masked"
    targets = unit.wanted_by
    if not targets:
        return "static"
    for t in targets:
        if host.fs.lookup(f"/etc/systemd/system/{t}.wants/{unit.name}", follow=False) is not None:
            return "enabled"
    return "disabled"


def enable(host: SimHost, unit: Unit) -> list[str]:
    msgs = []
    for t in unit.wanted_by:
        link = f"/etc/systemd/system/{t}.wants/{unit.name}"
        if host.fs.lookup(link, follow=False) is None:
            host.fs.mkdir(posixpath.dirname(link), parents=True)
            host.fs.symlink(unit.path, link)
            msgs.append(f"Created symlink {link} \u2192 {unit.path}.")
    return msgs


def disable(host: SimHost, unit: Unit) -> list[str]:
    msgs = []
    for t in unit.wanted_by:
        link = f"/etc/systemd/system/{t}.wants/{unit.name}"
        if host.fs.lookup(link, follow=False) is not None:
            host.fs.remove(link)
            msgs.append(f"Removed {link}.")
    return msgs


def runtime(host: SimHost, name: str) -> Runtime:
    return host.units.setdefault(normalize(name), Runtime())


Hook = Callable[["SimHost", str], Awaitable[None]]
HOOKS: dict[str, Hook] = {}


def hook(name: str) -> Callable[[Hook], Hook]:
    def deco(fn: Hook) -> Hook:
        HOOKS[name] = fn
        return fn

    return deco


@hook("openibd.service")
async def _openibd(host: SimHost, action: str) -> None:
    if action in ("restart", "reload"):
        await host.driver_reload()


@hook("systemd-networkd.service")
async def _networkd(host: SimHost, action: str) -> None:
    if action in ("restart", "reload", "start"):
        host.reapply_network()


async def _requirements_met(host: SimHost, unit: Unit, depth: int, boot: bool) -> bool:
    """Requires= as systemd.unit(5) defines it: starting a unit starts the units it requires; if one of them fails to
    activate and this unit is also ordered After= it, this unit is not started ("Dependency failed for ...", job
    result 'dependency', the unit stays inactive). Source: systemd.unit(5), [Unit] section, Requires= and After=
    (https://www.freedesktop.org/software/systemd/man/latest/systemd.unit.html#Requires=)."""
    for name in unit.requires:
        required = find_unit(host, name)
        state = host.units[name].state if name in host.units else "inactive"
        ok = required is not None and "masked" not in required.sections and state in ("active", "activating")
        # At boot a unit that already failed in this boot transaction is not run again for each dependent.
        if required is not None and not ok and not (boot and state == "failed") and depth < 8:
            ok = await start(host, required, "start", depth + 1)
        if not ok and name in unit.after:
            rt = runtime(host, unit.name)
            rt.state, rt.sub = "inactive", "dead"
            rt.generation += 1
            host.journal_log(unit.name, f"Dependency failed for {unit.description}.")
            host.journal_log(unit.name, f"{unit.name}: Job {unit.name}/start failed with result 'dependency'.")
            return False
    return True


def dependents(host: SimHost, name: str) -> list[Unit]:
    """Active units whose Requires= names ``name``: systemd stops (or restarts) them with it (systemd.unit(5))."""
    found = []
    for other, rt in list(host.units.items()):
        unit = find_unit(host, other) if rt.state in ("active", "activating") else None
        if unit is not None and name in unit.requires:
            found.append(unit)
    return found


async def start(host: SimHost, unit: Unit, action: str = "start", depth: int = 0, no_block: bool = False) -> bool:
    """Start (or restart) a unit; oneshot ExecStart lines run as root through the shell, output to the journal."""
    if action == "restart":
        # Restarting a required unit restarts the units that require it (systemd.unit(5), Requires=); they come back
        # only if it starts again, so an engine never keeps running on top of a failed QoS unit.
        bounced = dependents(host, unit.name)
        for other in bounced:
            await stop(host, other)
        ok = await start(host, unit, "restart-self", depth, no_block)
        for other in bounced:
            await start(host, other, "start", depth + 1)
        return ok
    if action == "start" and runtime(host, unit.name).state in ("active", "activating"):
        # A start job for an active unit finishes at once: a RemainAfterExit=yes oneshot does not run again
        # (systemctl(1) start/restart; systemd.service(5) RemainAfterExit=). Only restart re-runs it.
        return True
    if not await _requirements_met(host, unit, depth, action == "boot"):
        return False
    action = "restart" if action == "restart-self" else action
    rt = runtime(host, unit.name)
    rt.loaded_text = unit.text
    rt.generation += 1
    if unit.name in HOOKS and action != "boot":
        await HOOKS[unit.name](host, action)
    host.journal_log(unit.name, f"Starting {unit.description}...")
    host.pid_hint += 17
    rt.pid, rt.since = host.pid_hint, time.time()
    if unit.type == "oneshot":
        status = 0
        for line in unit.all("Service", "ExecStartPre") + unit.all("Service", "ExecStart"):
            status = await run_exec(host, unit, line)
            if status != 0 and not line.startswith("-"):
                break
            status = 0
        rt.status = status
        if status != 0:
            rt.state, rt.sub = "failed", "failed"
            host.journal_log(unit.name, f"{unit.name}: Main process exited, code=exited, status={status}/FAILURE")
            host.journal_log(unit.name, f"{unit.name}: Failed with result 'exit-code'.")
            host.journal_log(unit.name, f"Failed to start {unit.description}.")
            return False
        remain = unit.get("Service", "RemainAfterExit", "no").lower() in ("yes", "true", "1", "on")
        rt.state, rt.sub = ("active", "exited") if remain else ("inactive", "dead")
        host.journal_log(unit.name, f"Finished {unit.description}.")
        return True
    rt.state, rt.sub, rt.status = "active", "running", 0
    runs = unit.name not in HOOKS and (not unit.path.startswith("/lib/") or unit.name in RUN_PACKAGED)
    lines = unit.all("Service", "ExecStart") if runs else []
    pre = bool(lines and unit.all("Service", "ExecStartPre"))
    if lines:
        from wizard.lab.service_main import run_simple  # it calls back into this module

        if pre:
            rt.state, rt.sub = "activating", "start-pre"
        started = asyncio.Event()
        task = asyncio.get_running_loop().create_task(run_simple(host, unit, lines[-1], rt.generation, started))
        host.background.add(task)
        task.add_done_callback(host.background.discard)
        if pre and not no_block:
            # The start job of a Type=simple service ends once ExecStartPre= is done and the main process runs
            # (systemd.service(5), Type=simple); `systemctl --no-block` does not wait for it (systemctl(1)).
            await started.wait()
            return runtime(host, unit.name).state == "active"
    if not pre:
        host.journal_log(unit.name, f"Started {unit.description}.")
    return True


async def run_exec(host: SimHost, unit: Unit, line: str) -> int:
    cmd = expand(host, unit, line.lstrip("-@+!"))
    cmd = cmd.replace("%b", "0" * 32).replace("%H", host.hostname).replace("%n", unit.name).replace("%%", "%")
    ident = posixpath.basename(cmd.split()[0]) if cmd.split() else unit.name
    pid = runtime(host, unit.name).pid

    def to_journal(text: str) -> None:
        for piece in text.splitlines():
            host.journal_log(unit.name, piece, ident=f"{ident}[{pid}]")

    return await host.run_as_root(cmd, out=CallbackSink(to_journal), err=CallbackSink(to_journal), stdin=TextInput(""))


async def stop(host: SimHost, unit: Unit) -> None:
    for other in dependents(host, unit.name):  # Requires=: stopping a unit stops the units that require it
        if other.name != unit.name:
            await stop(host, other)
    rt = runtime(host, unit.name)
    if unit.name in HOOKS:
        await HOOKS[unit.name](host, "stop")
    if rt.state != "inactive":
        host.journal_log(unit.name, f"Stopping {unit.description}...")
        host.journal_log(unit.name, f"Stopped {unit.description}.")
    rt.state, rt.sub = "inactive", "dead"
    rt.generation += 1


def unit_loaded_changed(host: SimHost, unit: Unit) -> bool:
    rt = host.units.get(unit.name)
    return rt is not None and rt.loaded_text is not None and rt.loaded_text != unit.text


def daemon_reload(host: SimHost) -> None:
    for name, rt in host.units.items():
        u = find_unit(host, name)
        if u is not None:
            rt.loaded_text = u.text


__all__ = ["ROOT", "Unit", "daemon_reload", "disable", "enable", "enabled_state", "find_unit", "start", "stop"]
