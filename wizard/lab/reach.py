"""IPv4 reachability across the lab's cables and switches (what ``ping`` experiences)."""

from __future__ import annotations

import ipaddress
from dataclasses import dataclass
from typing import TYPE_CHECKING

from wizard.lab import l3path, routing

if TYPE_CHECKING:
    from wizard.lab.host import SimHost


@dataclass
class Probe:
    outcome: str  # ok | no_route | unreachable (ARP fails) | loss (frames dropped) | local_mtu
    dev: str = ""
    src: str = ""
    mtu: int = 1500
    rtt_ms: float = 0.2
    peer: str = ""  # the host that answered, where the modelled fabric routed the packet (else "": not traced)


def _egress_ports(host: SimHost, dev_name: str) -> list[int]:
    """Physical port indices a netdev transmits on (a bond's slaves; active-backup: the active one)."""
    dev = host.netdevs[dev_name]
    if dev.port_index is not None:
        return [dev.port_index] if host.port_carrier(dev.port_index) else []
    if dev.kind == "bond":
        up = [s for s in dev.slaves if host.netdev_carrier(s)]
        if dev.bond and dev.bond.mode == "active-backup":
            primary = dev.bond.primary if dev.bond.primary in up else None
            up = [primary or up[0]] if up else []
        return [host.netdevs[s].port_index for s in up if host.netdevs[s].port_index is not None]  # type: ignore[misc]
    return []


def _owner_netdev(host: SimHost, port_index: int) -> str | None:
    """The netdev that receives IP traffic arriving on a port (its bond if enslaved)."""
    name = host.profile.ports[port_index].netdev
    dev = host.netdevs.get(name)
    if dev is None:
        return None
    return dev.master or name


def probe(
    host: SimHost,
    dst: str,
    *,
    iface: str | None = None,
    size: int = 56,
    dont_frag: bool = False,
    src: str | None = None,
) -> Probe:
    """Whether an ICMP echo of ``size`` payload bytes to ``dst`` (from ``src`` when bound) gets an answer, and why."""
    ip = ipaddress.ip_address(dst)
    v6 = ip.version == 6
    packet = size + (48 if v6 else 28)
    for dev in host.netdevs.values():
        if dev.admin_up and dev.has_addr(dst):
            return Probe("ok", "lo", dst, 65536, 0.02, host.name)
    if not v6 and host.lab is not None and host.lab.fabric.switches is not None:
        return _routed(host, dst, iface, src, packet, dont_frag)
    if iface:
        if iface not in host.netdevs:
            return Probe("no_device", iface)
        dev = host.netdevs[iface]
        own = dev.ipv6 if v6 else dev.ipv4
        src = str(own[0].ip) if own else ""
        connected = ip.is_link_local or any(ip in a.network for a in own)
        route = (iface, None if connected else _gateway_via(host, iface), src)
    elif v6:
        found6 = next(
            (
                (d.name, str(a.ip))
                for d in host.netdevs.values()
                if d.admin_up
                for a in d.ipv6
                if not a.ip.is_link_local and ip in a.network
            ),
            None,
        )
        if found6 is None:
            return Probe("no_route")
        route = (found6[0], None, found6[1])
    else:
        try:
            found = routing.lookup(host, dst, src=src)
        except routing.RouteError:
            return Probe("no_route")
        route = (found.dev, found.via, found.src)
    dev_name, via, src = route
    dev = host.netdevs[dev_name]
    mtu = dev.mtu
    if dont_frag and packet > mtu:
        return Probe("local_mtu", dev_name, src, mtu)
    if not host.netdev_carrier(dev_name):
        return Probe("unreachable", dev_name, src, mtu)
    lab = host.lab
    if lab is None:
        return Probe("unreachable", dev_name, src, mtu)
    if dev_name == host.profile.mgmt.netdev:
        return _mgmt(host, dst, via, dev_name, src, mtu, packet)
    if via is not None:
        return Probe("loss", dev_name, src, mtu)
    for port in _egress_ports(host, dev_name):
        for peer_name, j in lab.fabric.peers((host.name, port)):
            peer = lab.hosts.get(peer_name)
            if peer is None or peer.state != "running" or not peer.port_carrier(j):
                continue
            owner = _owner_netdev(peer, j)
            if owner is None or not peer.netdevs[owner].admin_up or not peer.netdevs[owner].has_addr(dst):
                continue
            peer_mtu = peer.netdevs[owner].mtu
            if lab.fabric.switched:
                # a switch drops frames above its port MTU on ingress and cannot fragment them on egress
                peer_mtu = min(peer_mtu, lab.fabric.path_mtu((host.name, port), (peer_name, j)))
            fits = min(packet, mtu) <= peer_mtu and min(packet, peer_mtu) <= mtu
            return Probe("ok" if fits else "loss", dev_name, src, mtu, 0.11 if packet < 2000 else 0.19)
    return Probe("unreachable", dev_name, src, mtu)


def _gateway_via(host: SimHost, iface: str) -> str | None:
    gw = host.gateway
    return gw[0] if gw and gw[1] == iface else "0.0.0.0"


def _mgmt(host: SimHost, dst: str, via: str | None, dev: str, src: str, mtu: int, packet: int) -> Probe:
    assert host.lab is not None
    for other in host.lab.hosts.values():
        if other is host or other.state != "running":
            continue
        odev = other.netdevs.get(other.profile.mgmt.netdev)
        if odev is not None and odev.admin_up and odev.has_addr(dst):
            fits = min(packet, mtu) <= odev.mtu and min(packet, odev.mtu) <= mtu
            return Probe("ok" if fits else "loss", dev, src, mtu, 0.18)
    if via is None:
        return Probe("unreachable", dev, src, mtu)
    return Probe("loss", dev, src, mtu)


def multicast_neighbors(host: SimHost, iface: str) -> list[tuple[str, float]]:
    """Who answers ``ping -6 ff02::1 -I iface``: this port's own link-local, then every live neighbour's."""
    dev = host.netdevs.get(iface)
    if dev is None or not dev.admin_up:
        return []
    mine = [a for a in dev.ipv6 if a.ip.is_link_local]
    out = [(str(mine[0].ip), 0.03)] if mine else []
    if not host.netdev_carrier(iface) or host.lab is None:
        return out
    for port in _egress_ports(host, iface):
        for peer_name, j in host.lab.fabric.peers((host.name, port)):
            peer = host.lab.hosts.get(peer_name)
            if peer is None or peer.state != "running" or not peer.port_carrier(j):
                continue
            owner = _owner_netdev(peer, j)
            pdev = peer.netdevs.get(owner or "")
            if pdev is None or not pdev.admin_up:
                continue
            for a in pdev.ipv6:
                if a.ip.is_link_local:
                    out.append((str(a.ip), 0.15))
    return out


def _routed(host: SimHost, dst: str, iface: str | None, src: str | None, packet: int, dont_frag: bool) -> Probe:
    """IPv4 on the modelled leaf/spine fabric: the kernel's lookup (rules included), then the round trip."""
    if iface is not None and iface not in host.netdevs:
        return Probe("no_device", iface)
    try:
        route = routing.lookup(host, dst, src=src, oif=iface)
    except routing.RouteError:
        return Probe("no_route")
    mtu = host.netdevs[route.dev].mtu
    if dont_frag and packet > mtu:
        return Probe("local_mtu", route.dev, route.src, mtu)
    if route.dev == host.profile.mgmt.netdev:
        return _mgmt(host, dst, route.via, route.dev, route.src, mtu, packet)
    outcome, rtt, peer = l3path.round_trip(host, dst, route, packet)
    return Probe(outcome, route.dev, route.src, mtu, rtt or 0.2, peer)
