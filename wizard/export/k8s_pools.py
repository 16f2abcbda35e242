"""nv-ipam IPPool sizing for a rail: per-node blocks that give every node pod addresses outside the hosts' own
rail addresses and the rail gateway, or a refusal that says how large the rail subnet would have to be.

nv-ipam as network-operator v25.7.0 ships it (Mellanox/nvidia-k8s-ipam, tag network-operator-v25.7.0,
pkg/ipam-controller/allocator/allocator.go) carves consecutive blocks of perNodeBlockSize from the pool subnet's
first host address and hands the first free one to each node, in no order the export controls. It does not skip a
block the exclusions cover entirely (that came with network-operator v26.1.0), so a node given a block made only
of host addresses gets no pod address at all. Every one of the first N blocks must therefore keep a free address."""

from __future__ import annotations

import ipaddress
from bisect import bisect_left, bisect_right
from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from wizard.export.k8s_inputs import Rail

Network = ipaddress.IPv4Network | ipaddress.IPv6Network
Address = ipaddress.IPv4Address | ipaddress.IPv6Address
_MAX_SPLIT = 8  # sub-prefixes tried at most this many bits below the rail prefix (IPv6 rails are never that small)


@dataclass(frozen=True)
class PoolPlan:
    """An nv-ipam IPPool's numbers for one rail."""

    block: int
    exclusions: list[tuple[str, str]]
    free_per_node: list[int]
    subnet: Network | None = None  # the pool's subnet: the rail subnet, or a part of it (plan_for)
    gateway: str | None = None  # the rail gateway, where it lies inside the pool subnet

    @property
    def fits(self) -> bool:
        """Every node's block keeps at least one address that is neither a host's nor the gateway's."""
        return all(free >= 1 for free in self.free_per_node)


def _usable(net: Network) -> int:
    # nv-ipam's GetPossibleIPCount: IPv4 leaves out the network and broadcast addresses, IPv6 the subnet address.
    return net.num_addresses - 2 if net.version == 4 else min(net.num_addresses - 1, 1 << 16)


def _carve(net: Network, nodes: int, taken: list[Address], gateway: str | None) -> PoolPlan:
    block = max(1, _usable(net) // max(1, nodes))
    first = net.network_address + 1
    inside = sorted(ip for ip in taken if ip in net)
    free = []
    for n in range(nodes):
        start, end = first + n * block, first + (n + 1) * block - 1
        free.append(block - (bisect_right(inside, end) - bisect_left(inside, start)))
    if block * nodes > _usable(net):
        free = [0] * nodes  # the blocks would reach the broadcast address: nv-ipam has no free range for them
    inner_gateway = gateway if gateway and ipaddress.ip_address(gateway) in net else None
    return PoolPlan(block, _ranges(inside), free, net, inner_gateway)


def _taken(rail: Rail) -> list[Address]:
    taken = {ipaddress.ip_interface(e.address).ip for e in rail.ends}
    if rail.gateway:
        taken.add(ipaddress.ip_address(rail.gateway))
    return sorted(taken)


def plan_for(net: Network, nodes: int, taken: list[Address], gateway: str | None) -> PoolPlan:
    """The whole subnet when every node's block keeps a free address (the export has always done that); otherwise
    the sub-prefix (up to _MAX_SPLIT bits longer) whose blocks give every node the most addresses outside the hosts'
    and the gateway, e.g. the upper /25 of a /24 whose first 16 addresses are hosts. Pods on a sub-prefix see its
    prefix length: every pod of the rail is inside it, and the hosts' own addresses are not pod peers."""
    whole = _carve(net, nodes, taken, gateway)
    if whole.fits:
        return whole
    best = None
    for extra in range(1, _MAX_SPLIT + 1):
        if net.prefixlen + extra > net.max_prefixlen or _usable(next(net.subnets(prefixlen_diff=extra))) < nodes:
            break
        for part in net.subnets(prefixlen_diff=extra):
            plan = _carve(part, nodes, taken, gateway)
            if plan.fits and (best is None or min(plan.free_per_node) > min(best.free_per_node)):
                best = plan
    return best or whole


def pool_plan(rail: Rail, nodes: int) -> PoolPlan:
    """The IPPool of one rail across ``nodes`` nodes (every node the pool's nodeSelector matches gets a block)."""
    return plan_for(rail.subnet, nodes, _taken(rail), rail.gateway)


def needed(rail: Rail, nodes: int) -> Network | None:
    """The smallest subnet, with the same network address and the same host ids and gateway host part, whose pool
    would fit; None when none up to the whole address space does."""
    base = rail.subnet.network_address
    offsets = [int(ip) - int(base) for ip in _taken(rail)]
    gateway_offset = int(ipaddress.ip_address(rail.gateway)) - int(base) if rail.gateway else None
    for prefix in range(rail.subnet.prefixlen - 1, -1, -1):
        net = ipaddress.ip_network(f"{base}/{prefix}", strict=False)
        start = net.network_address
        taken = [start + offset for offset in offsets]
        gateway = str(start + gateway_offset) if gateway_offset is not None else None
        if plan_for(net, nodes, taken, gateway).fits:
            return net
    return None


def refusal(rail: Rail, nodes: int) -> str | None:
    """One line naming the rail subnet and what it would need, when no pool gives every node an address."""
    if pool_plan(rail, nodes).fits:
        return None
    hosts = len({e.address for e in rail.ends})
    gateway = " and the gateway" if rail.gateway else ""
    bigger = needed(rail, nodes)
    wanted = f"{bigger.num_addresses} addresses (a /{bigger.prefixlen})" if bigger else "more addresses than exist"
    return (
        f"{rail.name}: subnet {rail.subnet} ({rail.subnet.num_addresses} addresses) cannot give each of {nodes} "
        f"nodes a per-node block of pod addresses outside the {hosts} hosts' own{gateway}: it would need {wanted}; "
        "give the rail a larger subnet"
    )


def _ranges(addresses: list[Address]) -> list[tuple[str, str]]:
    """Consecutive addresses merged into (start, end) ranges."""
    out: list[list[Address]] = []
    for ip in addresses:
        if out and int(ip) == int(out[-1][1]) + 1:
            out[-1][1] = ip
        else:
            out.append([ip, ip])
    return [(str(a), str(b)) for a, b in out]
