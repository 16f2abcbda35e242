"""Run a fleet schedule (quick, all pairs under a budget, or a re-test of suspects) and conclude it: coverage,
suspects with their evidence, thresholds.

The budget counts fabric time: on real hosts the wall time each round took; on a simulated lab the round's own
test time (its -D seconds and the setup), because the lab's wall time is this machine's SSH work for a thousand
hosts, not time the fabric was busy."""

from __future__ import annotations

import asyncio
import gc
import time
from collections.abc import Awaitable
from typing import TYPE_CHECKING

from wizard.validate.fabric_map import FabricMap
from wizard.validate.fleet_model import Budget, Coverage, FleetSummary, RoundRecord, Thresholds
from wizard.validate.quick import Round, all_pair_rounds, quick_rounds
from wizard.validate.retest import judge_retest, retest_rounds
from wizard.validate.suspects import Flow, flows_of, infer

if TYPE_CHECKING:
    from wizard.validate.run import Validation


class FabricClock:
    """Fabric seconds used so far."""

    def __init__(self, simulated: bool) -> None:
        self.simulated = simulated
        self.used = 0.0

    async def charge(self, estimate_s: float, work: Awaitable[None]) -> None:
        started = time.monotonic()
        await work
        self.used += estimate_s if self.simulated else time.monotonic() - started


def schedule_for(v: Validation, fabric: FabricMap) -> tuple[str, list[Round]]:
    o = v.options
    if o.retest is not None:
        return "suspects", retest_rounds(fabric, o.retest)
    if o.quick:
        return "quick", quick_rounds(fabric)
    return "all-pairs", all_pair_rounds([h for h in v.hosts if fabric.rails(h)])


async def run_fleet(v: Validation, fabric: FabricMap | None = None) -> None:
    """Run the schedule round by round until it ends or the next round would not fit in the budget."""
    fabric = fabric or FabricMap.from_facts(v.hosts, v.facts)
    for rail in range(max((fabric.rails(h) for h in v.hosts), default=0)):
        usual = fabric.majority_speed(rail)
        if usual:
            v.rail_floor[rail] = usual
    mode, schedule = schedule_for(v, fabric)
    seconds = v.options.together_s
    budget = Budget(mode=mode, budget_s=v.options.budget_s)  # type: ignore[arg-type]
    budget.rounds = [RoundRecord(kind=r.kind, why=r.why, pairs=r.size, seconds=r.seconds(seconds)) for r in schedule]
    v.report.fleet = FleetSummary(budget=budget)
    total = sum(r.seconds for r in budget.rounds)
    limit = f", budget {budget.budget_s:.0f} s" if budget.budget_s is not None else ""
    v.emit("plan", {"tests": {"together": sum(r.size for r in schedule)}, "seconds": {"together": total}})
    v.emit("phase", {"name": "together", "text": f"{mode}: {len(schedule)} rounds, about {total:.0f} s{limit}"})
    clock = FabricClock(v.report.simulated)
    for number, (r, record) in enumerate(zip(schedule, budget.rounds, strict=True)):
        if budget.budget_s is not None and clock.used + record.seconds > budget.budget_s:
            budget.stopped = (
                f"budget: {clock.used:g} of {budget.budget_s:g} s used, round {number + 1} ({r.kind}, "
                f"{record.seconds:g} s) would not fit; {len(schedule) - number} of {len(schedule)} rounds not run"
            )
            v.emit("phase", {"name": "budget", "text": budget.stopped})
            break
        v.emit("phase", {"name": "round", "text": f"round {number + 1}/{len(schedule)}, {r.kind}: {r.why} "
                         f"({r.size} tests, about {record.seconds:g} s)"})  # fmt: skip
        await clock.charge(record.seconds, _round(v, r, number))
        record.ran = True
        budget.used_s = round(clock.used, 1)
        # A round's thousands of finished SSH commands leave reference cycles (channels, their tasks and futures)
        # that the collector's own schedule frees late, behind a heap of every host's facts: freed now, the next
        # round reuses their memory instead of adding to it.
        gc.collect()


async def _round(v: Validation, r: Round, number: int) -> None:
    jobs = [v._together(a, b, number) for a, b in r.pairs]
    cross = [_cross(v, client, server) for client, server in r.cross]
    cells = await asyncio.gather(*jobs, *cross)
    for cell in cells[: len(jobs)]:
        v.report.matrix.append(cell)  # type: ignore[arg-type]
        v.emit("cell", {"cell": cell})


async def _cross(v: Validation, client: str, server: str) -> None:
    """Rail i of the client to rail i+1 of the server, every rail at once: each flow crosses the spine."""
    from wizard.validate.cross_rail import _one

    n = v._rail_count(client, server)
    ends = [(v.end(client, i), v.end(server, (i + 1) % n), i) for i in range(n)]
    runs = [_one(v, a, b, i, (i + 1) % n, v.options.together_s) for a, b, i in ends if a and b and n > 1]
    for result in await asyncio.gather(*runs):
        v.report.cross_rail.append(result)
        v.emit("rail", {"result": result})


def conclude_fleet(v: Validation) -> None:
    """Coverage, suspects (or, for a re-test, which suspects held), and the pass marks used."""
    r = v.report
    assert r.fleet is not None
    fabric = FabricMap.from_facts(v.hosts, v.facts)
    flows = flows_of(r.together + r.cross_rail)
    r.fleet.coverage = coverage(fabric, flows)
    found = infer(flows, fabric, r.counters)
    r.fleet.suspects = judge_retest(v.options.retest, found, flows, fabric) if v.options.retest is not None else found
    val = v.answers.validation
    r.fleet.thresholds = Thresholds(
        pass_ratio=val.pass_ratio,
        pass_source=val.pass_source(),
        latency_alarm_us=val.latency_alarm_us,
        latency_source=val.latency_source(),
        regression_pct=val.regression_pct,
    )


def coverage(fabric: FabricMap, flows: list[Flow]) -> Coverage:
    ports = {f.a for f in flows} | {f.b for f in flows}
    hosts = {h for h, _ in ports}
    leaves = {p.leaf for key, p in fabric.places.items() if key in ports and p.leaf}
    pairs = {tuple(sorted((f.a[0], f.b[0]))) for f in flows}
    all_leaves = fabric.leaves()
    testable = [h for h in fabric.hosts if fabric.rails(h)]
    return Coverage(
        pairs=len(pairs),
        hosts=len(hosts),
        hosts_total=len(fabric.hosts),
        ports=len(ports),
        ports_total=len(fabric.places),
        leaves=len(leaves),
        leaves_total=len(all_leaves),
        cross_leaf=sum(1 for f in flows if f.cross),
        untested_hosts=[h for h in fabric.hosts if h not in hosts or h not in testable],
        untested_leaves=[leaf for leaf in all_leaves if leaf not in leaves],
    )
