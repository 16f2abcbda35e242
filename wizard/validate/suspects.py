"""From pair results to the part most likely at fault, with the evidence an operator can check.

Every test is a flow between two host ports (a rail of each); each port sits on a leaf (LLDP). A slow flow has
three places to be slow: either port (with its cable and leaf port) or the path between the leaves (a leaf's
uplinks, the spine). The inference keeps the fewest parts that explain every slow flow:

- a host port slow with every peer it was tested with (two peers or more, or one peer that is fast with others);
- a whole host when all its rails are such ports (PCIe width, NUMA placement, ACS: what all rails share);
- a leaf when most ports on it are such ports (what those ports share is the leaf);
- a leaf's uplinks when flows that cross the spine through it are slow but its hosts' ports are fast with peers on
  the same leaf: ECMP puts each flow on one uplink, so a bad uplink slows some flows and spares the rest;
- a pair, when neither end can be cleared yet (`bwtest --suspects` tests each end against known-good peers).
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass
from statistics import mean

from wizard.validate.fabric_map import FabricMap
from wizard.validate.fleet_model import Suspect
from wizard.validate.model import CounterDelta, RailResult

Port = tuple[str, int]  # (host, rail)
LEAF_SHARE = 0.75  # a leaf is the suspect when at least this share of its tested ports are bad (and 3 or more)
CABLE_COUNTERS = ("rx_symbol_err_phy", "rx_crc_errors_phy", "rx_pcs_symbol_err_phy")
EVERYTHING_FLOWS = 8  # this many tests or more and none passed: the cause is common to all, not one part
ORDER = {"everything": -1, "leaf": 0, "uplink": 1, "host": 2, "host_port": 3, "pair": 4}


@dataclass(frozen=True)
class Flow:
    """One test between two host ports, as the suspect inference sees it."""

    a: Port  # client
    b: Port  # server
    gbps: float | None
    expected: float | None
    ok: bool
    leaf_a: str | None = None
    leaf_b: str | None = None

    @property
    def cross(self) -> bool:
        """Through the spine: the two ports are on different leaves."""
        return self.leaf_a is not None and self.leaf_b is not None and self.leaf_a != self.leaf_b

    def other(self, port: Port) -> Port:
        return self.b if port == self.a else self.a

    def rate(self) -> str:
        if self.gbps is None:
            return "no result"
        return f"{self.gbps:.0f} of {self.expected:.0f} Gb/s" if self.expected else f"{self.gbps:.0f} Gb/s"


def flows_of(results: list[RailResult]) -> list[Flow]:
    """Flows from a run's rail results (pairs with all rails at once, and cross-rail runs)."""
    out = []
    for x in results:
        server_rail = x.peer_rail if x.mode == "cross" and x.peer_rail is not None else x.rail
        out.append(
            Flow(
                a=(x.client.host, x.rail),
                b=(x.server.host, server_rail),
                gbps=x.gbps,
                expected=x.expected_gbps,
                ok=x.status == "pass",
                leaf_a=x.client.leaf,
                leaf_b=x.server.leaf,
            )
        )
    return out


class Inference:
    """The flows of one run and what they say about each port."""

    def __init__(self, flows: list[Flow], fabric: FabricMap, counters: list[CounterDelta] | None = None) -> None:
        self.flows = flows
        self.fabric = fabric
        self.by_port: dict[Port, list[Flow]] = defaultdict(list)
        for f in flows:
            self.by_port[f.a].append(f)
            self.by_port[f.b].append(f)
        self.cable: dict[Port, str] = {}
        netdev_rail = {(p.host, p.netdev): p.rail for p in fabric.places.values()}
        for c in counters or []:
            rail = netdev_rail.get((c.host, c.netdev))
            moved = {k: v for k, v in c.deltas.items() if k in CABLE_COUNTERS and v > 0}
            if rail is not None and moved:
                self.cable[(c.host, rail)] = ", ".join(f"{k} +{v:,}" for k, v in sorted(moved.items()))

    def fast(self, port: Port) -> int:
        return sum(1 for f in self.by_port.get(port, []) if f.ok)

    def slow(self, port: Port) -> list[Flow]:
        return [f for f in self.by_port.get(port, []) if not f.ok]

    def bad_ports(self) -> tuple[set[Port], list[tuple[Port, Port]]]:
        """Ports slow with every peer, and pairs of ports where neither end can be told from the other yet."""
        bad: set[Port] = set()
        unsure: list[tuple[Port, Port]] = []
        for port in self.by_port:
            slow = self.slow(port)
            if not slow or self.fast(port):
                continue
            peers = {f.other(port) for f in slow}
            if len(peers) >= 2 or any(self.fast(p) for p in peers) or port in self.cable or self._trained_low(port):
                bad.add(port)
        for port in self.by_port:
            for f in self.slow(port):
                peer = f.other(port)
                pair = (port, peer)
                cleared = self.fast(port) or self.fast(peer) or {port, peer} & bad
                if port < peer and pair not in unsure and not cleared:
                    unsure.append(pair)
        return bad, unsure

    def _trained_low(self, port: Port) -> bool:
        place = self.fabric.place(*port)
        usual = self.fabric.majority_speed(port[1])
        return bool(place and place.speed_gbps and usual and place.speed_gbps < usual)

    def port_evidence(self, port: Port) -> list[str]:
        slow = self.slow(port)
        peers = ", ".join(f"{f.rate()} with {f.other(port)[0]} rail {f.other(port)[1]}" for f in slow[:3])
        more = f" (+{len(slow) - 3} more)" if len(slow) > 3 else ""
        lines = [f"slow with {len({f.other(port) for f in slow})} peer(s), fast with none: {peers}{more}"]
        place = self.fabric.place(*port)
        usual = self.fabric.majority_speed(port[1])
        if place and place.speed_gbps and usual and place.speed_gbps < usual:
            lines.insert(0, f"link trained at {place.speed_gbps:g} Gb/s; rail {port[1]} runs at {usual:g} elsewhere")
        if port in self.cable:
            lines.insert(0, f"error counters rose during the run ({self.cable[port]}): a bad cable or transceiver")
        peers_ok = [p for p in {f.other(port) for f in slow} if self.fast(p)]
        if peers_ok:
            lines.append(f"its peers are fast with others ({', '.join(f'{h} rail {r}' for h, r in peers_ok[:3])})")
        return lines


def infer(flows: list[Flow], fabric: FabricMap, counters: list[CounterDelta] | None = None) -> list[Suspect]:
    """The suspects of one run, most certain and widest first."""
    if len(flows) >= EVERYTHING_FLOWS and not any(f.ok for f in flows):
        hosts = {p[0] for f in flows for p in (f.a, f.b)}
        got = sum(1 for f in flows if f.gbps is not None)
        return [
            Suspect(
                kind="everything",
                part=f"all {len(flows)} tests on {len(hosts)} hosts",
                evidence=[
                    f"none passed ({got} gave a rate, {len(flows) - got} none): what every test shares is at "
                    "fault, not one host, leaf or uplink",
                    "look at the run's causes and lint: the rails' addresses and GIDs (stages network, roce), "
                    "perftest itself, the switches' configuration",
                ],  # fmt: skip
                score=1.0,
            )
        ]
    inf = Inference(flows, fabric, counters)
    bad, unsure = inf.bad_ports()
    suspects: list[Suspect] = []
    bad = _hosts(inf, bad, suspects)
    bad = _leaves(inf, bad, suspects)
    for port in sorted(bad):
        suspects.append(_port_suspect(inf, port))
    explained = {f for f in flows if not f.ok and (f.a in bad or f.b in bad or _in_suspects(f, suspects))}
    unsure_ports = {p for pair in unsure for p in pair}
    rest = [f for f in flows if not f.ok and f not in explained and f.a not in unsure_ports]
    suspects += _uplinks(inf, [f for f in rest if f.cross])
    for a, b in unsure:
        flow = next(f for f in inf.slow(a) if f.other(a) == b)
        suspects.append(
            Suspect(
                kind="pair",
                part=f"{fabric.describe(*a)} or {fabric.describe(*b)}",
                host=a[0],
                rail=a[1],
                evidence=[
                    f"{flow.rate()} between them, and neither was tested with a third port yet",
                    "`bwtest --suspects` tests each against known-good peers",
                ],  # fmt: skip
                score=0.5,
            )
        )
    # Slow on one leaf while both ports are fast with other peers: one suspect per host pair, whatever the number of
    # rails (a connection cut during the pair's test fails all its rails at once; eight lines said it eight times).
    by_pair: dict[tuple[str, str], list[Flow]] = defaultdict(list)
    for f in rest:
        if not f.cross and f.a not in unsure_ports:
            by_pair[(f.a[0], f.b[0])].append(f)
    for (a, b), mine in by_pair.items():
        rails = sorted({f.a[1] for f in mine})
        where = f"rail {rails[0]}" if len(rails) == 1 else f"rails {', '.join(map(str, rails))}"
        first = mine[0]
        suspects.append(
            Suspect(
                kind="pair",
                part=f"{fabric.describe(*first.a)} to {fabric.describe(*first.b)}"
                if len(mine) == 1
                else f"{a} to {b}, {where}",
                host=a,
                rail=first.a[1] if len(mine) == 1 else None,
                evidence=[
                    f"{first.rate()} on {where}, while both hosts' ports are fast with other peers: the test "
                    "between them failed (a cut connection, a stuck process) or the link is intermittent; "
                    "`bwtest --suspects` runs it again"
                ],  # fmt: skip
                score=0.3,
            )
        )
    return sorted(suspects, key=lambda s: (ORDER[s.kind], -s.score, s.part))


def _in_suspects(f: Flow, suspects: list[Suspect]) -> bool:
    for s in suspects:
        if s.kind == "host" and (f.a[0] == s.host or f.b[0] == s.host):
            return True
        if s.kind == "leaf" and s.leaf in (f.leaf_a, f.leaf_b):
            return True
    return False


def _port_suspect(inf: Inference, port: Port) -> Suspect:
    place = inf.fabric.place(*port)
    slow = inf.slow(port)
    return Suspect(
        kind="host_port",
        part=inf.fabric.describe(*port),
        host=port[0],
        rail=port[1],
        netdev=place.netdev if place else None,
        leaf=place.leaf if place else None,
        leaf_port=place.leaf_port if place else None,
        evidence=inf.port_evidence(port),
        score=1.0 if len({f.other(port) for f in slow}) >= 2 else 0.8,
    )


def _hosts(inf: Inference, bad: set[Port], out: list[Suspect]) -> set[Port]:
    """A host whose every tested rail is bad: one suspect for the host, its ports leave the list."""
    by_host: dict[str, set[Port]] = defaultdict(set)
    for port in bad:
        by_host[port[0]].add(port)
    for host, ports in by_host.items():
        tested = {p for p in inf.by_port if p[0] == host}
        if len(ports) >= 2 and ports == tested:
            rates = [f.gbps / f.expected for p in ports for f in inf.slow(p) if f.gbps and f.expected]
            share = f", at {mean(rates):.0%} of line rate on average" if rates else ""
            out.append(
                Suspect(
                    kind="host",
                    part=f"{host} (all {len(ports)} rails)",
                    host=host,
                    evidence=[
                        f"every rail is slow with every peer{share}",
                        "what all rails share: PCIe width or ACS on the switches, NUMA placement, CPU power; "
                        "`roce-wizard doctor` reads them",
                    ],  # fmt: skip
                    score=1.0,
                )
            )
            bad = bad - ports
    return bad


def _leaves(inf: Inference, bad: set[Port], out: list[Suspect]) -> set[Port]:
    for leaf in inf.fabric.leaves():
        on_leaf = {(p.host, p.rail) for p in inf.fabric.ports_on(leaf)}
        tested = {p for p in on_leaf if p in inf.by_port}
        hit = bad & tested
        if len(hit) >= 3 and len(hit) >= LEAF_SHARE * len(tested):
            out.append(
                Suspect(
                    kind="leaf",
                    part=leaf,
                    leaf=leaf,
                    evidence=[
                        f"{len(hit)} of its {len(tested)} tested host ports are slow with every peer",
                        f"hosts: {', '.join(sorted({h for h, _ in hit})[:6])}",
                    ],  # fmt: skip
                    score=len(hit) / len(tested),
                )
            )
            bad = bad - hit
    return bad


def _uplinks(inf: Inference, flows: list[Flow]) -> list[Suspect]:
    """Slow flows through the spine whose ports are fast elsewhere: the leaf they share most, again and again."""
    out: list[Suspect] = []
    left = list(flows)
    while left:
        count: dict[str, int] = defaultdict(int)
        for f in left:
            count[f.leaf_a or "?"] += 1
            count[f.leaf_b or "?"] += 1
        top = max(count.values())
        first = min(leaf for leaf, n in count.items() if n == top)
        mine = [f for f in left if first in (f.leaf_a, f.leaf_b)]
        # Only a leaf at the other end of every one of those flows cannot be told from it. Two leaves that merely
        # had as many slow flows each (two slow uplinks in units that never met) are two suspects.
        others = {f.leaf_b if f.leaf_a == first else f.leaf_a for f in mine} - {first}
        leaves = [first, *sorted(leaf for leaf in others if all(leaf in (f.leaf_a, f.leaf_b) for f in mine))]
        through = [f for f in inf.flows if f.cross and (f.leaf_a in leaves or f.leaf_b in leaves)]
        local = [f for f in inf.flows if not f.cross and f.leaf_a in leaves]
        rates = [f.gbps for f in mine if f.gbps is not None]
        got = f" at {mean(rates):.0f} Gb/s on average" if rates else ""
        evidence = [
            f"{len(mine)} of {len(through)} flows through the spine from {' / '.join(leaves)} slow{got}, "
            f"with {len({f.a for f in mine} | {f.b for f in mine})} different host ports",
            f"its {len(local)} same-leaf flows: {sum(1 for f in local if f.ok)} fast; the slow flows' host ports are "
            "fast with other peers: one of its spine uplinks, where ECMP hashes those flows",
        ]
        if len(leaves) > 1:
            evidence.append("two leaves share every slow flow: a second partner (the next cross-leaf round, or "
                            "`bwtest --suspects`) tells which")  # fmt: skip
        out.append(
            Suspect(
                kind="uplink",
                part=" or ".join(f"{leaf} uplinks" for leaf in leaves),
                leaf=leaves[0],
                evidence=evidence,
                score=len(mine) / max(1, len(through)) if len(leaves) == 1 else 0.5,
            )
        )
        left = [f for f in left if f not in mine]
    return out
