"""Network devices of a simulated host: physical ports, bonds, loopback, their addresses and QoS state."""

from __future__ import annotations

import hashlib
import ipaddress
from dataclasses import dataclass, field

IPIface = ipaddress.IPv4Interface | ipaddress.IPv6Interface

BOND_MODES = {
    "balance-rr": 0,
    "active-backup": 1,
    "balance-xor": 2,
    "broadcast": 3,
    "802.3ad": 4,
    "balance-tlb": 5,
    "balance-alb": 6,
}
BOND_MODE_TEXT = {
    "balance-rr": "load balancing (round-robin)",
    "active-backup": "fault-tolerance (active-backup)",
    "balance-xor": "load balancing (xor)",
    "broadcast": "fault-tolerance (broadcast)",
    "802.3ad": "IEEE 802.3ad Dynamic link aggregation",
    "balance-tlb": "transmit load balancing",
    "balance-alb": "adaptive load balancing",
}
HASH_POLICIES = {"layer2": 0, "layer3+4": 1, "layer2+3": 2, "encap2+3": 3, "encap3+4": 4, "vlan+srcmac": 5}
# Modes in which mlx5 activates RoCE LAG when the bond holds exactly the two ports of one card.
LAG_MODES = {"active-backup", "balance-xor", "802.3ad"}


@dataclass
class Addr:
    iface: IPIface
    origin: str = "manual"  # "manual" (ip addr add) or "netplan" (managed by systemd-networkd)
    ip_text: str = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        # has_addr compares text: formatting an IPv6 address each time was most of a 1,024-host perftest round
        self.ip_text = str(self.iface.ip)

    @property
    def family(self) -> str:
        return "inet" if self.iface.version == 4 else "inet6"


@dataclass
class BondParams:
    mode: str = "balance-rr"
    miimon: int = 0
    updelay: int = 0
    downdelay: int = 0
    xmit_hash_policy: str = "layer2"
    lacp_rate: str = "slow"
    primary: str | None = None
    ad_select: str = "stable"


@dataclass
class Qos:
    """DCB/ECN runtime state of one mlx5 port; firmware defaults come back after a driver reload or reboot."""

    trust: str = "pcp"
    pfc: list[int] = field(default_factory=lambda: [0] * 8)
    cable_len: int = 7
    dscp2prio: list[int] = field(default_factory=lambda: [d >> 3 for d in range(64)])
    ecn_np: list[int] = field(default_factory=lambda: [0] * 8)
    ecn_rp: list[int] = field(default_factory=lambda: [0] * 8)
    cnp_dscp: int = 48
    cnp_802p_prio: int = 6

    @property
    def pfc_mask(self) -> int:
        return sum(bit << i for i, bit in enumerate(self.pfc))


@dataclass
class Netdev:
    name: str
    kind: str  # "loopback" | "ether" | "bond"
    ifindex: int
    mac: str
    perm_mac: str
    driver: str = ""
    pci: str | None = None
    port_index: int | None = None  # index into the profile's RDMA-capable ports
    mtu: int = 1500
    max_mtu: int = 9978
    mtu_cap: int | None = None  # firmware limit injected by the mtu_mismatch fault
    admin_up: bool = False
    addrs: list[Addr] = field(default_factory=list)
    master: str | None = None
    bond: BondParams | None = None
    slaves: list[str] = field(default_factory=list)
    qos: Qos | None = None
    managed: bool = False  # created by netplan (bonds): removed again when no longer configured
    stats: dict[str, int] = field(default_factory=dict)

    @property
    def ipv4(self) -> list[ipaddress.IPv4Interface]:
        return [a.iface for a in self.addrs if isinstance(a.iface, ipaddress.IPv4Interface)]

    @property
    def ipv6(self) -> list[ipaddress.IPv6Interface]:
        return [a.iface for a in self.addrs if isinstance(a.iface, ipaddress.IPv6Interface)]

    def set_mtu(self, mtu: int) -> None:
        """Store an accepted MTU; a firmware cap silently keeps the port at its limit (the fault's point)."""
        self.mtu = min(mtu, self.mtu_cap) if self.mtu_cap else mtu

    def has_addr(self, ip: str) -> bool:
        return any(a.ip_text == ip for a in self.addrs)


def persistent_mac(seed: str) -> str:
    """systemd-networkd's MACAddressPolicy=persistent: stable, locally administered, derived from names."""
    h = bytearray(hashlib.sha256(seed.encode()).digest()[:6])
    h[0] = (h[0] & 0xFE) | 0x02
    return ":".join(f"{b:02x}" for b in h)


def link_local(mac: str) -> ipaddress.IPv6Interface:
    b = [int(x, 16) for x in mac.split(":")]
    b[0] ^= 0x02
    eui = b[:3] + [0xFF, 0xFE] + b[3:]
    return ipaddress.IPv6Interface((bytes([0xFE, 0x80] + [0] * 6 + eui), 64))


def ensure_link_local(dev: Netdev) -> None:
    """The kernel adds fe80::/64 when an interface comes up (never on bond slaves)."""
    if dev.kind == "loopback" or dev.master:
        return
    ll = link_local(dev.mac)
    if all(a.iface != ll for a in dev.addrs):
        dev.addrs.append(Addr(ll, "kernel"))


def drop_link_local(dev: Netdev) -> None:
    dev.addrs = [a for a in dev.addrs if not (a.iface.version == 6 and a.iface.ip.is_link_local)]
