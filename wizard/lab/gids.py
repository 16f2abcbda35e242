"""RoCE GID tables: addresses on a netdev become GID entries in stable slots, like the kernel's cache."""

from __future__ import annotations

import ipaddress
from dataclasses import dataclass

GID_TABLE_LEN = 255  # sysfs exposes gids/0..254 on mlx5 RoCE ports (gid_tbl_len 256, last reserved)
ZERO_GID = "0000:0000:0000:0000:0000:0000:0000:0000"
ROCE_V1 = "IB/RoCE v1"
ROCE_V2 = "RoCE v2"


@dataclass(frozen=True)
class GidEntry:
    gid: str  # full form, as sysfs prints it
    type: str  # ROCE_V1 or ROCE_V2
    ndev: str


def full_form(addr: ipaddress.IPv6Address) -> str:
    return addr.exploded


def link_local_gid(mac: str) -> str:
    """fe80::/64 GID from a MAC via modified EUI-64 (flip the U/L bit, insert ff:fe)."""
    b = [int(x, 16) for x in mac.split(":")]
    b[0] ^= 0x02
    eui = b[:3] + [0xFF, 0xFE] + b[3:]
    return full_form(ipaddress.IPv6Address(bytes([0xFE, 0x80] + [0] * 6 + eui)))


def ipv4_gid(ip: ipaddress.IPv4Address) -> str:
    return full_form(ipaddress.IPv6Address(b"\0" * 10 + b"\xff\xff" + ip.packed))


def ipv6_gid(ip: ipaddress.IPv6Address) -> str:
    return full_form(ip)


def compact(gid: str) -> str:
    """How rdma-core prints a RoCE v2 GID (inet_ntop): ``::ffff:192.168.1.11`` / ``fe80::...``."""
    addr = ipaddress.IPv6Address(gid)
    if addr.ipv4_mapped is not None:
        return f"::ffff:{addr.ipv4_mapped}"
    return str(addr)


def desired_entries(mac: str, ndev: str, ipv4: list[str], ipv6: list[str], *, with_ips: bool = True) -> list[GidEntry]:
    """The GIDs a port should hold: default link-local pair first, then a v1/v2 pair per address."""
    ll = link_local_gid(mac)
    out = [GidEntry(ll, ROCE_V1, ndev), GidEntry(ll, ROCE_V2, ndev)]
    if with_ips:
        for ip in ipv4:
            g = ipv4_gid(ipaddress.IPv4Address(ip))
            out += [GidEntry(g, ROCE_V1, ndev), GidEntry(g, ROCE_V2, ndev)]
        for ip6 in ipv6:
            g = ipv6_gid(ipaddress.IPv6Address(ip6))
            if g != ll:
                out += [GidEntry(g, ROCE_V1, ndev), GidEntry(g, ROCE_V2, ndev)]
    return out


class GidTable:
    """Fixed-size table; existing entries keep their index, new ones take the lowest free slot."""

    def __init__(self) -> None:
        self.slots: list[GidEntry | None] = [None] * GID_TABLE_LEN
        self.held: set[int] = set()
        """Slots whose entry was deleted while still referenced (a QP or address handle of a running process):
        empty to readers, not free for new entries until the table is rebuilt (ib_core's pending-delete entries)."""

    def hold(self, indices: set[int]) -> None:
        for i in indices:
            self.slots[i] = None
        self.held |= indices

    def sync(self, desired: list[GidEntry]) -> None:
        want = set(desired)
        for i, entry in enumerate(self.slots):
            if entry is not None and entry not in want:
                self.slots[i] = None
        have = {e for e in self.slots if e is not None}
        for entry in desired:
            if entry in have:
                continue
            free = next((i for i, e in enumerate(self.slots) if e is None and i not in self.held), None)
            if free is None:
                return
            self.slots[free] = entry
            have.add(entry)

    def entries(self) -> list[tuple[int, GidEntry]]:
        return [(i, e) for i, e in enumerate(self.slots) if e is not None]
