"""PFC/ECN counters read before and after the tests, so a lossless fabric is proven, not assumed."""

from __future__ import annotations

import re
from array import array
from collections.abc import Iterator, Mapping
from typing import ClassVar

from steps.roce.facts import parse_grep_values
from wizard.engine.waves import in_waves
from wizard.executors.base import CommandResult, Executor, ExecutorError
from wizard.parsers import ParseError, parse
from wizard.validate.model import CounterDelta

# Counters that tell lossless from lossy: pause frames per priority, discards, out-of-buffer drops; and those of a
# bad cable or transceiver (symbol and CRC errors at the PHY, which the suspect inference names a port by). Names as
# the mlx5 driver gives them (drivers/net/ethernet/mellanox/mlx5/core/en_stats.c: rx_symbol_err_phy and
# rx_crc_errors_phy in the IEEE 802.3 group, rx_pcs_symbol_err_phy in the physical-layer group). Not
# rx_corrected_bits_phy: FEC corrects bits on every healthy PAM4 link, so its rise is no fault.
WATCH = re.compile(
    r"^(rx|tx)_prio\d_(pause(_duration)?|discards|bytes)$|^rx_discards_phy$|^rx_out_of_buffer$|_global_pause$"
    r"|^rx_(pcs_)?symbol_err_phy$|^rx_crc_errors_phy$"
)
CABLE = ("rx_symbol_err_phy", "rx_pcs_symbol_err_phy", "rx_crc_errors_phy")


# RDMA hardware counters of the port (sysfs hw_counters): retransmissions and ECN/DCQCN activity.
HW_COUNTERS = ("out_of_sequence", "packet_seq_err", "local_ack_timeout_err", "np_ecn_marked_roce_packets",
               "np_cnp_sent", "rp_cnp_handled")  # fmt: skip
RETRANSMITS = ("out_of_sequence", "packet_seq_err", "local_ack_timeout_err")


async def read(
    executors: dict[str, Executor], ports: dict[str, list[tuple[str, str]]], limit: int = 64
) -> dict[tuple[str, str], Mapping[str, int]]:
    """ethtool -S and the RDMA hw_counters of every rail port (host -> [(netdev, rdma device)]), ``limit`` hosts at
    a time (ssh.max_parallel_hosts); an unreadable port is left out, and a host that cannot be read loses only its
    own ports.

    Each host's ports are read in one exec (``run_batch``, wizard/executors/batch.py): ethtool -S per port and one
    grep over every port's hw_counters. One exec per port and read were 16,384 SSH commands for 1,024 hosts of
    eight rails, twice a run, and their round trips, through a bastion, were the read's time. A test double without
    batching gets the commands one by one."""

    async def one_host(host: str, items: list[tuple[str, str]]) -> list[tuple[tuple[str, str], PortCounters | None]]:
        commands = [["ethtool", "-S", netdev] for netdev, _ in items] + [_hw_counters_argv([d for _, d in items])]
        try:
            *stats, hw = await _run_all(executors[host], commands)
        except ExecutorError:
            return [((host, netdev), None) for netdev, _ in items]
        rdma = parse_grep_values(hw.stdout)
        return [
            ((host, netdev), _values(one, rdma, device)) for (netdev, device), one in zip(items, stats, strict=True)
        ]

    jobs = [one_host(h, items) for h, items in ports.items() if h in executors and items]
    return {key: value for found in await in_waves(limit, jobs) for key, value in found if value is not None}


def _hw_path(device: str) -> str:
    return f"/sys/class/infiniband/{device}/ports/1/hw_counters/"


def _hw_counters_argv(devices: list[str]) -> list[str]:
    return ["grep", "-sH", ".", *(_hw_path(device) + name for device in dict.fromkeys(devices) for name in HW_COUNTERS)]


async def _run_all(executor: Executor, commands: list[list[str]]) -> list[CommandResult]:
    run_batch = getattr(executor, "run_batch", None)
    if run_batch is not None:
        return await run_batch(commands)  # type: ignore[no-any-return]
    return [await executor.run(c) for c in commands]


class PortCounters(Mapping[str, int]):
    """One port's counters, read-only: the names, shared by every port that reports the same set, and the values
    in an array. A fleet run keeps the counters read before the tests until it has read them again after: as a dict
    of Python ints each port was 2 KB, 16 MB for 8,192 ports."""

    __slots__ = ("_index", "_values")
    _shared: ClassVar[dict[tuple[str, ...], dict[str, int]]] = {}

    def __init__(self, values: dict[str, int]) -> None:
        names = tuple(values)
        self._index = self._shared.setdefault(names, {name: i for i, name in enumerate(names)})
        self._values = array("q", values.values())

    def __getitem__(self, name: str) -> int:
        return self._values[self._index[name]]

    def __iter__(self) -> Iterator[str]:
        return iter(self._index)

    def __len__(self) -> int:
        return len(self._index)

    def __repr__(self) -> str:
        return f"PortCounters({dict(self)!r})"


def _values(stats: CommandResult, rdma: dict[str, str], device: str) -> PortCounters | None:
    """The watched ethtool counters and the RDMA hw_counters of one port (``rdma``: the host's grep, path ->
    value); None when ethtool -S gave none."""
    try:
        parsed = parse("ethtool_S", stats.stdout) if stats.ok else None
    except ParseError:
        return None
    if parsed is None:
        return None
    values = {k: v for k, v in parsed.counters.items() if WATCH.search(k)}
    base = _hw_path(device)
    for name in HW_COUNTERS:
        value = rdma.get(base + name, "")
        if value.isdigit():
            values[f"rdma_{name}"] = int(value)
    return PortCounters(values)


def deltas(
    before: Mapping[tuple[str, str], Mapping[str, int]],
    after: Mapping[tuple[str, str], Mapping[str, int]],
    priority: int,
) -> list[CounterDelta]:
    """What moved on each port; discards fail, traffic on the lossless priority without pause frames warns."""
    out = []
    for key, now in after.items():
        was = before.get(key, {})
        moved = {k: v - was.get(k, 0) for k, v in now.items() if v - was.get(k, 0)}
        d = CounterDelta(host=key[0], netdev=key[1], deltas=moved)
        drops = {k: v for k, v in moved.items() if "discard" in k or "out_of_buffer" in k}
        drops |= {k: v for k, v in moved.items() if k.removeprefix("rdma_") in RETRANSMITS}
        lossless_bytes = moved.get(f"rx_prio{priority}_bytes", 0) + moved.get(f"tx_prio{priority}_bytes", 0)
        other_bytes = sum(v for k, v in moved.items() if k.endswith("_bytes") and f"prio{priority}_" not in k)
        cable = {k: v for k, v in moved.items() if k in CABLE}
        if drops:
            d.status = "fail"
            d.note = "packets dropped or resent: " + ", ".join(f"{k} +{v}" for k, v in drops.items())
        elif cable:
            d.status = "fail"
            errors = ", ".join(f"{k} +{v}" for k, v in cable.items())
            d.note = f"bit errors on the link (cable or transceiver): {errors}"
        elif other_bytes > lossless_bytes:
            d.status = "fail"
            d.note = f"RDMA traffic ran on another priority than {priority} (trust or DSCP map wrong)"
        elif lossless_bytes and not any(k.endswith(f"prio{priority}_pause") for k in moved):
            d.status = "warn"
            d.note = f"traffic on priority {priority} but no pause frames: PFC not proven under this load"
        else:
            d.note = f"priority {priority}: {lossless_bytes} bytes, no drops" if lossless_bytes else "no traffic"
        ecn = {k: v for k, v in moved.items() if "ecn" in k or "cnp" in k}
        if ecn:  # congestion was signalled and DCQCN slowed the senders: fine, but worth seeing
            d.note += "; ECN/CNP: " + ", ".join(f"{k.removeprefix('rdma_')} +{v}" for k, v in ecn.items())
        out.append(d)
    return sorted(out, key=lambda d: (d.host, d.netdev))
