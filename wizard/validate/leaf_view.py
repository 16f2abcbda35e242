"""A run's flows per leaf, slowest leaf first, and per host port of a leaf: what the HTML report's per-leaf rows
and the bandwidth page's Fleet tab both show (a fleet is read leaf by leaf, never as a host x host grid)."""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass
from statistics import median

from wizard.validate.suspects import Flow, Port

NO_LLDP = "(no LLDP)"


@dataclass(frozen=True)
class LeafRow:
    leaf: str
    flows: list[Flow]

    @property
    def slow(self) -> int:
        return sum(1 for f in self.flows if not f.ok)

    @property
    def median_gbps(self) -> float | None:
        rates = [f.gbps for f in self.flows if f.gbps is not None]
        return median(rates) if rates else None

    def ports(self) -> list[tuple[Port, list[Flow]]]:
        """The leaf's host ports with their flows, slow ones first, then by host and rail."""
        mine: dict[Port, list[Flow]] = defaultdict(list)
        for f in self.flows:
            for port, side in ((f.a, f.leaf_a), (f.b, f.leaf_b)):
                if (side or NO_LLDP) == self.leaf:
                    mine[port].append(f)
        return sorted(mine.items(), key=lambda kv: (all(f.ok for f in kv[1]), kv[0]))


def slow_with(port: Port, flows: list[Flow], count: int) -> str:
    """`gpu-0007 240 of 400 Gb/s, ...` for the port's first slow flows; "" when none was slow."""
    return ", ".join([f"{f.other(port)[0]} {f.rate()}" for f in flows if not f.ok][:count])


def leaf_rows(flows: list[Flow]) -> list[LeafRow]:
    """Every leaf a flow touched (either end), the one with the most slow flows first."""
    by_leaf: dict[str, list[Flow]] = defaultdict(list)
    for f in flows:
        for leaf in {f.leaf_a, f.leaf_b}:
            by_leaf[leaf or NO_LLDP].append(f)
    rows = [LeafRow(leaf, mine) for leaf, mine in by_leaf.items()]
    return sorted(rows, key=lambda r: (-r.slow, r.leaf))
