"""udev on a simulated host: net device add/remove events run the rules files, SYSTEMD_WANTS starts units.

What is modelled, and from where:
- rules files: /etc/udev/rules.d, /run/udev/rules.d, /usr/lib/udev/rules.d (= /lib/udev/rules.d), sorted by file
  name together; a file in /etc replaces one of the same name elsewhere (udev(7), "RULES FILES");
- match keys ACTION, SUBSYSTEM, KERNEL, NAME, DRIVERS (the device or any parent: a ConnectX netdev's PCI parent is
  bound to mlx5_core), SUBSYSTEMS; patterns with ``*``, ``?``, ``[]`` and ``|`` alternatives (udev(7)); a rule with a
  key this simulation does not know never matches, so nothing happens by accident;
- ``ENV{SYSTEMD_WANTS}`` becomes a Wants= of the device's .device unit, and systemd starts those units each time the
  device becomes active, i.e. at every "add" (systemd.device(5)); net devices are tagged "systemd" by
  99-systemd.rules, so TAG+="systemd" is implied for them. ``$name`` is the interface name after renaming, ``%k`` the
  kernel name (udev(7) substitutions; the lab creates netdevs under their final names, so both are the same here);
- ``BindsTo=sys-subsystem-net-devices-IF.device``: the unit is stopped when the device goes away (systemd.unit(5));
- mlx5_ib is loaded for the auxiliary ``mlx5_core.rdma`` device by its modalias when mlx5_core probes
  (80-drivers.rules: ``ENV{MODALIAS}=="?*", RUN{builtin}+="kmod load $env{MODALIAS}"``; mlx5_ib's
  MODULE_DEVICE_TABLE(auxiliary, ...) in drivers/infiniband/hw/mlx5/main.c, kernels >= 5.11).
Events are processed asynchronously like systemd-udevd; ``udevadm settle`` (and the openibd script) wait for them.
"""

from __future__ import annotations

import asyncio
import fnmatch
import re
from typing import TYPE_CHECKING

from wizard.lab import kmods
from wizard.lab import services as sd
from wizard.lab.commands import command
from wizard.lab.streams import CommandFailed, Ctx
from wizard.lab.vfs import FsError

if TYPE_CHECKING:
    from wizard.lab.host import SimHost

RULE_DIRS = ("/usr/lib/udev/rules.d", "/run/udev/rules.d", "/etc/udev/rules.d")  # later dirs replace earlier
TOKEN = re.compile(r'\s*([A-Z_]+)(?:\{([^}]*)\})?\s*(==|!=|\+=|-=|:=|=)\s*"((?:[^"\\]|\\.)*)"\s*,?')
MATCH_KEYS = {"ACTION", "SUBSYSTEM", "KERNEL", "NAME", "DRIVERS", "SUBSYSTEMS"}


def rules_files(host: SimHost) -> list[str]:
    """The rules files udev reads, in processing order."""
    chosen: dict[str, str] = {}
    for d in RULE_DIRS:
        try:
            names = host.fs.listdir(d)
        except (FsError, OSError):
            continue
        for n in names:
            if n.endswith(".rules"):
                chosen[n] = f"{d}/{n}"
    return [chosen[n] for n in sorted(chosen)]


def _pattern(value: str, actual: str | None) -> bool:
    return actual is not None and any(fnmatch.fnmatchcase(actual, alt) for alt in value.split("|"))


def _values(host: SimHost, name: str, action: str) -> dict[str, list[str]]:
    dev = host.netdevs.get(name)
    drivers = [dev.driver] if dev is not None and dev.driver and dev.pci else []
    return {
        "ACTION": [action],
        "SUBSYSTEM": ["net"],
        "KERNEL": [name],
        "NAME": [name],
        "DRIVERS": drivers,
        "SUBSYSTEMS": ["net"] + (["pci"] if dev is not None and dev.pci else []),
    }


def _substitute(text: str, name: str) -> str:
    for token in ("$name", "%k", "$kernel", "$env{INTERFACE}"):
        text = text.replace(token, name)
    return text.replace("%%", "%").replace("$$", "$")


def wanted_units(host: SimHost, name: str, action: str = "add") -> list[str]:
    """The units ENV{SYSTEMD_WANTS} collects for one net device event, in rule order."""
    wants: list[str] = []
    values = _values(host, name, action)
    for path in rules_files(host):
        try:
            text = host.fs.read_text(path)
        except FsError:
            continue
        for raw in text.replace("\\\n", " ").splitlines():
            line = raw.strip()
            if not line or line.startswith("#"):
                continue
            tokens = TOKEN.findall(line)
            matches = [(k, op, v) for k, _, op, v in tokens if op in ("==", "!=")]
            if any(k not in MATCH_KEYS for k, _, _ in matches):
                continue
            ok = all(any(_pattern(v, actual) for actual in values[k]) == (op == "==") for k, op, v in matches)
            if not ok:
                continue
            for key, attr, op, value in tokens:
                if key == "ENV" and attr == "SYSTEMD_WANTS" and op in ("=", ":=", "+="):
                    units = _substitute(value, name).split()
                    wants = units if op != "+=" else wants + units
    return list(dict.fromkeys(wants))


async def _added(host: SimHost, names: list[str], autoload: bool) -> None:
    if autoload and "mlx5_core" in host.modules and kmods.available(host, "mlx5_ib"):
        try:
            kmods.load(host, "mlx5_ib")
        except kmods.ModError as exc:
            host.journal_log("systemd-udevd.service", str(exc), ident="systemd-udevd[402]")
    for name in names:
        for unit_name in wanted_units(host, name, "add"):
            unit = sd.find_unit(host, unit_name)
            if unit is None:
                host.journal_log(unit_name, f"Failed to start {unit_name}: Unit {unit_name} not found.")
                continue
            await sd.start(host, unit)  # a start job: a no-op for a unit that is still active


async def _removed(host: SimHost, names: list[str]) -> None:
    bound = {f"sys-subsystem-net-devices-{n}.device" for n in names}
    for unit_name, rt in list(host.units.items()):
        unit = sd.find_unit(host, unit_name)
        if unit is not None and rt.state != "inactive" and bound & set(unit.all("Unit", "BindsTo")):
            await sd.stop(host, unit)


def _pending(host: SimHost) -> set[asyncio.Task]:
    return host.__dict__.setdefault("udev_pending", set())


def event(host: SimHost, action: str, names: list[str], *, autoload: bool = False) -> None:
    """Queue a kernel uevent for net devices ``names`` (``add`` or ``remove``); udevd handles it shortly after."""
    if not names:
        return
    try:
        loop = asyncio.get_running_loop()
    except RuntimeError:
        return  # a host mutated outside any event loop (a synchronous test): no udevd to run the rules
    coro = _added(host, names, autoload) if action == "add" else _removed(host, names)
    task = loop.create_task(coro)
    for group in (_pending(host), host.background):
        group.add(task)
        task.add_done_callback(group.discard)


async def settle(host: SimHost) -> None:
    """``udevadm settle``: wait until every queued event has been handled (events may queue more events)."""
    while pending := [t for t in _pending(host) if not t.done()]:
        await asyncio.gather(*pending, return_exceptions=True)


async def coldplug(host: SimHost) -> None:
    """systemd-udev-trigger.service at boot: an "add" event for every existing net device."""
    event(host, "add", [n for n, d in host.netdevs.items() if d.kind != "loopback"])
    await settle(host)


@command("udevadm")
async def udevadm(ctx: Ctx) -> int:
    """``udevadm control --reload``, ``udevadm settle``, ``udevadm trigger [--action=add] [--subsystem-match=net]``."""
    verb = ctx.args[0] if ctx.args else ""
    rest = ctx.args[1:]
    if verb == "settle":
        await settle(ctx.host)
        return 0
    if not ctx.root and verb in ("control", "trigger"):
        raise CommandFailed(f"Failed to {'send reload request' if verb == 'control' else 'trigger'}: "
                            "Permission denied", 1)  # fmt: skip
    if verb == "control" and rest and rest[0] in ("--reload", "--reload-rules", "-R"):
        return 0  # rules are read at each event here; real udevd re-reads them on reload
    if verb == "trigger":
        action = next((a.split("=", 1)[1] for a in rest if a.startswith(("--action=", "-c="))), "change")
        subsystems = [a.split("=", 1)[1] for a in rest if a.startswith("--subsystem-match=")]
        if action == "add" and (not subsystems or "net" in subsystems):
            event(ctx.host, "add", [n for n, d in ctx.host.netdevs.items() if d.kind != "loopback"])
        return 0
    raise CommandFailed(f"udevadm: unknown command '{verb}'" if verb else "udevadm: missing command", 1)
