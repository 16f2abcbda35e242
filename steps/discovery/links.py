"""Link flaps: per RDMA port carrier counters (sysfs) and PHY counters (ethtool -S), read, compared and judged.

Sources: the kernel counts carrier transitions in /sys/class/net/IF/carrier_changes, carrier_up_count and
carrier_down_count (Documentation/ABI/testing/sysfs-class-net, Linux 4.16+); the first down is the driver's own
``netif_carrier_off`` when the port is opened, and mlx5e also toggles the carrier around every channel reconfiguration
(an MTU change: ``mlx5e_switch_priv_channels``), so carrier counts alone cannot tell a bad cable from a reconfiguration.
mlx5e's ``link_down_events_phy`` (PPCNT physical layer counters; NVIDIA "Understanding mlx5 ethtool Counters": "the
number of times where the link operative state changed to down; in case of many link down events, it may indicate a
faulty cable") counts real link losses, and ``rx_crc_errors_phy`` / ``rx_symbol_err_phy`` rise on a bad optic.
"""

from __future__ import annotations

import asyncio
import re
import time
from typing import TYPE_CHECKING, Any

from pydantic import BaseModel, ConfigDict, Field

from wizard.engine.step import CheckItem
from wizard.parsers import ParseError
from wizard.parsers.common import Parsed
from wizard.parsers.ethtool import EthtoolStats, parse_ethtool_S

if TYPE_CHECKING:
    from steps.discovery.facts import NicPort
    from wizard.executors.base import Executor

CARRIER_FILES = ("carrier_changes", "carrier_down_count", "carrier_up_count")
PHY_COUNTERS = ("link_down_events_phy", "rx_crc_errors_phy", "rx_symbol_err_phy")
ERROR_COUNTERS = PHY_COUNTERS[1:]
LINK_RECHECK_S = 3.0
"""The doctor's second read comes at least this long after the first: a flapping port moves its counters."""
FIX = (
    "reseat or replace the cable/optic of this port (try a known-good one), then check the switch port's error "
    "counters and transceiver (e.g. `nv show interface SWP counters errors`, `show interfaces counters errors`)"
)
_CARRIER_LINE = re.compile(r"^/sys/class/net/([^/]+)/(carrier_changes|carrier_down_count|carrier_up_count):(\d+)\s*$")
_UPTIME_LINE = re.compile(r"^/proc/uptime:(\d+(?:\.\d+)?)\s")
SAME_BOOT_S = 30.0
"""Two reads whose boot times (read time minus uptime) differ by more belong to different boots."""


class CarrierRead(Parsed):
    """``grep -sH . /proc/uptime /sys/class/net/IF/carrier_*``: the counters per netdev and the uptime."""

    ports: dict[str, dict[str, int]] = {}
    uptime_s: float | None = None


class LinkCounters(BaseModel):
    """One port's link-stability counters at one moment, and how they moved since the previous read."""

    model_config = ConfigDict(extra="forbid")

    carrier_changes: int | None = None
    carrier_down_count: int | None = None
    carrier_up_count: int | None = None
    link_down_events_phy: int | None = None
    rx_crc_errors_phy: int | None = None
    rx_symbol_err_phy: int | None = None
    read_at: float | None = None
    """Unix time of the read (this machine's clock)."""
    boot_at: float | None = None
    """``read_at`` minus the host's uptime: counters of another boot are never compared."""
    rising: dict[str, int] = Field(default_factory=dict)
    """Counter -> increase since the previous read (previous discovery, or the doctor's first read)."""
    since_s: float | None = None
    """Seconds between the previous read and this one; None when there was nothing to compare with."""

    def value(self, name: str) -> int | None:
        return getattr(self, name)


def parse_carrier_counts(text: str) -> CarrierRead:
    """``grep -sH . /proc/uptime /sys/class/net/IF/carrier_*`` -> counters per netdev and the uptime; lines of
    other files are skipped (missing files print nothing under ``-s``)."""
    ports: dict[str, dict[str, int]] = {}
    uptime = None
    for line in text.replace("\r\n", "\n").splitlines():
        if match := _CARRIER_LINE.match(line.strip()):
            ports.setdefault(match.group(1), {})[match.group(2)] = int(match.group(3))
        elif match := _UPTIME_LINE.match(line.strip() + " "):
            uptime = float(match.group(1))
    return CarrierRead(ports=ports, uptime_s=uptime)


def link_counters(
    carrier: dict[str, int], stats: EthtoolStats | None, read_at: float | None = None, boot_at: float | None = None
) -> LinkCounters:
    """The counters of one port from its sysfs carrier files and its ``ethtool -S`` (either may be missing)."""
    values: dict[str, Any] = {k: carrier.get(k) for k in CARRIER_FILES}
    if stats is not None:
        # mlx5e prints these only when the firmware exposes PPCNT; a `| grep` paste or another driver lacks them
        values.update({k: stats.get(k) for k in PHY_COUNTERS})
    return LinkCounters(**values, read_at=read_at, boot_at=boot_at)


def compare(now: LinkCounters, before: LinkCounters | None) -> LinkCounters:
    """``now`` with ``rising`` filled from ``before``; another boot (boot times apart, or a counter that went
    down: a reboot or driver reload starts them again) is never compared: a reboot itself drops the link."""
    if before is None:
        return now
    if now.boot_at is not None and before.boot_at is not None and abs(now.boot_at - before.boot_at) > SAME_BOOT_S:
        return now
    names = CARRIER_FILES + PHY_COUNTERS
    pairs = {n: (before.value(n), now.value(n)) for n in names}
    known = {n: (b, a) for n, (b, a) in pairs.items() if a is not None and b is not None}
    if any(a < b for b, a in known.values()):
        return now
    since = now.read_at - before.read_at if now.read_at is not None and before.read_at is not None else None
    return now.model_copy(update={"rising": {n: a - b for n, (b, a) in known.items() if a > b}, "since_s": since})


def downs_since_boot(c: LinkCounters) -> tuple[int | None, bool]:
    """(link losses since boot, physical?): ``link_down_events_phy`` when the driver exposes it, else the carrier
    downs after the first (the driver's own at open; later ones include reconfigurations)."""
    if c.link_down_events_phy is not None:
        return c.link_down_events_phy, True
    if c.carrier_down_count is not None:
        return max(0, c.carrier_down_count - 1), False
    return None, False


def where(host: str, port: NicPort) -> str:
    """``gpu-003 enp64s0np0 (leaf-r1 swp3)``: the host port and, when LLDP saw one, its switch port."""
    n = port.lldp
    switch = f" ({n.chassis_name or n.chassis_id or '?'} {n.port_id or '?'})" if n is not None else ""
    return f"{host} {port.netdev}{switch}"


def flap_item(host: str, port: NicPort) -> CheckItem | None:
    """The "link flaps" verdict of one port, or None when its counters could not be read."""
    c = port.link
    if c is None:
        return None
    downs, physical = downs_since_boot(c)
    if downs is None and not any(c.value(k) is not None for k in ERROR_COUNTERS):
        return None
    # A physical counter that rose is a flap; a carrier drop (no physical counter) may be an MTU change between reads.
    phy_moving = [k for k in c.rising if k in PHY_COUNTERS]
    moving = phy_moving + (["carrier_down_count"] if not physical and "carrier_down_count" in c.rising else [])
    errors = ", ".join(f"{k} {c.value(k)}" for k in ERROR_COUNTERS if c.value(k))
    parts = []
    if downs is not None:
        parts.append(f"link went down {downs} time{'s' if downs != 1 else ''} since boot")
    if moving:
        gap = f" in {c.since_s:.0f} s" if c.since_s is not None else ""
        parts.append("rising" + gap + ": " + ", ".join(f"{k} +{c.rising[k]}" for k in moving))
    if errors:
        parts.append(errors)
    evidence = f"{where(host, port)}: " + ", ".join(parts or ["no link losses"])
    if phy_moving or (physical and (downs or 0) > 1):
        status = "fail"
    elif moving or downs:
        # One loss since boot is a switch reboot or a reseat as often as a bad cable; a carrier count may be a
        # reconfiguration (ip link down/up, MTU): worth a look, not a verdict.
        status = "warn"
        evidence += "" if physical else " (carrier drops include ip link down/up and MTU changes)"
    else:
        status = "pass"
    return CheckItem(
        id=f"link_flaps:{port.netdev}",
        title=f"{port.netdev} link stable",
        status=status,
        evidence=evidence,
        fix=None if status == "pass" else FIX,
    )


def flap_checks(host: str, ports: list[NicPort]) -> list[CheckItem]:
    """A "link stable" item per RDMA port whose counters were read."""
    return [item for p in ports if (item := flap_item(host, p)) is not None]


def carrier_command(netdevs: list[str]) -> list[str]:
    return ["grep", "-sH", ".", "/proc/uptime", *(f"/sys/class/net/{d}/{f}" for d in netdevs for f in CARRIER_FILES)]


def ethtool_stats_argv(netdev: str) -> list[str]:
    return ["ethtool", "-S", netdev]


async def read_links(ex: Executor, netdevs: list[str]) -> dict[str, LinkCounters]:
    """Read every port's counters: one grep over sysfs and one ``ethtool -S`` per port (read-only, no sudo)."""
    if not netdevs:
        return {}
    result = await ex.run(carrier_command(netdevs))
    # grep exits 2 when a file is missing (kernels before 4.16 have no carrier_down_count) yet prints the rest
    read = parse_carrier_counts(result.stdout) if result.exit_status in (0, 2) else CarrierRead()
    boot_at = time.time() - read.uptime_s if read.uptime_s is not None else None
    found: dict[str, LinkCounters] = {}
    for netdev in netdevs:
        stats_run = await ex.run(ethtool_stats_argv(netdev))
        stats = None
        if stats_run.ok:
            try:
                stats = parse_ethtool_S(stats_run.stdout)
            except ParseError:
                stats = None
        if netdev in read.ports or stats is not None:
            found[netdev] = link_counters(read.ports.get(netdev, {}), stats, time.time(), boot_at)
    return found


async def probe_links(ex: Executor, ports: list[NicPort], previous: dict[str, Any] | None) -> None:
    """Discovery: read each RDMA port's counters once and compare them with the previous discovery's, if saved."""
    before = _previous_links(previous)
    found = await read_links(ex, [p.netdev for p in ports if p.netdev and p.rdma_device])
    for port in ports:
        now = found.get(port.netdev or "")
        port.link = compare(now, before.get(port.netdev or "")) if now is not None else None


def _previous_links(previous: dict[str, Any] | None) -> dict[str, LinkCounters]:
    out: dict[str, LinkCounters] = {}
    for raw in (previous or {}).get("ports", []) or []:
        if isinstance(raw, dict) and raw.get("netdev") and isinstance(raw.get("link"), dict):
            try:
                out[raw["netdev"]] = LinkCounters.model_validate({**raw["link"], "rising": {}, "since_s": None})
            except ValueError:
                continue  # facts saved by another version: nothing to compare with
    return out


async def recheck(ex: Executor, host: str, ports: list[NicPort], min_gap_s: float | None = None) -> list[CheckItem]:
    """The doctor's second read: at least ``min_gap_s`` (LINK_RECHECK_S) after the first (in ``port.link``),
    compared with it."""
    min_gap_s = LINK_RECHECK_S if min_gap_s is None else min_gap_s
    ports = [p for p in ports if p.netdev]
    firsts = [p.link.read_at for p in ports if p.link is not None and p.link.read_at is not None]
    if firsts:
        wait = min_gap_s - (time.time() - min(firsts))
        if wait > 0:
            await asyncio.sleep(wait)
    found = await read_links(ex, [p.netdev for p in ports if p.netdev])
    for port in ports:
        now = found.get(port.netdev or "")
        if now is not None:
            port.link = compare(now, port.link)
    return flap_checks(host, ports)
