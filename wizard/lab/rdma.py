"""RDMA devices derived from host state: naming (inbox udev vs DOCA), RoCE LAG, port state and GID tables."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from wizard.lab import ib
from wizard.lab.gids import ROCE_V1, GidEntry, GidTable, desired_entries, link_local_gid
from wizard.lab.netdevs import LAG_MODES
from wizard.lab.nodes import _EPOCH
from wizard.lab.profile import CardSpec, PortSpec

if TYPE_CHECKING:
    from wizard.lab.host import SimHost

IB_MTUS = (4096, 2048, 1024, 512, 256)
IB_MTU_ENUM = {256: 1, 512: 2, 1024: 3, 2048: 4, 4096: 5}
# GRH + UDP + BTH + XRC ext + AtomicETH + ICRC, as the kernel's iboe_get_mtu() subtracts
ROCE_OVERHEAD = 40 + 8 + 12 + 4 + 28 + 4


@dataclass(frozen=True)
class RdmaDev:
    name: str
    card: CardSpec
    port_indices: tuple[int, ...]  # physical ports behind the device (2 for a RoCE LAG device)
    pci: str
    netdev: str  # the netdev that owns the port (the bond for a LAG device)
    lag: bool = False

    @property
    def port(self) -> PortSpec:
        return self.card.ports[0] if self.lag else _port_of(self.card, self.pci)


def _port_of(card: CardSpec, pci: str) -> PortSpec:
    return next(p for p in card.ports if p.pci == pci)


def inbox_name(port: PortSpec, link_layer: str = "Ethernet") -> str:
    """rdma-core's udev NAME_FALLBACK by PCI path: roce[P<domain>]p<bus>s<slot>f<fn> (decimal numbers), with the
    prefix "ib" for an InfiniBand port (rdma-core kernel-boot/rdma_rename.c: "roce" or "ib" by link layer)."""
    dom = f"P{port.domain}" if port.domain else ""
    prefix = "ib" if link_layer == "InfiniBand" else "roce"
    return f"{prefix}{dom}p{port.bus}s{port.slot}f{port.function}"


def _state_key(host: SimHost) -> tuple:
    bonds = tuple(
        (d.name, d.bond.mode if d.bond else "", tuple(d.slaves)) for d in host.netdevs.values() if d.kind == "bond"
    )
    return ("mlx5_ib" in host.modules, "mlx5_core" in host.modules, host.stack, bonds, tuple(host.netdevs))


def devices(host: SimHost) -> list[RdmaDev]:
    """The RDMA devices the kernel currently exposes (none unless mlx5_ib is loaded)."""
    key = _state_key(host)
    cached = host.__dict__.get("_rdma_cache")
    if cached is not None and cached[0] == key:
        return list(cached[1])
    result = _compute(host)
    host.__dict__["_rdma_cache"] = (key, result)
    return list(result)


def _compute(host: SimHost) -> list[RdmaDev]:
    if "mlx5_ib" not in host.modules or "mlx5_core" not in host.modules:
        return []
    ports = host.profile.ports
    lag_bonds: dict[str, str] = {}  # card label -> bond name
    for card in host.profile.cards:
        names = {p.netdev for p in card.ports}
        if host.lab is not None and host.lab.ib is not None and ib.is_ib_port(host, ports.index(card.ports[0])):
            continue  # RoCE LAG is an Ethernet feature: an IPoIB bond leaves each IB port its own device
        for dev in host.netdevs.values():
            if dev.kind == "bond" and dev.bond and dev.bond.mode in LAG_MODES and set(dev.slaves) == names:
                if len(card.ports) == 2:
                    lag_bonds[card.label] = dev.name
    out: list[RdmaDev] = []
    index = 0
    lag_index = 0
    for card in host.profile.cards:
        if card.label in lag_bonds:
            first = card.ports[0]
            name = f"mlx5_bond_{lag_index}" if host.stack == "doca" else inbox_name(first)
            lag_index += 1
            idx = tuple(ports.index(p) for p in card.ports)
            out.append(RdmaDev(name, card, idx, first.pci, lag_bonds[card.label], lag=True))
            index += len(card.ports)
            continue
        for p in card.ports:
            if p.netdev not in host.netdevs:
                index += 1
                continue
            layer = ib.port_link_layer(host, ports.index(p)) if host.lab is not None and host.lab.ib else "Ethernet"
            name = f"mlx5_{index}" if host.stack == "doca" else inbox_name(p, layer)
            out.append(RdmaDev(name, card, (ports.index(p),), p.pci, p.netdev))
            index += 1
    return out


def find(host: SimHost, name: str) -> RdmaDev | None:
    return next((d for d in devices(host) if d.name == name), None)


def port_active(host: SimHost, dev: RdmaDev) -> bool:
    if is_ib(host, dev):
        return ib.view(host, dev.port_indices[0]).state == "ACTIVE"
    return any(host.port_carrier(i) for i in dev.port_indices)


def is_ib(host: SimHost, dev: RdmaDev) -> bool:
    return host.lab is not None and host.lab.ib is not None and ib.is_ib_port(host, dev.port_indices[0])


def link_layer(host: SimHost, dev: RdmaDev) -> str:
    return "InfiniBand" if is_ib(host, dev) else "Ethernet"


def state_text(host: SimHost, dev: RdmaDev) -> tuple[str, str]:
    """(state, physical_state) in iproute2 ``rdma link`` words."""
    if is_ib(host, dev):
        v = ib.view(host, dev.port_indices[0])
        return v.state, {"LinkUp": "LINK_UP", "Polling": "POLLING", "Disabled": "DISABLED"}[v.phys_state]
    return ("ACTIVE", "LINK_UP") if port_active(host, dev) else ("DOWN", "DISABLED")


def active_mtu(host: SimHost, dev: RdmaDev) -> int:
    if is_ib(host, dev):
        return 4096  # the IB MTU both ends and the switches support (the SM's path record), not the IPoIB MTU
    nd = host.netdevs.get(dev.netdev)
    mtu = nd.mtu if nd else 1500
    usable = mtu - ROCE_OVERHEAD
    return next((m for m in IB_MTUS if m <= usable), 256)


def node_guid(port: PortSpec) -> str:
    b = port.mac.split(":")
    return f"{b[0]}{b[1]}:{b[2]}03:00{b[3]}:{b[4]}{b[5]}"


def port_guid(mac: str) -> str:
    b = [int(x, 16) for x in mac.split(":")]
    b[0] ^= 0x02
    e = b[:3] + [0xFF, 0xFE] + b[3:]
    return "".join(f"{x:02x}" for x in e)


def gid_table(host: SimHost, dev: RdmaDev) -> GidTable:
    """The device's GID table, brought in line with the current addresses (stable indices)."""
    table = host.gid_tables.setdefault(dev.name, GidTable())
    synced = host.__dict__.setdefault("_gid_synced", {})
    if synced.get(dev.name) != (_EPOCH[0], id(table)):
        table.sync(_desired(host, dev))
        synced[dev.name] = (_EPOCH[0], id(table))
    return table


def _desired(host: SimHost, dev: RdmaDev) -> list[GidEntry]:
    if is_ib(host, dev):
        # An IB port's GID table holds the subnet prefix (fe80::/64 unless the SM sets another) + the port GUID at
        # index 0; IP addresses on IPoIB never become GIDs (IBTA 4.1.1; ib_cache only adds RoCE GIDs from netdevs).
        return [GidEntry(link_local_gid(dev.port.mac), ROCE_V1, "")]
    nd = host.netdevs.get(dev.netdev)
    if nd is None:
        return []
    owner = nd
    with_ips = True
    if nd.master and nd.master in host.netdevs:
        # Bond slaves carry the bond's GIDs (all slaves for xor/802.3ad, only the active one for active-backup).
        owner = host.netdevs[nd.master]
        if owner.bond and owner.bond.mode == "active-backup":
            active = owner.bond.primary or (owner.slaves[0] if owner.slaves else None)
            with_ips = active == nd.name
    ipv4 = [str(i.ip) for i in owner.ipv4]
    ipv6 = [str(i.ip) for i in owner.ipv6 if not i.ip.is_link_local]
    return desired_entries(owner.mac, owner.name, ipv4, ipv6, with_ips=with_ips)
