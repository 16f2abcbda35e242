"""The ``flap`` fault: a port whose link goes down and up again and again (a bad optic or cable).

What a real host shows (sources): mlx5e counts PPCNT link-down transitions as ``link_down_events_phy`` in
``ethtool -S`` (commit "net/mlx5e: Add link down events counter", Linux 4.7; NVIDIA "Understanding mlx5 ethtool
Counters"); the kernel counts carrier transitions in /sys/class/net/IF/carrier_changes, carrier_up_count and
carrier_down_count (Documentation/ABI/testing/sysfs-class-net); a failing link also shows CRC and symbol errors
(``rx_crc_errors_phy``, ``rx_symbol_err_phy``) and "Link down"/"Link up" lines in the kernel log.
The simulated link flaps every FLAP_PERIOD_S (lab time); a read always finds it up again, so the evidence is the
counters rising between two reads, as with a real flapping port caught between flaps.
The carrier counters also move without any fault, as on a real mlx5 port: ``ip link set down`` drops the carrier
(mlx5e_close -> netif_carrier_off) and ``up`` raises it when the link is there, and an MTU change on a running
port reopens its channels with the carrier off then on (mlx5e_change_mtu -> mlx5e_switch_priv_channels), while
``link_down_events_phy`` counts only the physical link losses.
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


def _admin(host: SimHost, netdev: str) -> list[int]:
    """[carrier downs, carrier ups] caused by configuration (not by the link) since boot."""
    return host.__dict__.setdefault("_carrier_admin", {}).setdefault(netdev, [0, 0])


def carrier_toggled(host: SimHost, netdev: str, *, down: bool, up: bool) -> None:
    """Count a carrier drop and/or rise caused by ``ip link set`` or an MTU change (see the module docstring)."""
    counts = _admin(host, netdev)
    counts[0] += int(down)
    counts[1] += int(up)


def carrier_counts(host: SimHost, port_index: int) -> dict[str, int]:
    """sysfs carrier_changes / carrier_up_count / carrier_down_count (boot: down at probe, then up); the kernel
    prints carrier_changes as the sum of the other two (net-sysfs.c)."""
    n = flaps(host, port_index)
    downs, ups = _admin(host, host.profile.ports[port_index].netdev)
    down, up = 1 + n + downs, 1 + n + ups
    return {"carrier_changes": down + up, "carrier_up_count": up, "carrier_down_count": down}


def phy_errors(host: SimHost, port_index: int) -> dict[str, int]:
    """ethtool -S counters a flapping link drives up."""
    n = flaps(host, port_index)
    return {"link_down_events_phy": n, "rx_crc_errors_phy": 37 * n, "rx_symbol_err_phy": 112 * n}
