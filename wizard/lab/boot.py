"""Booting a simulated host's systemd: enabled units in order, network-online.target reached after wait-online."""

from __future__ import annotations

from typing import TYPE_CHECKING

from wizard.lab import waitonline
from wizard.lab.services import BOOT_TARGETS, Unit, find_unit, start
from wizard.lab.vfs import FsError

if TYPE_CHECKING:
    from wizard.lab.host import SimHost


def boot_order(host: SimHost) -> list[Unit]:
    """Enabled units in start order: by target, then After= among themselves, then name."""
    units: dict[str, Unit] = {}
    rank: dict[str, int] = {}
    for ti, target in enumerate(BOOT_TARGETS):
        try:
            names = host.fs.listdir(f"/etc/systemd/system/{target}.wants")
        except FsError:
            continue
        for n in names:
            u = find_unit(host, n)
            if u is not None and "masked" not in u.sections and n not in units:
                units[n], rank[n] = u, ti
    ordered: list[Unit] = []
    placed: set[str] = set()

    def place(name: str, depth: int = 0) -> None:
        if name in placed or depth > 20:
            return
        for dep in units[name].after:
            if dep in units:
                place(dep, depth + 1)
        placed.add(name)
        ordered.append(units[name])

    for n in sorted(units, key=lambda n: (rank[n], n)):
        place(n)
    return ordered


DEFAULT_DISABLED = "roce-wizard-qos.service"


def disable_at_boot(host: SimHost) -> None:
    """The ``unit_disabled[=UNIT]`` fault: something on the host disables UNIT before the next boot starts it, as a
    configuration-management agent that enforces its own list of enabled units does, or ``systemctl preset-all``
    under a "disable *" preset (systemd.preset(5); RHEL ships 99-default-disable.preset). The runtime state the
    wizard set stays until then: only a reboot shows that nothing re-applies it."""
    for fault in host.faults_of("unit_disabled"):
        unit = fault.arg or DEFAULT_DISABLED
        for target in BOOT_TARGETS:
            link = f"/etc/systemd/system/{target}.wants/{unit}"
            if host.fs.exists(link):
                host.fs.remove(link)
                host.journal_log("init.scope", f'Removed "{link}".', ident="systemctl")


async def boot(host: SimHost) -> None:
    """Start the enabled units; those ordered After=network-online.target wait until wait-online is done.

    The wait and the boot's length in simulated seconds are in wizard/lab/waitonline.py (host.boot_timing). The
    lab's first boot happened before the lab started: it is recorded, never waited for.
    """
    first = getattr(host, "boot_timing", None) is None
    host.units.clear()
    if not first:
        disable_at_boot(host)
    timing = waitonline.BootTiming()
    clock = waitonline.EARLY_USERSPACE_S
    order = boot_order(host)
    late: set[str] = set()
    for unit in order:  # boot_order puts a unit's After= dependencies first
        if any(dep == "network-online.target" or dep in late for dep in unit.after):
            late.add(unit.name)
    for unit in [u for u in order if u.name not in late]:
        timing.started[unit.name] = clock
        clock += waitonline.UNIT_S
        await start(host, unit, "boot")
    await waitonline.reach_online(host, timing, sleep=not first)
    clock += timing.wait_online
    for unit in [u for u in order if u.name in late]:
        timing.started[unit.name] = clock
        clock += waitonline.UNIT_S
        await start(host, unit, "boot")
    timing.userspace = clock
    host.boot_timing = timing
    host.journal_log("multi-user.target", "Reached target Multi-User System.")
    host.journal_log("init.scope", waitonline.startup_finished(timing))
