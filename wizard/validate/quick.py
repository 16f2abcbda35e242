"""`bwtest --quick`: every host's every rail tested against a neighbour on its own leaves and against a host on
other leaves (through the spine), plus a cross-rail canary per SU pair, in rounds of disjoint tests. The number of
rounds does not grow with the hosts (at most seven, whatever N is), so neither does the fabric time.

Rounds come most informative first, so a budget that stops the run early keeps what tells the most: the first
same-leaf round tests every host port once; the first cross-leaf round sends every host through the spine once;
the second same-leaf round gives every port a second peer, which tells a bad port (slow with both) from a bad peer;
the second cross-leaf round gives every SU a second partner SU, which tells a bad leaf uplink from the partner's.
(The ordered-by-value idea is NVIDIA k8s-launch-kit's "quick" set and time budget; the per-leaf split follows
ClusterKit's rail-by-rail matrix.)"""

from __future__ import annotations

from dataclasses import dataclass, field

from wizard.validate.fabric_map import FabricMap
from wizard.validate.schedule import SETUP_S, ring_rounds, rounds

CrossTest = tuple[str, str]  # (client host, server host): rail i of the client to rail i+1 of the server, every i


@dataclass
class Round:
    """Tests that run at once: no host in two of them."""

    kind: str  # same-leaf, cross-leaf, cross-rail, all-pairs, retest
    why: str
    pairs: list[tuple[str, str]] = field(default_factory=list)  # all rails of both hosts at once, rail i to rail i
    cross: list[CrossTest] = field(default_factory=list)

    @property
    def size(self) -> int:
        return len(self.pairs) + len(self.cross)

    def seconds(self, test_s: float) -> float:
        """Its fabric time: every test of the round runs at once, each with its setup."""
        return test_s + SETUP_S if self.size else 0.0


def _merge(per_group: list[list[list[tuple[str, str]]]], index: int) -> list[tuple[str, str]]:
    return [pair for rounds_of in per_group if index < len(rounds_of) for pair in rounds_of[index]]


def _between(groups: list[list[str]], unit_pairs: list[tuple[int, int]], shift: int) -> list[tuple[str, str]]:
    """Host k of unit a with host k+shift of unit b, for each pair of units (a, b) of one round."""
    pairs: list[tuple[str, str]] = []
    for a, b in unit_pairs:
        other = groups[b][shift % len(groups[b]) :] + groups[b][: shift % len(groups[b])]
        pairs.extend(zip(groups[a], other, strict=False))
    return pairs


def _unit_rounds(count: int) -> list[list[tuple[int, int]]]:
    """Units paired with their ring neighbours (at most three rounds): every unit meets two partner units, which is
    what tells a slow uplink from its partner's. Two units meet twice, the second time with other hosts."""
    if count == 2:
        return [[(0, 1)], [(0, 1)]]
    return ring_rounds(list(range(count)))  # type: ignore[arg-type]


def quick_rounds(fabric: FabricMap) -> list[Round]:
    groups = fabric.groups()
    rings = [ring_rounds(g) for g in groups if len(g) >= 2]
    canaries = _canaries(groups) if max((fabric.rails(h) for h in fabric.hosts), default=0) >= 2 else []
    units = _unit_rounds(len(groups))
    cross = [_between(groups, unit_pairs, shift) for shift, unit_pairs in enumerate(units)]
    cross += [[]] * (3 - len(cross))
    out = [
        Round("same-leaf", "every host port once, with a neighbour on its own leaves", _merge(rings, 0)),
        Round("cross-leaf", "every host through the spine, with a host of another SU", cross[0]),
        Round("same-leaf", "a second neighbour: a port slow with both is the port, not its peer", _merge(rings, 1)),
        Round("cross-rail", "rail i to rail i+1 through the spine, a canary per SU", cross=canaries),
        Round("cross-leaf", "a second partner SU: a slow uplink shows on one leaf only", cross[1]),
        Round("cross-leaf", "the last partner SU of an odd number of SUs", cross[2]),
        Round("same-leaf", "the last neighbour of an odd SU", _merge(rings, 2)),
    ]
    return [r for r in out if r.size]


def _canaries(groups: list[list[str]]) -> list[CrossTest]:
    """One cross-rail test per SU pair (first hosts), or inside the only SU; hosts disjoint."""
    if len(groups) == 1:
        return [(groups[0][0], groups[0][1])] if len(groups[0]) >= 2 else []
    pairs = [(groups[g][0], groups[g + 1][0]) for g in range(0, len(groups) - 1, 2)]
    if len(groups) % 2 and len(groups[0]) >= 2:
        pairs.append((groups[-1][0], groups[0][1]))
    return pairs


def all_pair_rounds(hosts: list[str]) -> list[Round]:
    """The full matrix: N-1 rounds (N when N is odd)."""
    return [Round("all-pairs", f"all pairs, round {i + 1}", group) for i, group in enumerate(rounds(hosts))]


def estimate_s(schedule: list[Round], test_s: float) -> float:
    return sum(r.seconds(test_s) for r in schedule)
