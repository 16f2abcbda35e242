"""The ``flap`` fault: a port whose link goes down and up again and again (a bad optic or cable).

What a real host shows (sources): mlx5e counts PPCNT link-down transitions as ``link_down_events_phy`` in
``ethtool -S`` (commit "net/mlx5e: Add link down events counter", Linux 4.7; NVIDIA "Understanding mlx5 ethtool
Counters"); the kernel counts carrier transitions in /sys/class/net/IF/carrier_changes, carrier_up_count and
carrier_down_count (Documentation/ABI/testing/sysfs-class-net); a failing link also shows CRC and symbol errors
(``rx_crc_errors_phy``, ``rx_symbol_err_phy``) and "Link down"/"Link up" lines in the kernel log.
The simulated link flaps every FLAP_PERIOD_S (lab time); a read always finds it up again, so the evidence is the
counters rising between two reads, as with a real flapping port caught between flaps.
"""

from __future__ import annotations

import time
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from wizard.lab.host import SimHost

FLAP_PERIOD_S = 10.0


def flapping(host: SimHost, port_index: int) -> bool:
    """Whether the ``flap`` fault hits this port (its argument names the netdev; default: the first data port)."""
    netdev = host.profile.ports[port_index].netdev
    return any(f.kind == "flap" and (f.arg or host.profile.ports[0].netdev) == netdev for f in host.faults)


def flaps(host: SimHost, port_index: int) -> int:
    """Link-down events since boot: one right after boot, then one per FLAP_PERIOD_S of lab time."""
    if not flapping(host, port_index):
        return 0
    elapsed = max(0.0, time.time() - host.boot_time)
    count = 1 + int(elapsed / (FLAP_PERIOD_S * max(host.time_scale, 1e-6)))
    seen = host.__dict__.setdefault("_flaps_logged", {})
    netdev = host.profile.ports[port_index].netdev
    pci = host.profile.ports[port_index].pci
    for _ in range(seen.get(netdev, 0), count):
        host.kernel_log(f"mlx5_core {pci} {netdev}: Link down")
        host.kernel_log(f"mlx5_core {pci} {netdev}: Link up")
    seen[netdev] = count
    return count


def carrier_counts(host: SimHost, port_index: int) -> dict[str, int]:
    """sysfs carrier_changes / carrier_up_count / carrier_down_count (boot: down at probe, then up)."""
    n = flaps(host, port_index)
    return {"carrier_changes": 2 + 2 * n, "carrier_up_count": 1 + n, "carrier_down_count": 1 + n}


def phy_errors(host: SimHost, port_index: int) -> dict[str, int]:
    """ethtool -S counters a flapping link drives up."""
    n = flaps(host, port_index)
    return {"link_down_events_phy": n, "rx_crc_errors_phy": 37 * n, "rx_symbol_err_phy": 112 * n}
