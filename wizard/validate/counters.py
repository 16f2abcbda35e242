"""PFC/ECN counters read before and after the tests, so a lossless fabric is proven, not assumed."""

from __future__ import annotations

import re

from steps.roce.facts import parse_grep_values
from wizard.engine.waves import in_waves
from wizard.executors.base import Executor, ExecutorError
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
) -> dict[tuple[str, str], dict[str, int]]:
    """ethtool -S and the RDMA hw_counters of every rail port (host -> [(netdev, rdma device)]); an unreadable
    port is left out."""

    async def one(host: str, netdev: str, device: str) -> tuple[tuple[str, str], dict[str, int] | None]:
        ex = executors[host]
        try:
            result = await ex.run(["ethtool", "-S", netdev])
            stats = parse("ethtool_S", result.stdout) if result.ok else None
            base = f"/sys/class/infiniband/{device}/ports/1/hw_counters"
            hw = await ex.run(["grep", "-sH", ".", *(f"{base}/{name}" for name in HW_COUNTERS)])
        except (ExecutorError, ParseError):
            return (host, netdev), None
        if stats is None:
            return (host, netdev), None
        values = {k: v for k, v in stats.counters.items() if WATCH.search(k)}
        for path, value in parse_grep_values(hw.stdout).items():
            if value.isdigit():
                values[f"rdma_{path.rsplit('/', 1)[-1]}"] = int(value)
        return (host, netdev), values

    jobs = [one(h, nd, dev) for h, items in ports.items() if h in executors for nd, dev in items]
    # ``limit`` hosts' ports at a time (ssh.max_parallel_hosts): 8 rails x 1,024 hosts at once held 8,192 ethtool -S
    return {key: value for key, value in await in_waves(limit * 8, jobs) if value is not None}


def deltas(
    before: dict[tuple[str, str], dict[str, int]], after: dict[tuple[str, str], dict[str, int]], priority: int
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
