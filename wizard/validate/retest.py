"""`bwtest --suspects`: test only the last run's suspects, each against known-good peers, and say which held.

A suspect port is tested with two hosts no suspect names, on its own leaves where there are such hosts (the flows
then cross nothing else that could be slow); a leaf through three of its hosts; a leaf's uplinks through every host
of its SU to hosts of two other SUs, so the flows spread over the spines as ECMP hashes them."""

from __future__ import annotations

from wizard.validate.fabric_map import FabricMap
from wizard.validate.fleet_model import Suspect
from wizard.validate.quick import Round
from wizard.validate.suspects import Flow

PEERS = 2  # known-good peers per suspect port: two that agree tell the port from its peer
LEAF_HOSTS = 3


def named_hosts(suspects: list[Suspect], fabric: FabricMap) -> set[str]:
    """Hosts a suspect names: none of them is a known-good peer."""
    names: set[str] = set()
    for s in suspects:
        if s.host:
            names.add(s.host)
        if s.kind == "pair":
            names.update(h for h in fabric.hosts if h in s.part.split())
        if s.kind == "leaf" and s.leaf:
            names.update(p.host for p in fabric.ports_on(s.leaf))
    return names


def _peers(host: str, good: list[str], fabric: FabricMap, count: int, same_su: bool = True) -> list[str]:
    su = fabric.group_of(host)
    near = [h for h in good if (fabric.group_of(h) == su) == same_su and h != host]
    return near[:count] if len(near) >= count or not same_su else (near + [h for h in good if h not in near])[:count]


def tests_for(s: Suspect, good: list[str], fabric: FabricMap) -> list[tuple[str, str]]:
    if s.kind in ("host_port", "host") and s.host:
        return [(s.host, p) for p in _peers(s.host, good, fabric, PEERS)]
    if s.kind == "pair":
        ends = [h for h in fabric.hosts if h in s.part.split()]
        return [(h, p) for h in ends for p in _peers(h, good, fabric, PEERS)]
    if s.kind == "leaf" and s.leaf:
        hosts = sorted({p.host for p in fabric.ports_on(s.leaf)})[:LEAF_HOSTS]
        return [(h, p) for h in hosts for p in _peers(h, good, fabric, 1)]
    if s.kind == "uplink" and s.leaf:
        su_hosts = sorted({p.host for p in fabric.ports_on(s.leaf)})
        others = [h for h in good if h not in su_hosts and fabric.group_of(h) != fabric.group_of(su_hosts[0])]
        partners = others[: 2 * len(su_hosts)]
        return [(h, partners[i]) for i, h in enumerate(su_hosts) if i < len(partners)] + [
            (h, partners[len(su_hosts) + i]) for i, h in enumerate(su_hosts) if len(su_hosts) + i < len(partners)
        ]
    return []


def pack(tests: list[tuple[str, str]], kind: str = "retest") -> list[Round]:
    """Tests into rounds where no host runs two at once, in the order given."""
    rounds: list[Round] = []
    busy: list[set[str]] = []
    for a, b in tests:
        for r, hosts in zip(rounds, busy, strict=True):
            if a not in hosts and b not in hosts:
                r.pairs.append((a, b))
                hosts.update((a, b))
                break
        else:
            rounds.append(Round(kind, "the suspects against known-good peers", [(a, b)]))
            busy.append({a, b})
    return rounds


def retest_rounds(fabric: FabricMap, suspects: list[Suspect]) -> list[Round]:
    named = named_hosts(suspects, fabric)
    good = [h for h in fabric.hosts if h not in named and fabric.rails(h)]
    tests: list[tuple[str, str]] = []
    for s in suspects:
        tests += [t for t in tests_for(s, good, fabric) if t not in tests]
    return pack(tests)


def _touches(s: Suspect, f: Flow) -> bool:
    if s.kind == "host_port":
        return (s.host, s.rail) in (f.a, f.b)
    if s.kind in ("host", "pair"):
        return s.host in (f.a[0], f.b[0]) or any(h in s.part.split() for h in (f.a[0], f.b[0]))
    return s.leaf in (f.leaf_a, f.leaf_b)


def _same(old: Suspect, new: Suspect) -> bool:
    if old.kind == "pair":
        return new.kind == "host_port" and new.host is not None and new.host in old.part.split()
    return (old.kind, old.host, old.rail, old.leaf) == (new.kind, new.host, new.rail, new.leaf)


def judge_retest(old: list[Suspect], found: list[Suspect], flows: list[Flow], fabric: FabricMap) -> list[Suspect]:
    """Each earlier suspect confirmed (the re-test names it again), cleared (its flows were fast) or left as it was
    (nothing could test it); suspects the re-test found anew follow."""
    out: list[Suspect] = []
    matched: set[int] = set()
    for s in old:
        mine = [f for f in flows if _touches(s, f)]
        again = [i for i, n in enumerate(found) if _same(s, n)]
        lines = [f"{f.a[0]} rail {f.a[1]} -> {f.b[0]} rail {f.b[1]}: {f.rate()} ({'pass' if f.ok else 'slow'})"
                 for f in mine[:6]]  # fmt: skip
        if again:
            matched.update(again)
            named = found[again[0]]
            out.append(named.model_copy(update={"status": "confirmed", "retest": lines}))
        elif mine:
            out.append(s.model_copy(update={"status": "cleared", "retest": lines}))
        else:
            out.append(s.model_copy(update={"retest": ["not tested: no known-good peer to test it with"]}))
    out += [n for i, n in enumerate(found) if i not in matched]
    return out
