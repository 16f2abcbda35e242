"""One host's read per scrape: every rail port's ``ethtool -S`` and sysfs files in ONE batch (one exec), turned
into samples by pure functions."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Sequence
from dataclasses import dataclass, field

from steps.roce.facts import parse_grep_values  # the same sysfs reads the roce stage makes
from wizard.executors.base import (
    AuthenticationFailed,
    CommandResult,
    ExecutorError,
    HostKeyRejected,
    HostUnreachable,
)
from wizard.metrics.names import ETHTOOL, HW_COUNTERS
from wizard.parsers import ParseError, parse

Sample = tuple[str, dict[str, str], float]  # (metric name, labels, value)
NET_FILES = ("carrier", "operstate", "speed", "mtu", "carrier_changes")


@dataclass(frozen=True, slots=True)
class Port:
    """One rail port of a host: rail i of every host is its i-th RDMA Ethernet port in PCI order."""

    netdev: str
    rdma_device: str
    rdma_port: int = 1
    rail: int = 0

    def labels(self, host: str) -> dict[str, str]:
        return {"host": host, "netdev": self.netdev, "rdma_device": self.rdma_device, "rail": str(self.rail)}

    def sysfs_paths(self, priority: int) -> list[str]:
        net = f"/sys/class/net/{self.netdev}"
        ib = f"/sys/class/infiniband/{self.rdma_device}/ports/{self.rdma_port}"
        return [
            *(f"{net}/{name}" for name in NET_FILES),
            f"{net}/ecn/roce_np/enable/{priority}",
            f"{net}/ecn/roce_rp/enable/{priority}",
            f"{ib}/state",
            *(f"{ib}/hw_counters/{name}" for name in HW_COUNTERS),
        ]


def port_commands(port: Port, priority: int) -> list[list[str]]:
    """The two read-only commands a port costs in the host's batch (grep -s: a missing file is simply absent)."""
    return [["ethtool", "-S", port.netdev], ["grep", "-sH", ".", *port.sysfs_paths(priority)]]


@dataclass(slots=True)
class PortReading:
    """What one scrape read on one port: ``ethtool`` None when ``ethtool -S`` failed or was not mlx5-like."""

    port: Port
    ethtool: dict[str, int] | None
    sysfs: dict[str, str]


@dataclass(slots=True)
class HostReading:
    """One host's part of a scrape; ``reason`` (timeout, unreachable, failed, no_ports) when it is stale."""

    host: str
    ports: list[PortReading] = field(default_factory=list)
    reason: str | None = None
    detail: str = ""
    duration_s: float = 0.0
    finished_at: float | None = None  # unix time of a complete read

    @property
    def up(self) -> bool:
        return self.reason is None


def read_port(port: Port, ethtool: CommandResult, grep: CommandResult) -> PortReading:
    counters: dict[str, int] | None = None
    if ethtool.ok:
        try:
            counters = parse("ethtool_S", ethtool.stdout).counters  # type: ignore[attr-defined]
        except ParseError:
            counters = None
    return PortReading(port, counters, parse_grep_values(grep.stdout))


def _int(text: str | None) -> int | None:
    if text is None:
        return None
    head = text.split(":", 1)[0].strip()  # RDMA state reads "4: ACTIVE"
    try:
        return int(head, 0)
    except ValueError:
        return None


def port_samples(host: str, reading: PortReading, priority: int) -> list[Sample]:
    """The port's samples: counters in their metric's unit, link state, PFC/ECN enablement."""
    port, base = reading.port, reading.port.labels(host)
    out: list[Sample] = []
    stats = reading.ethtool or {}
    for key, value in stats.items():
        for pattern, name, groups, scale in ETHTOOL:
            m = pattern.match(key)
            if m:
                out.append((name, {**base, **dict(zip(groups, m.groups(), strict=True))}, value * scale))
                break
    if any(k.endswith("_pause") for k in stats):
        # mlx5e (en_stats.c, pport_per_prio_pfc) lists rx/tx_prio<p>_pause only for priorities with PFC on
        on = {int(k[7]) for k in stats if k.startswith("rx_prio") and k.endswith("_pause")}
        out += [("roce_port_pfc_enabled", {**base, "priority": str(p)}, float(p in on)) for p in range(8)]
    files = reading.sysfs
    ib = f"/sys/class/infiniband/{port.rdma_device}/ports/{port.rdma_port}"
    for name, metric in HW_COUNTERS.items():
        value = _int(files.get(f"{ib}/hw_counters/{name}"))
        if value is not None:
            out.append((metric, base, float(value)))
    net = f"/sys/class/net/{port.netdev}"
    carrier, speed = _int(files.get(f"{net}/carrier")), _int(files.get(f"{net}/speed"))
    # carrier is unreadable (EINVAL) on an interface that is administratively down: no link either way
    out.append(("roce_port_link_up", base, float(carrier == 1)))
    if speed is not None and speed > 0:
        out.append(("roce_port_speed_bytes", base, speed * 125_000.0))  # Mb/s -> bytes/s, as node_exporter
    for metric, path in (("roce_port_mtu_bytes", f"{net}/mtu"), ("roce_port_carrier_changes_total",
                         f"{net}/carrier_changes"), ("roce_port_rdma_state_id", f"{ib}/state")):  # fmt: skip
        value = _int(files.get(path))
        if value is not None:
            out.append((metric, base, float(value)))
    for role in ("np", "rp"):
        value = _int(files.get(f"{net}/ecn/roce_{role}/enable/{priority}"))
        if value is not None:
            out.append(("roce_port_ecn_enabled", {**base, "role": role, "priority": str(priority)}, float(value)))
    return out


def _reason(exc: BaseException) -> str:
    if isinstance(exc, TimeoutError):
        return "timeout"
    if isinstance(exc, HostUnreachable | AuthenticationFailed | HostKeyRejected):
        return "unreachable"
    return "failed"


async def read_host(host: str, executor: object, ports: Sequence[Port], priority: int, timeout_s: float) -> HostReading:
    """Every port of the host in one ``run_batch``, bounded by ``timeout_s``; never raises."""
    reading = HostReading(host)
    if not ports:
        reading.reason, reading.detail = "no_ports", "no RDMA Ethernet port known on this host"
        return reading
    commands = [c for p in ports for c in port_commands(p, priority)]
    start = time.monotonic()
    try:
        run_batch = executor.run_batch  # type: ignore[attr-defined]
        results = await asyncio.wait_for(run_batch(commands, timeout_s=timeout_s), timeout_s)
    except (TimeoutError, ExecutorError, OSError) as exc:
        reading.reason, reading.detail = _reason(exc), str(exc) or type(exc).__name__
    else:
        reading.ports = [read_port(p, results[2 * i], results[2 * i + 1]) for i, p in enumerate(ports)]
        reading.finished_at = time.time()
    reading.duration_s = time.monotonic() - start
    return reading
