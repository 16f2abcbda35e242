"""Which leaf each host's rail port should reach, from the LLDP neighbours of the whole cluster.

A rail-optimised fabric of one scalable unit has one leaf per rail: rail i of every host belongs on the leaf most
hosts' rail i reach. A larger one repeats that per scalable unit (NVIDIA DGX SuperPOD: 32 hosts per SU, each SU with
one leaf per rail), so a rail has several leaves and "most hosts" no longer names the right one. Then each leaf
serves the rail it is seen on most, and rail i of a host belongs on the rail-i leaf its SU peers reach: the hosts
that share one of its correctly cabled leaves on another rail, each such rail voting with its peers (so one
miscabled port among eight cannot pull a host into another SU). The leaf names are never parsed.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from steps.discovery.facts import NicPort
    from wizard.parsers.lldp import LldpNeighbor

PortKey = tuple[str, int]  # (host, rail index)


def majority(counts: Counter[str]) -> str | None:
    """The one most common value; None on a tie."""
    ranked = counts.most_common(2)
    return ranked[0][0] if len(ranked) == 1 or ranked[0][1] > ranked[1][1] else None


def expected_leaves(
    leaf_at: dict[PortKey, str], leaves: dict[int, Counter[str]]
) -> tuple[dict[PortKey, str | None], dict[str, int]]:
    """(the leaf each (host, rail) should reach, None when the cabling cannot tell; the rail each leaf serves).

    ``leaf_at`` is the leaf every port with an LLDP neighbour reaches; ``leaves`` counts them per rail."""
    serving = _serving_rail(leaves)
    if all(n <= 1 for n in Counter(serving.values()).values()):  # one leaf per rail: its majority leaf
        best = {i: majority(c) for i, c in leaves.items()}
        return {k: best.get(k[1]) for k in leaf_at}, {leaf: i for i, leaf in best.items() if leaf}
    # what the hosts on each correctly used leaf reach on every other rail: (rail j, leaf) -> rail i -> leaf counts
    seen_from: dict[tuple[int, str], dict[int, Counter[str]]] = {}
    for (host, j), leaf in leaf_at.items():
        if serving.get(leaf) != j:
            continue
        table = seen_from.setdefault((j, leaf), {})
        for i in leaves:
            other = leaf_at.get((host, i))
            if other is not None and serving.get(other) == i:
                table.setdefault(i, Counter())[other] += 1
    rails_of: dict[str, list[int]] = {}
    for host, rail in leaf_at:
        rails_of.setdefault(host, []).append(rail)
    expected: dict[PortKey, str | None] = {}
    for host, rails in rails_of.items():
        for rail in rails:
            # every other rail's leaf of this host names its SU peers; they vote for their own rail-i leaf
            own = leaf_at[(host, rail)]
            votes: Counter[str] = Counter()
            for j in rails:
                if j != rail and serving.get(leaf_at[(host, j)]) == j:
                    votes.update(seen_from[(j, leaf_at[(host, j)])].get(rail, Counter()))
                    if serving.get(own) == rail:
                        votes[own] -= 1  # the host's own port is no peer's vote
            votes = +votes
            found = majority(votes) if votes else None
            if found is None and serving.get(own) == rail:
                found = own  # no peer to compare with (a lone host in its SU): its own rail-i leaf
            expected[(host, rail)] = found
    return expected, serving


def _serving_rail(leaves: dict[int, Counter[str]]) -> dict[str, int]:
    """The rail each leaf is seen on most (a leaf seen equally on two rails serves neither)."""
    seen: dict[str, Counter[int]] = {}
    for rail, counts in leaves.items():
        for leaf, n in counts.items():
            seen.setdefault(leaf, Counter())[rail] += n
    out = {}
    for leaf, rails in seen.items():
        ranked = rails.most_common(2)
        if len(ranked) == 1 or ranked[0][1] > ranked[1][1]:
            out[leaf] = ranked[0][0]
    return out


def leaf_at(rails: dict[str, list[tuple[int, NicPort]]], leaf_of: Callable[[LldpNeighbor], str]) -> dict[PortKey, str]:
    """(host, rail) -> the leaf its port's LLDP neighbour names, for every port that has one."""
    return {(h, i): leaf_of(p.lldp) for h, ports in rails.items() for i, p in ports if p.lldp is not None}
