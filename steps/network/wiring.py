"""Cabling verdicts from the cross-host pings: who reaches whom, cross-wired cables, dead links, the jumbo path."""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from typing import Any

from steps.network.cabling import normal
from steps.network.design import Design, Endpoint
from steps.network.facts import NetworkFacts
from wizard.engine.step import CheckItem

Node = tuple[str, str]  # (host, netdev)


@dataclass
class Cluster:
    """What the verdicts are computed from: hosts in answers order, their designs, facts and ping results."""

    order: list[str]
    designs: dict[str, Design]
    nets: dict[str, NetworkFacts]
    pings: dict[str, dict[str, Any]]  # host -> netdev -> ping results, only hosts tested together
    mtu: int
    owners: dict[str, Node] = field(default_factory=dict)
    switch_ports: dict[Node, str] = field(default_factory=dict)  # (host, netdev) -> "leaf-r0 swp5" from LLDP
    _rails: dict[Node, str] | None = field(default=None, repr=False)

    def rails(self) -> dict[Node, str]:
        """segment_rails, worked out once: every host's checks read it (per host it made 1,024 hosts O(N^2))."""
        if self._rails is None:
            self._rails = segment_rails(self)
        return self._rails

    def __post_init__(self) -> None:
        for host, net in self.nets.items():
            for iface in net.interfaces.values():
                for address in iface.link_local:
                    self.owners[normal(address)] = (host, iface.name)

    def endpoint(self, node: Node) -> Endpoint | None:
        design = self.designs.get(node[0])
        return next((e for e in design.endpoints if e.netdev == node[1]), None) if design else None

    def name(self, node: Node) -> str:
        e = self.endpoint(node)
        return f"{node[0]} {node[1]}" + (f" ({e.label})" if e else "")

    def reached(self, node: Node) -> tuple[list[Node], list[str]]:
        """Peer ports this port's link-local ping reached, and addresses nobody in the run owns."""
        result = self.pings.get(node[0], {}).get(node[1], {})
        own = {normal(a) for a in self.nets[node[0]].interfaces.get(node[1], _NO_IFACE).link_local}
        known, unknown = [], []
        for address in result.get("link_local", {}).get("replies", []):
            address = normal(address)
            if address in own:
                continue
            owner = self.owners.get(address)
            if owner is None:
                unknown.append(address)
            elif owner[0] != node[0] and owner not in known:
                known.append(owner)
        return known, unknown


class _NoIface:
    link_local: list[str] = []


_NO_IFACE = _NoIface()


def segment_rails(cluster: Cluster) -> dict[Node, str]:
    """The rail each tested port is really cabled to: the majority rail of the ports it shares a segment with.

    Ties (two hosts back to back) go to the host listed first in the answers, so a swap is reported on the other.
    """
    parent: dict[Node, Node] = {}

    def find(n: Node) -> Node:
        parent.setdefault(n, n)
        while parent[n] != n:
            parent[n] = parent[parent[n]]
            n = parent[n]
        return n

    nodes = [(h, d) for h in cluster.order for d in cluster.pings.get(h, {}) if cluster.endpoint((h, d))]
    for node in nodes:
        find(node)
        for peer in cluster.reached(node)[0]:
            if cluster.endpoint(peer) is not None:
                parent[find(peer)] = find(node)
    groups: dict[Node, list[Node]] = {}
    for node in list(parent):
        groups.setdefault(find(node), []).append(node)
    result: dict[Node, str] = {}
    rank = {h: i for i, h in enumerate(cluster.order)}
    for members in groups.values():
        keys = [cluster.endpoint(m).key for m in members if cluster.endpoint(m)]  # type: ignore[union-attr]
        counts = Counter(keys).most_common()
        best = [k for k, c in counts if c == counts[0][1]]
        first = min((m for m in members if cluster.endpoint(m).key in best), key=lambda m: rank.get(m[0], 99))  # type: ignore[union-attr]
        for member in members:
            result[member] = cluster.endpoint(first).key  # type: ignore[union-attr]
    return result


def cabling_checks(cluster: Cluster, host: str) -> list[CheckItem]:
    """One item per rail port of ``host`` (link-local reachability) plus the jumbo ping, with fixes."""
    design = cluster.designs[host]
    rails = cluster.rails()
    items: list[CheckItem] = []
    misplaced: dict[str, str] = {}  # netdev -> key of the rail it is really on
    for e in design.endpoints:
        result = cluster.pings.get(host, {}).get(e.netdev)
        if result is None or not e.rdma:
            continue
        if "skipped" in result:
            items.append(_untested(cluster, host, e, result["skipped"]))
            if "jumbo" in result:
                items.append(_jumbo_item(cluster, host, e, result["jumbo"], rails))
            continue
        item, actual = _cabling_item(cluster, host, e, rails)
        items.append(item)
        if actual and actual != e.key:
            misplaced[e.netdev] = actual
        items.append(_jumbo_item(cluster, host, e, result.get("jumbo"), rails))
    moves = _moves(host, design, misplaced)
    for index, item in enumerate(items):
        netdev = item.id.removeprefix("cabling:")
        if item.id.startswith("cabling:") and netdev in moves:
            items[index] = item.model_copy(update={"fix": moves[netdev]})
    return items


def _untested(cluster: Cluster, host: str, e: Endpoint, why: str) -> CheckItem:
    """A port not pinged: without carrier, say whether the other end of its rail is dark too (then the cable is)."""
    evidence = f"{e.netdev}: not tested ({why})"
    if why == "no carrier":
        ends = []
        for peer in [h for h in cluster.order if h != host and h in cluster.nets]:
            other = next((x for x in cluster.designs[peer].endpoints if x.key == e.key), None)
            iface = cluster.nets[peer].interfaces.get(other.netdev) if other else None
            if iface is not None:
                ends.append(f"{peer} {iface.name} {'has carrier' if iface.carrier else 'has no carrier either'}")
        evidence += "; " + ("; ".join(ends) or "no peer known") + "; see the link check"
    return CheckItem(id=f"cabling:{e.netdev}", title=f"{e.label} cabling", status="skip", evidence=evidence)


def _cabling_item(cluster: Cluster, host: str, e: Endpoint, rails: dict[Node, str]) -> tuple[CheckItem, str | None]:
    node = (host, e.netdev)
    known, unknown = cluster.reached(node)
    wanted = [
        h
        for h in cluster.order
        if h != host and h in cluster.pings and any(x.key == e.key for x in cluster.designs[h].endpoints)
    ]
    if e.port is not None and e.port.ib:
        return _ib_reach_item(cluster, host, e, known, wanted), e.key
    title = f"{e.label} cabling"
    seen = ", ".join(cluster.name(k) for k in known) + (f"; unknown {', '.join(unknown)}" if unknown else "")
    replied = cluster.pings.get(host, {}).get(e.netdev, {}).get("link_local", {}).get("replied")
    if replied and replied > len(known) + len(unknown):  # a large segment: the nearest peers were kept
        seen += f" and {replied - len(known) - len(unknown)} more ports on its segment"
    if not known:
        if not wanted:
            return CheckItem(
                id=f"cabling:{e.netdev}",
                title=title,
                status="skip",
                evidence=f"{e.netdev}: no other host with {e.label} is in this run",
            ), None
        return CheckItem(
            id=f"cabling:{e.netdev}",
            title=title,
            status="fail",
            evidence=f"{e.netdev} reaches no {e.label} port of {', '.join(wanted)} over IPv6 link-local"
            + (f" (only {seen})" if unknown else ""),
            fix=f"check where the cable of {e.netdev} on {host} goes: it must reach {e.label} of "
            f"{', '.join(wanted)}{' through the rail switch' if cluster.designs[host].fabric == 'switched' else ''}"
            " (peers must answer IPv6 multicast echo: net.ipv6.icmp.echo_ignore_multicast=0)",
        ), None
    actual = rails.get(node, e.key)
    if actual != e.key:
        return CheckItem(
            id=f"cabling:{e.netdev}",
            title=title,
            status="fail",
            evidence=f"{host} {e.netdev} ({e.label}) is cabled to {_rail_name(actual)}: it reaches {seen}",
            fix=f"move the cable of {e.netdev} on {host} to {e.label}",  # replaced by the swap when there is one
        ), actual
    wrong = [k for k in known if (x := cluster.endpoint(k)) is not None and x.key != e.key]
    if wrong:
        return CheckItem(
            id=f"cabling:{e.netdev}",
            title=title,
            status="warn",
            evidence=f"{e.netdev} reaches {seen}: the peer side is cross-wired and is reported there",
            fix=f"see the cabling check of {', '.join(sorted({k[0] for k in wrong}))}",
        ), actual
    return CheckItem(
        id=f"cabling:{e.netdev}", title=title, status="pass", evidence=f"{e.netdev} reaches {seen}"
    ), actual


def _ib_reach_item(cluster: Cluster, host: str, e: Endpoint, known: list[Node], wanted: list[str]) -> CheckItem:
    """An IPoIB rail is a subnet over one IB partition, not a cable: every port of the partition answers, whatever
    rail it carries, so the check is that this rail's peers all do (a peer missing is out of the partition, or
    its port waits for the SM)."""
    reached = {k[0] for k in known if (x := cluster.endpoint(k)) is not None and x.key == e.key}
    missing = [h for h in wanted if h not in reached]
    title = f"{e.label} IPoIB reach"
    if missing:
        return CheckItem(
            id=f"cabling:{e.netdev}",
            title=title,
            status="fail",
            evidence=f"{e.netdev} reaches no {e.label} port of {', '.join(missing)} over IPoIB",
            fix="those ports share no partition with this one or wait for the subnet manager: see discovery's "
            "partition key and subnet manager items on both hosts",
        )
    return CheckItem(
        id=f"cabling:{e.netdev}",
        title=title,
        status="pass",
        evidence=f"{e.netdev} reaches {e.label} of {', '.join(sorted(reached)) or 'no other host'} in the partition",
    )


def _rail_name(key: str) -> str:
    return key.replace("rail", "rail ") if key.startswith("rail") else key.replace("bond:", "bond ")


def _moves(host: str, design: Design, misplaced: dict[str, str]) -> dict[str, str]:
    """The fix for each cross-wired port: a swap when two ports hold each other's cables, else a move."""
    by_key = {e.key: e.netdev for e in design.endpoints}
    own = {e.netdev: e.key for e in design.endpoints}
    fixes: dict[str, str] = {}
    for netdev, key in misplaced.items():
        owner = by_key.get(key)
        if owner and misplaced.get(owner) == own[netdev]:
            pair = sorted((netdev, owner), key=list(own).index)
            fixes[netdev] = f"swap the cables of {pair[0]} and {pair[1]} on {host}"
        else:
            fixes[netdev] = (
                f"the cable in {netdev} on {host} belongs to {_rail_name(key)}"
                + (f" (port {owner})" if owner else "")
                + f"; {netdev} needs the {_rail_name(own[netdev])} cable"
            )
    return fixes


def _jumbo_item(
    cluster: Cluster, host: str, e: Endpoint, jumbo: dict[str, Any] | None, rails: dict[Node, str]
) -> CheckItem:
    title = f"{e.label} jumbo path (MTU {cluster.mtu})"
    cid = f"jumbo:{e.netdev}"
    if jumbo is None:
        return CheckItem(id=cid, title=title, status="skip", evidence=f"no peer with {e.label} in this run")
    peer, peer_ip, size = jumbo["peer"], jumbo["peer_ip"], jumbo["size"]
    what = f"ping -M do -s {size} {peer_ip} ({peer}) from {e.netdev}"
    if jumbo.get("received"):
        return CheckItem(id=cid, title=title, status="pass", evidence=f"{what}: {jumbo['received']} replies")
    own = cluster.nets[host].interfaces.get(e.netdev)
    peer_endpoint = next((x for x in cluster.designs[peer].endpoints if x.key == e.key), None)
    peer_iface = cluster.nets[peer].interfaces.get(peer_endpoint.netdev) if peer_endpoint else None
    error = jumbo.get("error") or "no reply"
    if own is not None and own.mtu is not None and own.mtu < cluster.mtu:
        return CheckItem(
            id=cid,
            title=title,
            status="fail",
            evidence=f"{what}: {error}; {e.netdev} MTU is {own.mtu}",
            fix=f"{e.netdev} on {host} must carry MTU {cluster.mtu}: see its MTU check",
        )
    if peer_iface is not None and (not peer_iface.carrier or (peer_iface.mtu or 0) < cluster.mtu):
        why = "has no carrier" if not peer_iface.carrier else f"has MTU {peer_iface.mtu}"
        return CheckItem(
            id=cid,
            title=title,
            status="warn",
            evidence=f"{what}: {error}; the peer port {peer} {peer_iface.name} {why}",
            fix=f"fix {peer_iface.name} on {peer} (reported there)",
        )
    if rails.get((host, e.netdev), e.key) != e.key or (
        peer_endpoint and rails.get((peer, peer_endpoint.netdev), e.key) != e.key
    ):
        return CheckItem(id=cid, title=title, status="skip", evidence=f"{what}: {error}; explained by the cabling")
    switched = cluster.designs[host].fabric == "switched"
    ends = [(host, e.netdev)] + ([(peer, peer_endpoint.netdev)] if peer_endpoint else [])
    ports = [f"{cluster.switch_ports[n]} ({n[0]} {n[1]})" for n in ends if n in cluster.switch_ports]
    suspect = _common_jumbo_failure(cluster, e.key, rails)
    path = f"; switch ports on the path: {', '.join(ports)}" if ports else ""
    likely = (
        f"most likely {cluster.switch_ports[suspect]} ({suspect[0]} {suspect[1]}): it is on every failing "
        f"{e.label} jumbo path; "
        if suspect in cluster.switch_ports and suspect in ends
        else ""
    )
    return CheckItem(
        id=cid,
        title=title,
        status="fail",
        evidence=f"{what}: {error}{path}",
        fix=(
            f"{likely}raise the MTU of the {e.label} switch ports to at least {cluster.mtu + 216}"
            if switched
            else f"check the cable of {e.netdev} and that {peer} has {peer_ip} on its {e.label} port"
        ),
    )


def _common_jumbo_failure(cluster: Cluster, key: str, rails: dict[Node, str]) -> Node | None:
    """The one host port on every failing jumbo ping of a rail, when there is exactly one (a small switch port MTU
    fails both the pings from that host and the pings to it; a leaf-wide MTU fails them all and names none)."""
    failing: list[set[Node]] = []
    for host, ports in cluster.pings.items():
        for netdev, result in ports.items():
            jumbo = result.get("jumbo") if isinstance(result, dict) else None
            if not jumbo or jumbo.get("received") or rails.get((host, netdev), key) != key:
                continue
            peer = jumbo["peer"]
            peer_end = next((x for x in cluster.designs[peer].endpoints if x.key == key), None) if peer in \
                cluster.designs else None  # fmt: skip
            failing.append({(host, netdev)} | ({(peer, peer_end.netdev)} if peer_end else set()))
    if len(failing) < 2:
        return None
    common = set.intersection(*failing)
    return next(iter(common)) if len(common) == 1 else None
