"""A synthetic validation of 16 hosts x 8 rails of 400 Gb/s: the report, and the events a run emits to build it.

Two faults are in it on purpose: gpu-003's rail 2 is slow (60 % of line rate in every pair: all rails together
still look fine, the rail 2 map does not) and gpu-009 <-> gpu-010 got no result on rail 5. Incast round on rail 5
drops (its leaf port has no PFC); the cross-rail grid of gpu-001 -> gpu-002 has one slow path (rail 6 -> rail 1).
"""

from __future__ import annotations

from typing import Any

from wizard.validate.model import (
    Aggregate,
    IncastFlow,
    IncastRound,
    LatencyResult,
    PairCell,
    RailEnd,
    RailResult,
    Report,
)
from wizard.validate.schedule import ring, rounds

HOSTS = [f"gpu-{k:03d}" for k in range(1, 17)]
NETDEVS = ["enp24s0np0", "enp64s0np0", "enp79s0np0", "enp94s0np0", "enp154s0np0", "enp192s0np0", "enp206s0np0",
           "enp220s0np0"]  # fmt: skip
LINE = 400.0
RAILS = 8
SLOW = ("gpu-003", 2)  # host, rail at 60 %
DEAD = (("gpu-009", "gpu-010"), 5)  # pair, rail without a result


def end(host: str, rail: int) -> RailEnd:
    k = HOSTS.index(host) + 1
    return RailEnd(host=host, netdev=NETDEVS[rail], device=f"mlx5_{rail}", gid_index=3, ipv4=f"10.10.{rail}.{k}",
                   network=f"10.10.{rail}.0/24", speed_gbps=LINE)  # fmt: skip


def rate(a: str, b: str, rail: int) -> float | None:
    """Gb/s of one rail of a pair: 388..396 normally, 240 on the slow rail, None on the dead one."""
    if (a, b) == DEAD[0] and rail == DEAD[1]:
        return None
    if SLOW[0] in (a, b) and rail == SLOW[1]:
        return 240.0
    return 388.0 + (HOSTS.index(a) * 7 + HOSTS.index(b) * 3 + rail) % 9


def sweep(top: float) -> list[tuple[int, float]]:
    return [(2**i, round(min(top, 2**i * 0.04), 2)) for i in range(1, 24)]


def judged(result: RailResult) -> RailResult:
    result.expected_gbps = LINE
    result.status = "pass" if result.gbps is not None and result.gbps >= 0.9 * LINE else "fail"
    return result


def alone(a: str, b: str, rail: int) -> RailResult:
    gbps = rate(a, b, rail)
    x = RailResult(rail=rail, server=end(a, rail), client=end(b, rail), gbps=gbps, sweep=sweep(gbps or 0), mtu=4096)
    return judged(x)


def cell(a: str, b: str, number: int) -> tuple[PairCell, list[RailResult]]:
    runs = [judged(RailResult(rail=i, server=end(a, i), client=end(b, i), mode="together", gbps=rate(a, b, i)))
            for i in range(RAILS)]  # fmt: skip
    total = sum(x.gbps or 0 for x in runs)
    ok = total >= 0.9 * LINE * RAILS and all(x.status == "pass" for x in runs)
    slow = [x for x in runs if x.status != "pass"]
    c = PairCell(a=a, b=b, round=number, gbps=total, expected_gbps=LINE * RAILS, rails=[x.gbps for x in runs],
                 status="pass" if ok else "fail", hint=slow[0].label if slow else None)  # fmt: skip
    return c, runs


def incast(rail: int) -> IncastRound:
    receiver = HOSTS[rail]
    senders = [h for h in HOSTS if h != receiver]
    lossy = rail == 5
    flows = [IncastFlow(sender=end(h, rail), switch_port=f"leaf-r{rail} swp{HOSTS.index(h) + 1}", gbps=LINE / 15,
                        deltas={} if lossy else {"rx_prio3_pause": 1200 + HOSTS.index(h)})
             for h in senders]  # fmt: skip
    return IncastRound(
        rail=rail, round=0, receiver=end(receiver, rail), receiver_switch_port=f"leaf-r{rail} swp{rail + 1}",
        senders=flows, line_gbps=LINE, total_gbps=250.0 if lossy else 388.0, pauses=0 if lossy else 18000,
        drops=5400 if lossy else 0, cnps=0 if lossy else 700, status="fail" if lossy else "pass",
        cause=f"{receiver} {NETDEVS[rail]} on leaf-r{rail} swp{rail + 1}: drops and no pauses: the switch port does "
        "not pause priority 3 (PFC off)" if lossy else None,
        fix=f"enable PFC priority 3 on leaf-r{rail} swp{rail + 1} (roce-wizard switch-config)" if lossy else None,
    )  # fmt: skip


def cross(i: int, j: int) -> RailResult:
    gbps = 250.0 if (i, j) == (6, 1) else 380.0 + (i + j) % 7
    x = RailResult(rail=i, peer_rail=j, server=end("gpu-001", j), client=end("gpu-002", i), mode="cross", gbps=gbps)
    return judged(x)


def build() -> tuple[Report, list[tuple[str, dict[str, Any]]]]:
    """The report and, in the order a run emits them, the events that carry it."""
    r = Report(simulated=True, cluster="rails-16", hosts=list(HOSTS), started="2026-11-22T16:00:00+00:00", tclass=106)
    ev: list[tuple[str, dict[str, Any]]] = [("phase", {"name": "rails", "text": "one rail at a time"})]
    for a, b in ring(HOSTS):
        for i in range(RAILS):
            x = alone(a, b, i)
            r.rails.append(x)
            ev.append(("rail_start", {"rail": i, "mode": "alone", "pair": (a, b), "label": x.label}))
            ev += [("row", {"rail": i, "mode": "alone", "pair": (a, b), "size": s, "gbps": g}) for s, g in x.sweep]
            ev.append(("rail", {"result": x}))
    schedule = rounds(HOSTS)
    ev.append(("phase", {"name": "together", "text": "all rails at once"}))
    ev.append(("estimate", {"phase": "together", "rounds": len(schedule), "pairs": 120, "seconds": 60.0}))
    for number, group in enumerate(schedule):
        for a, b in group:
            c, runs = cell(a, b, number)
            r.together += runs
            r.matrix.append(c)
            r.aggregate.append(Aggregate(hosts=(a, b), gbps=c.gbps or 0, expected_gbps=LINE * RAILS, status=c.status))
            ev += [("rail", {"result": x}) for x in runs]
            ev.append(("cell", {"cell": c}))
    ev.append(("phase", {"name": "incast", "text": "incast: 15 senders into one port per rail"}))
    for i in range(RAILS):
        r.incast.append(incast(i))
        ev.append(("incast", {"round": r.incast[-1]}))
    ev.append(("phase", {"name": "cross", "text": "rail x rail through the spine"}))
    for i in range(RAILS):
        for j in (j for j in range(RAILS) if j != i):  # as wizard/validate/cross_rail.py: i == j is no cross path
            r.cross_rail.append(cross(i, j))
            ev.append(("rail", {"result": r.cross_rail[-1]}))
    lat = LatencyResult(rail=0, server=end("gpu-001", 0), client=end("gpu-002", 0), typical_us=2.1, status="pass")
    r.latency.append(lat)
    ev.append(("latency", {"result": lat}))
    r.verdict = "fail"
    r.causes = [r.incast[5].cause or "", "gpu-003 enp79s0np0: rail 2 at 60 % of line rate"]
    r.finished = "2026-11-22T16:05:00+00:00"
    ev.append(("done", {"report": r}))
    return r, ev
