"""Slow links: a host port trained below its rate or with a bad cable (``HOST:degraded=NETDEV[:GBPS]``), and a slow
leaf-spine uplink shared by many hosts (``LEAF:degraded_uplink[=SPINE[:GBPS]]``). Everything here is derived from the
fault alone; the simulated tools ask it (ethtool, sysfs, ibstat, perftest, NCCL).

Sources of the modelled behaviour:
- A port that auto-negotiates or link-trains at a lower rate (a damaged lane, a cable or optic that only passes a
  lower speed) comes up at that rate: ``ethtool`` prints it as ``Speed: 200000Mb/s`` (the PTYS operational protocol,
  mlx5e_get_link_ksettings), /sys/class/net/IF/speed the same number, and the RDMA port rate follows the Ethernet
  one (mlx5_ib translate_eth_proto_oper: 200GAUI-4 -> 4X HDR, 100GBASE-CR4 -> 4X EDR, as ``200 Gb/sec (4X HDR)``).
  No traffic can pass faster than the slower end of a cable, in either direction.
- A bad cable keeps its speed but corrupts frames: the receiving PHY counts symbol errors its FEC could not correct
  (``rx_symbol_err_phy``, net/mlx5e commit 5db0a4f64c04 "Expose physical layer statistical counters to ethtool")
  and drops the frames whose FCS is wrong (``rx_crc_errors_phy``, mlx5 counters.rst: received packets dropped for a
  frame check sequence error). RoCE RC recovers each loss by go-back-N (Mittal et al., SIGCOMM 2018: a fraction of a
  percent of loss costs tens of percent of throughput), so the port carries about BAD_CABLE_SHARE of its line rate.
  The lab counts the errors per frame received through the cable, so they rise only while traffic flows (an idle
  link's idle codewords are not counted); frames a host sends are counted by the leaf's port, not by the host.
- A slow uplink is a leaf-spine cable trained at a lower rate (default a quarter: one lane of four left): every flow
  the ECMP hash (wizard/lab/rails_plan.py) sends over it is held to that rate, others are not (the lab models no
  contention on uplinks, so a flow's ceiling is the slowest link on its path).
"""

from __future__ import annotations

from collections import Counter
from typing import TYPE_CHECKING

from wizard.lab.faults import Fault

if TYPE_CHECKING:
    from wizard.lab.host import SimHost
    from wizard.lab.profile import HostProfile
    from wizard.lab.rails_plan import RailPlan
    from wizard.lab.switches import SwitchFabric

ETHERNET_GBPS = (10, 25, 40, 50, 100, 200, 400)  # the rates a ConnectX port can train at (IEEE 802.3 speeds)
RATE_WIDTH = {10: "1X FDR10", 25: "1X EDR", 40: "4X FDR10", 50: "2X EDR", 100: "4X EDR", 200: "4X HDR", 400: "4X NDR"}
BAD_CABLE_SHARE = 0.6  # share of its line rate a port with a bad cable carries (go-back-N after FCS drops)
CRC_EVERY = 250  # a bad cable drops about one frame in 250 (0.4 %: what costs go-back-N about 40 %)
SYMBOLS_PER_CRC = 3  # uncorrectable FEC codewords per dropped frame (a 4 KiB frame spans several codewords)
UPLINK_SHARE = 0.25  # a degraded uplink's default rate: one lane of four
SWITCH_SIDE_KINDS = ("degraded_uplink",)  # faults whose HOST is a leaf switch


# -- a host port ----------------------------------------------------------------------------------------------------
def port_arg(f: Fault) -> tuple[str, float | None]:
    """(netdev, trained Gb/s or None for a bad cable) of a ``degraded`` fault."""
    netdev, _, rate = (f.arg or "").partition(":")
    return netdev, float(rate) if rate else None


def check_port_faults(faults: list[Fault], profile: HostProfile, *, infiniband: bool = False) -> None:
    """ValueError naming what is wrong with a ``degraded`` fault: an unknown port or a rate the port cannot train at."""
    netdevs = [p.netdev for p in profile.ports]
    for f in faults:
        if f.kind != "degraded":
            continue
        if infiniband:
            raise ValueError(f"fault {f}: an InfiniBand port trains by width and speed (use ib_link_degraded)")
        netdev, _, rate = (f.arg or "").partition(":")
        if netdev not in netdevs:
            raise ValueError(f"fault {f}: {netdev!r} is not a data port ({', '.join(netdevs)})")
        line = profile.card_of(netdevs.index(netdev)).model.speed_mbps // 1000
        slower = [g for g in ETHERNET_GBPS if g < line]
        if rate and (not rate.isdigit() or int(rate) not in slower):
            raise ValueError(
                f"fault {f}: a {line}G port trains at {', '.join(map(str, slower))} Gb/s (or give no rate: a bad cable)"
            )


def _fault(host: SimHost, port_index: int) -> Fault | None:
    netdev = host.profile.ports[port_index].netdev
    return next((f for f in host.faults_of("degraded") if port_arg(f)[0] == netdev), None)


def trained_gbps(host: SimHost, port_index: int) -> float | None:
    """The lower rate the port trained at (``degraded=NETDEV:GBPS``), None at its full rate."""
    f = _fault(host, port_index)
    return port_arg(f)[1] if f is not None else None


def bad_cable(host: SimHost, port_index: int) -> bool:
    """A ``degraded=NETDEV`` port: full speed, errors and losses."""
    f = _fault(host, port_index)
    return f is not None and port_arg(f)[1] is None


def speed_mbps(host: SimHost, port_index: int) -> int:
    """The Ethernet port's speed as ethtool and sysfs show it while the link is up."""
    rate = trained_gbps(host, port_index)
    return int(rate * 1000) if rate is not None else host.profile.card_of(port_index).model.speed_mbps


def rate_text(host: SimHost, port_index: int) -> str:
    """The RDMA port rate as sysfs prints it: ``400 Gb/sec (4X NDR)``, ``200 Gb/sec (4X HDR)`` when trained down."""
    rate = trained_gbps(host, port_index)
    if rate is None:
        model = host.profile.card_of(port_index).model
        return f"{model.speed_mbps // 1000} Gb/sec ({model.rate_width})"
    return f"{int(rate)} Gb/sec ({RATE_WIDTH.get(int(rate), '4X')})"


def cable_share(host: SimHost, port_index: int) -> float:
    """Share of the line rate the port's cable carries (BAD_CABLE_SHARE with a bad cable, else 1)."""
    return BAD_CABLE_SHARE if bad_cable(host, port_index) else 1.0


def count_received(host: SimHost, port_index: int, packets: int) -> int:
    """Frames received through a bad cable: its PHY counts the errors (ethtool -S); returns the frames dropped."""
    if packets <= 0 or not bad_cable(host, port_index):
        return 0
    from wizard.lab.perftest_counters import counters  # it imports this module

    dropped = packets // CRC_EVERY + 1
    c = counters(host).setdefault(host.profile.ports[port_index].netdev, Counter())
    c["rx_crc_errors_phy"] += dropped
    c["rx_symbol_err_phy"] += dropped * SYMBOLS_PER_CRC
    return dropped


# -- a leaf-spine uplink --------------------------------------------------------------------------------------------
def apply_uplink_faults(fab: SwitchFabric, plan: RailPlan) -> None:
    """Train the uplinks ``degraded_uplink`` names at their lower rate; ValueError naming the valid switches when the
    fault names something else."""
    for f in fab.faults:
        if f.kind not in SWITCH_SIDE_KINDS:
            continue
        leaf = fab.switches.get(f.host)
        if leaf is None or leaf.role != "leaf":
            what = (
                "a host, not a leaf switch"
                if f.host in {h for h, _ in fab.attach}
                else "not a leaf switch of this fabric"
            )
            raise ValueError(f"fault {f}: {f.host!r} is {what}; degraded_uplink names a leaf: {plan.describe_leaves()}")
        spine, _, rate = (f.arg or fab.spines[0]).partition(":")
        if spine not in fab.spines:
            raise ValueError(f"fault {f}: {spine!r} is not a spine ({', '.join(fab.spines)})")
        link = fab.links[(leaf.name, spine)]
        try:
            gbps = float(rate) if rate else link.line_gbps * UPLINK_SHARE
        except ValueError:
            gbps = 0.0
        if not 0 < gbps < link.line_gbps:
            raise ValueError(f"fault {f}: the rate must be a number of Gb/s below the uplink's {link.line_gbps:g}")
        link.gbps = gbps
