"""Routed paths on the modelled rail fabric: leaf gateways, the spine, reverse-path filtering and RoCE resolution.

The rails-N leaves are L3 switches (a rail-optimized Cumulus fabric, wizard/lab/rails_plan.py): every leaf of rail
i answers on the rail's gateway address on its rail segment (rails-16: leaf-r<i> owns 10.10.<i>.254/24, the
addressing of assets/answers.rails-16.yaml; across SUs the rail is one VNI with an anycast gateway on every leaf of
it) and learns every other rail's subnet from the spines, so a packet sent to that gateway is routed leaf -> spine ->
a leaf of the destination's rail and delivered on that rail's segment to the port that owns the address (ARP, which
these hosts answer only on the port owning the address: arp_ignore=1, what the network stage sets). The answer
takes the destination host's own route back (its policy table when the rules are there), so each direction is
looked up separately.

Reverse-path filtering (Documentation/networking/ip-sysctl.rst, ``rp_filter``; net/ipv4/fib_frontend.c
fib_validate_source): the effective mode is max(conf/all, conf/<dev>); 1 (strict) drops a packet whose source the
host would not route back out of the interface it arrived on, 2 (loose) only one it cannot route back at all. The
lookup is made from the receiving address, so the per-rail ``from`` rules take part in it.

RoCE v2 (drivers/infiniband/core/addr.c): modifying a QP to RTR resolves the destination GID's address with a route
lookup from the source GID's address bound to the GID's netdev (set_addr_netns_by_gid_rcu sets bound_dev_if;
addr4_resolve passes it as flowi4_oif), then resolves the next hop's MAC by ARP on that netdev. Packets of the QP
leave by that port whatever the routing tables say, and a NIC does no reverse-path filtering.
"""

from __future__ import annotations

import ipaddress
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import TYPE_CHECKING

from wizard.lab import routing, sysctl

if TYPE_CHECKING:
    from wizard.lab.fabric import PortRef
    from wizard.lab.host import SimHost
    from wizard.lab.switches import Switch


def svi(switch: Switch) -> ipaddress.IPv4Interface | None:
    """The leaf's address on its rail segment (the gateway hosts route other rails through)."""
    if switch.role != "leaf":
        return None
    return switch.gateway


def _segment_for(switches: Iterable[Switch], dst: str) -> str | None:
    """The rail segment whose subnet holds ``dst`` (every leaf learns the others' subnets through the spines)."""
    ip = ipaddress.IPv4Address(dst)
    found = next((s for s in switches if (a := svi(s)) is not None and ip in a.network), None)
    return found.segment if found is not None else None


@dataclass
class Arrival:
    """Where a packet was delivered: host, the netdev that received it, the smallest MTU on the way."""

    host: SimHost
    netdev: str
    path_mtu: int
    routed: bool = False


def _owner_at(host: SimHost, ref: tuple[str, int], ip: str) -> tuple[SimHost, str] | None:
    """The live host port ``ref`` when its netdev (or its bond) owns ``ip`` and answers ARP for it."""
    from wizard.lab.reach import _owner_netdev

    assert host.lab is not None
    peer = host.lab.hosts.get(ref[0])
    if peer is None or peer.state != "running" or not peer.port_carrier(ref[1]):
        return None
    owner = _owner_netdev(peer, ref[1])
    if owner is None or not peer.netdevs[owner].admin_up or not peer.netdevs[owner].has_addr(ip):
        return None
    return peer, owner


def send(host: SimHost, route: routing.Route, dst: str) -> Arrival | str:
    """Deliver a packet for ``dst`` along ``route``: its Arrival, or "unreachable" (ARP unanswered) / "loss"."""
    from wizard.lab.reach import _egress_ports

    lab = host.lab
    if lab is None or lab.fabric.switches is None or not host.netdev_carrier(route.dev):
        return "unreachable"
    fabric, switches = lab.fabric, lab.fabric.switches
    outcome = "unreachable"
    for port in _egress_ports(host, route.dev):
        me = (host.name, port)
        segment = fabric.segment(me)
        ingress = switches.port_of(me)
        if segment is None or ingress is None:
            continue
        if route.via is None:
            answer = _arp(host, segment, dst, me)
            if answer:
                ref, found = answer
                return Arrival(found[0], found[1], fabric.path_mtu(me, ref))
            continue
        leaf = switches.switches.get(ingress.switch)
        gw = svi(leaf) if leaf is not None else None
        if gw is None or str(gw.ip) != route.via:
            continue  # nobody on this segment answers ARP for the gateway
        outcome = "loss"  # the leaf took the packet; from here on a failure is silent
        target = _segment_for(switches.switches.values(), dst)
        if target is None:
            continue
        answer = _arp(host, target, dst, None, lambda ref: switches.port_of(ref) is not None)
        if answer:
            ref, found = answer
            mtus = [p.mtu for p in switches.path(me, ref)]  # both leaf ports, and uplinks and spine between leaves
            return Arrival(found[0], found[1], min(mtus), routed=True)
    return outcome


def _arp(
    host: SimHost,
    segment: str,
    dst: str,
    me: PortRef | None,
    usable: Callable[[PortRef], bool] = lambda ref: True,
) -> tuple[PortRef, tuple[SimHost, str]] | None:
    """The port of ``segment`` (not ``me``) whose host answers ARP for ``dst``, with that host and netdev.

    A rail of a 1,024-host fabric is one segment across its SUs, and searching it port by port for each of a round's
    4,096 connections was most of the lab's work. So each segment keeps which port holds which address, learnt in one
    pass when an address is not known or its port no longer answers for it, and every answer is checked against the
    port's state as it is now (carrier, admin state, the address). Two ports holding one address (a duplicate, a
    fault of its own) answer as the first of them in the segment did; where that one cannot, the others are tried."""
    assert host.lab is not None
    fabric = host.lab.fabric
    learnt: dict[str, dict[str, PortRef]] = fabric.__dict__.setdefault("_arp_answers", {})

    def answers(ref: PortRef | None) -> tuple[SimHost, str] | None:
        if ref is None or ref == me or fabric.segment(ref) != segment or not usable(ref):
            return None
        return _owner_at(host, ref, dst)

    ref = learnt.get(segment, {}).get(dst)
    if (found := answers(ref)) is None:  # not known, or that port no longer answers: learn the segment again
        learnt[segment] = _addresses_on(host, segment)
        ref = learnt[segment].get(dst)
        found = answers(ref)
    if found is not None and ref is not None:
        return ref, found
    for ref in fabric.members(segment):  # the learnt port cannot answer: any other that can
        if ref != me and usable(ref) and (found := _owner_at(host, ref, dst)):
            return ref, found
    return None


def _addresses_on(host: SimHost, segment: str) -> dict[str, PortRef]:
    """Every address held on ``segment``, and the first port (in the segment's order) that holds it."""
    from wizard.lab.reach import _owner_netdev

    assert host.lab is not None
    held: dict[str, PortRef] = {}
    for ref in host.lab.fabric.members(segment):
        peer = host.lab.hosts.get(ref[0])
        owner = _owner_netdev(peer, ref[1]) if peer is not None else None
        if peer is not None and owner is not None:
            for addr in peer.netdevs[owner].addrs:
                held.setdefault(addr.ip_text, ref)
    return held


def rp_filter(host: SimHost, dev: str) -> int:
    """Effective rp_filter of ``dev``: the larger of conf/all and conf/<dev> (IN_DEV_MAXCONF)."""
    values = []
    for key in ("net.ipv4.conf.all.rp_filter", f"net.ipv4.conf.{dev}.rp_filter"):
        try:
            values.append(int(sysctl.get(host, key)))
        except (sysctl.SysctlError, ValueError):
            continue
    return max(values, default=0)


def accepts(host: SimHost, in_dev: str, source: str, local: str) -> bool:
    """Whether reverse-path filtering on ``in_dev`` lets a packet from ``source`` to ``local`` in."""
    mode = rp_filter(host, in_dev)
    if mode == 0:
        return True
    try:
        back = routing.lookup(host, source, src=local)
    except routing.RouteError:
        return False
    return mode == 2 or back.dev == in_dev


def round_trip(host: SimHost, dst: str, route: routing.Route, packet: int) -> tuple[str, float, str]:
    """An ICMP echo along ``route`` and its answer along the peer's own route: (outcome, rtt ms, the host that
    answered; "" unless the outcome is ok)."""
    there = send(host, route, dst)
    if isinstance(there, str):
        return there, 0.0, ""
    peer = there.host
    if not accepts(peer, there.netdev, route.src, dst):
        return "loss", 0.0, ""
    try:
        back_route = routing.lookup(peer, route.src, src=dst)
    except routing.RouteError:
        return "loss", 0.0, ""
    back = send(peer, back_route, route.src)
    if isinstance(back, str) or back.host is not host or not accepts(host, back.netdev, dst, route.src):
        return "loss", 0.0, ""
    tx, rx = host.netdevs[route.dev].mtu, peer.netdevs[there.netdev].mtu
    peer_tx, own_rx = peer.netdevs[back_route.dev].mtu, host.netdevs[back.netdev].mtu
    fits = min(packet, tx) <= min(there.path_mtu, rx) and min(packet, peer_tx) <= min(back.path_mtu, own_rx)
    if not fits:
        return "loss", 0.0, ""
    hops = there.routed + back.routed
    return "ok", (0.11 if packet < 2000 else 0.19) + 0.01 * hops, peer.name


def roce_failure(a: SimHost, a_dev: str, a_ip: str, b: SimHost, b_dev: str, b_ip: str) -> str | None:
    """Why QP traffic from the GID (a_dev, a_ip) cannot reach the GID (b_dev, b_ip); None when it can."""
    try:
        route = routing.lookup(a, b_ip, src=a_ip, oif=a_dev)
    except routing.RouteError as exc:
        return f"{a.name}: route to {b_ip} from {a_ip}: {exc}"
    there = send(a, route, b_ip)
    if isinstance(there, str):
        hop = f"gateway {route.via}" if route.via else b_ip
        return f"{a.name} {a_dev}: {hop} does not answer ARP on {a_dev}'s segment"
    if there.host is not b or there.netdev != b_dev:
        return f"{a.name} {a_dev}: {b_ip} answers on {there.host.name} {there.netdev}, not on the GID's port {b_dev}"
    return None
