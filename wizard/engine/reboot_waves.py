"""Which hosts a rolling reboot takes down together: waves of at most N hosts that keep the service up.

A rolling reboot must never take more than ``max_unavailable`` hosts at once (the operator's number, as in a
Kubernetes rolling update or Ansible's ``serial``). With an inference service on the hosts, two more rules keep its
entry point answering while the hosts go round:

- one serving group at a time: the nodes of a group (one replica, or one tensor/pipeline-parallel group spanning
  nodes) are down together anyway when any of them reboots, so they share a wave when N allows, and no wave holds
  two groups, so the entry point always has the other replicas to send requests to;
- the entry host (nginx in front of the replicas) goes in the last wave: its reboot is the one outage nobody can
  route around, and by then every other host has proven it comes back.

Pure: the caller passes the groups it learned from the inference layout (steps/inference/layout.py).
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Serving:
    """The inference service as a rolling reboot must respect it: its groups of hosts and its entry host."""

    groups: list[list[str]]
    entry: str | None = None


def plan_waves(hosts: list[str], max_unavailable: int, serving: Serving | None = None) -> list[list[str]]:
    """``hosts`` in waves, in their order (the answers' order: the operator's), entry host last."""
    if max_unavailable < 1:
        raise ValueError("max_unavailable must be at least 1")
    groups = [[h for h in g if h in hosts] for g in (serving.groups if serving else [])]
    groups = [g for g in groups if g]
    group_of = {h: i for i, g in enumerate(groups) for h in g}
    entry = serving.entry if serving and serving.entry in hosts else None

    # Units to place: a serving group's hosts stay together (split only when larger than N), others one by one.
    units: list[list[str]] = []
    placed: set[int] = set()
    for host in hosts:
        if host == entry:
            continue
        gi = group_of.get(host)
        if gi is None:
            units.append([host])
        elif gi not in placed:
            placed.add(gi)
            members = [h for h in groups[gi] if h != entry]
            units += [members[i : i + max_unavailable] for i in range(0, len(members), max_unavailable)]

    waves: list[list[str]] = []
    serving_in: list[bool] = []
    for unit in units:
        is_serving = unit[0] in group_of
        for i, wave in enumerate(waves):
            if len(wave) + len(unit) <= max_unavailable and not (is_serving and serving_in[i]):
                wave += unit
                serving_in[i] = serving_in[i] or is_serving
                break
        else:
            waves.append(list(unit))
            serving_in.append(is_serving)
    if entry is not None:
        waves.append([entry])
    return waves
