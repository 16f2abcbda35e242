"""All-pairs scheduling: rounds of disjoint host pairs (circle method), so no host runs two tests at once."""

from __future__ import annotations


def rounds(hosts: list[str]) -> list[list[tuple[str, str]]]:
    """Every unordered pair exactly once, grouped in rounds where each host appears at most once.

    N hosts need N-1 rounds (N even) or N rounds (N odd, one host rests per round).
    """
    names = list(hosts)
    if len(names) < 2:
        return []
    if len(names) % 2:
        names.append("")  # the resting slot
    n = len(names)
    out: list[list[tuple[str, str]]] = []
    for _round in range(n - 1):
        pairs = []
        for i in range(n // 2):
            a, b = names[i], names[n - 1 - i]
            if a and b:
                pairs.append((a, b) if hosts.index(a) < hosts.index(b) else (b, a))
        out.append(sorted(pairs, key=lambda p: hosts.index(p[0])))
        names = [names[0], names[-1], *names[1:-1]]  # rotate all but the first
    return out


def ring(hosts: list[str]) -> list[tuple[str, str]]:
    """Neighbour pairs (h0,h1), (h1,h2), ...: every host's every rail gets a per-rail sweep and latency test."""
    return [(hosts[i], hosts[i + 1]) for i in range(len(hosts) - 1)]


def ring_rounds(hosts: list[str]) -> list[list[tuple[str, str]]]:
    """Each host with its neighbours on the ring (h0-h1, h1-h2, ..., the last with h0), in at most three rounds
    of disjoint pairs: every host's every rail is measured twice (once with two hosts), whatever N is. The
    short check `verify` runs; all pairs (rounds) is what bwtest runs."""
    n = len(hosts)
    if n < 2:
        return []
    if n == 2:
        return [[(hosts[0], hosts[1])]]
    pairs = [(hosts[min(i, (i + 1) % n)], hosts[max(i, (i + 1) % n)]) for i in range(n)]  # in answers order
    out = [pairs[0 : n - 1 : 2], pairs[1 : n - 1 : 2]]
    if n % 2 == 0:
        out[1].append(pairs[-1])  # the wrap-around pair shares no host with the odd round's pairs
    else:
        out.append([pairs[-1]])
    return [sorted(r, key=lambda p: hosts.index(p[0])) for r in out if r]


# Per test, on top of its timed duration: connecting SSH sessions, the server's start delay, QP setup and the
# teardown of both perftest processes (measured on the reference pair: about 1.5 s).
SETUP_S = 1.5


def estimate_s(hosts: int, seconds: float, setup_s: float = SETUP_S) -> float:
    """Wall time of the all-pairs phase: one round of disjoint pairs at a time, every rail of a pair at once, so it
    grows with the number of rounds (N-1, or N when N is odd), not with the number of pairs (N(N-1)/2)."""
    if hosts < 2:
        return 0.0
    n_rounds = hosts - 1 if hosts % 2 == 0 else hosts
    return n_rounds * (seconds + setup_s)
