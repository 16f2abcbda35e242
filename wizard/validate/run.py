"""The validation run: probe, lint, counters, per-rail sweeps, all pairs with all rails at once, latency, NCCL."""

from __future__ import annotations

import asyncio
import ipaddress
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

from steps.discovery.facts import NicPort
from wizard.answers.model import Answers
from wizard.answers.ranges import hosts_text
from wizard.engine.waves import in_waves
from wizard.executors.base import Executor, ExecutorError
from wizard.parsers.perftest import PerftestBw, PerftestLat
from wizard.validate import counters as ctr
from wizard.validate import perftest as pt
from wizard.validate.diagnose import explain
from wizard.validate.hostfacts import HostFacts, probe_all
from wizard.validate.lint import lint
from wizard.validate.model import (
    Aggregate,
    LatencyResult,
    PairCell,
    RailEnd,
    RailResult,
    Report,
)
from wizard.validate.schedule import SETUP_S, ring, ring_rounds, rounds
from wizard.validate.verdict import conclude

if TYPE_CHECKING:
    from wizard.validate.cross_rail import CrossRailPlan
    from wizard.validate.fleet_model import Suspect
    from wizard.validate.incast import IncastPlan

EventFn = Callable[[str, dict[str, Any]], None]


@dataclass
class Options:
    sweep: bool = True  # per-rail ib_write_bw -a (one rail at a time)
    together_s: float = 3.0  # all rails of a pair at once, timed (-D)
    latency: bool = True
    nccl: bool = True
    tool: str = "ib_write_bw"
    lat_tool: str = "ib_write_lat"
    incast: IncastPlan | None = None  # bwtest --incast: N:1 rounds instead of the pair tests (lint, counters stay)
    cross_rail: CrossRailPlan | None = None  # bwtest --cross-rail: rail i -> rail j != i through the spine instead
    neighbours_only: bool = False  # each host with its ring neighbours (at most 3 rounds), not all pairs: verify's
    quick: bool = False  # bwtest --quick: same-leaf and cross-leaf neighbours and canaries (wizard/validate/quick.py)
    budget_s: float | None = None  # bwtest --budget: stop before a round that would not fit (fabric time)
    retest: list[Suspect] | None = None  # bwtest --suspects: only these, against known-good peers


async def _has_stdbuf(ex: Executor) -> bool:
    try:
        return (await ex.run(["stdbuf", "--version"])).ok
    except ExecutorError:
        return False


def now() -> str:
    return datetime.now(UTC).isoformat(timespec="seconds")


def ib_nominal_gbps(p: NicPort, expect: int | None) -> float | None:
    """What an IB port should carry: the group's rate from the answers, else 4X at the speed it trained (EDR 100,
    HDR 200, NDR 400). Never the trained rate itself: a port that came up 1X would pass against its own quarter."""
    if expect:
        return float(expect)
    if p.ib is None or not p.ib.rate_gbps or not p.ib.width:
        return None
    return p.ib.rate_gbps / p.ib.width * 4


def rail_end(h: HostFacts, index: int) -> RailEnd | None:
    rails = h.rails()
    if index >= len(rails):
        return None
    p = rails[index]
    addr = next(iter(p.ipv4), None)
    iface = ipaddress.ip_interface(addr) if addr else None
    ib = p.ib is not None
    speed = p.speed_mbps / 1000 if p.speed_mbps and p.speed_mbps > 0 else None
    return RailEnd(
        host=h.name,
        netdev=p.netdev or "?",
        device=p.rdma_device or "?",
        gid_index=None if ib else p.roce_v2_ipv4_gid,
        ipv4=str(iface.ip) if iface else None,
        network=str(iface.network) if iface else None,
        speed_gbps=ib_nominal_gbps(p, h.expect_gbps) if ib else speed,
        ib=ib,
        ib_sl=h.ib_sl if ib else None,
        leaf=(p.lldp.chassis_name or p.lldp.chassis_id) if p.lldp is not None else None,
        leaf_port=p.lldp.port_id if p.lldp is not None else None,
    )


OUTPUT_KEPT_HOSTS = 64
"""Past this many hosts a run keeps perftest's printed output only for the flows that did not pass: a fleet's quick
run is tens of thousands of flows, their figures are in each result, and the HTML report shows only the bad ones'."""


class Validation:
    """One validation run over the answers' hosts; ``on_event`` sees progress as it happens (TUI, CLI)."""

    def __init__(
        self,
        answers: Answers,
        executors: dict[str, Executor],
        *,
        simulated: bool,
        options: Options | None = None,
        on_event: EventFn | None = None,
    ) -> None:
        self.answers = answers
        self.executors = executors
        self.options = options or Options()
        self.emit: EventFn = on_event or (lambda kind, data: None)
        self.hosts = [h.name for h in answers.hosts if h.name in executors]
        self._ends: dict[tuple[str, int], RailEnd | None] = {}
        self.report = Report(
            simulated=simulated, cluster=answers.cluster.name, hosts=self.hosts, started=now(), tclass=answers.roce.tos
        )
        self.pass_ratio = self.report.pass_ratio = answers.validation.pass_ratio
        self.latency_alarm_us = answers.validation.latency_alarm_us
        self.rail_floor: dict[int, float] = {}
        self.facts: dict[str, HostFacts] = {}
        self._port = pt.BASE_PORT
        self._leftovers: list[asyncio.Task] = []
        self._stdbuf: dict[str, bool] = {}

    def _next_port(self) -> int:
        self._port += 1
        return self._port

    def _expected(self, a: RailEnd, b: RailEnd, rails: tuple[int, ...] = ()) -> float | None:
        speeds = [s for s in (a.speed_gbps, b.speed_gbps) if s]
        fallback = self.answers.discovery.expect_link_speed_gbps
        expected = min(speeds) if speeds else (float(fallback) if fallback else None)
        # On a fleet (bwtest --quick), a port that trained below what most ports of its rail run at must not pass
        # against its own low rate: the rail's usual speed is the mark (wizard/validate/fleet_run.py sets it).
        floors = [self.rail_floor[i] for i in rails if i in self.rail_floor]
        if floors and expected is not None:
            expected = max(expected, min(floors))
        return expected

    async def run(self) -> Report:
        r, o = self.report, self.options
        self.emit("phase", {"name": "probe", "text": f"reading facts on {hosts_text(self.hosts)}"})
        self.facts = await probe_all(self.answers, self.executors, link_counters=False)  # the doctor's, not ours
        reachable = [h for h in self.facts if not self.facts[h].error]
        # Whether each host has stdbuf, asked in waves: one host after another it was 1,024 round trips in a row.
        limit = self.answers.ssh.max_parallel_hosts
        found = await in_waves(limit, (_has_stdbuf(self.executors[h]) for h in reachable))
        self._stdbuf = dict(zip(reachable, found, strict=True))
        r.lint = lint(self.answers, self.facts)
        self.emit("lint", {"items": r.lint})
        fleet = o.quick or o.budget_s is not None or o.retest is not None  # rounds planned by wizard/validate/fleet_run
        modes = o.incast is not None or o.cross_rail is not None or fleet  # a mode replaces the pair tests
        pairs = [] if modes else ring(self.hosts)
        schedule = [] if modes else ring_rounds(self.hosts) if o.neighbours_only else rounds(self.hosts)
        swept = sum(self._rail_count(a, b) for a, b in pairs)
        # How many tests of each kind follow, before the first one runs: the live page's progress and ETA.
        tests = {"alone": swept if o.sweep else 0, "together": sum(len(g) for g in schedule),
                 "latency": swept if o.latency else 0, "nccl": int(o.nccl)}  # fmt: skip
        self.emit("plan", {"tests": tests, "seconds": {"together": len(schedule) * (o.together_s + SETUP_S) if schedule
                                                        else 0.0}})  # fmt: skip
        ports = {n: [(p.netdev, p.rdma_device) for p in h.rails() if p.netdev and p.rdma_device]
                 for n, h in self.facts.items()}  # fmt: skip
        self.emit("phase", {"name": "counters", "text": "reading the ports' PFC/ECN counters before the tests"})
        before = await ctr.read(self.executors, ports, self.answers.ssh.max_parallel_hosts)
        if o.incast is not None:
            from wizard.validate.incast import run_incast

            r.incast = await run_incast(self, o.incast)
        if o.cross_rail is not None:
            from wizard.validate.cross_rail import run_cross_rail

            r.cross_rail = await run_cross_rail(self, o.cross_rail)
            if o.incast is not None:  # --cross-rail --incast: the incast again, every flow through the spine
                first = max((x.round for x in r.incast), default=-1) + 1
                r.incast += await run_incast(self, o.incast, cross=True, first=first)
        if fleet:
            from wizard.validate.fleet_run import run_fleet

            await run_fleet(self)
        if o.sweep:
            self.emit("phase", {"name": "rails", "text": "one rail at a time: ib_write_bw -a sweep"})
            for a, b in pairs:
                for i in range(self._rail_count(a, b)):
                    r.rails.append(await self._rail(a, b, i, "alone"))
        pairs_total = sum(len(group) for group in schedule)
        eta = len(schedule) * (o.together_s + SETUP_S)
        if schedule:
            self.emit(
                "phase",
                {
                    "name": "together",
                    "text": f"all rails at once, {o.together_s:g} s, all "
                    f"{pairs_total} host pairs in {len(schedule)} rounds of disjoint pairs: about {eta:.0f} s",
                },
            )
            self.emit("estimate", {"phase": "together", "rounds": len(schedule), "pairs": pairs_total, "seconds": eta})
        for number, group in enumerate(schedule):
            results = await asyncio.gather(*(self._together(a, b, number) for a, b in group))
            for cell in results:
                r.matrix.append(cell)
                self.emit("cell", {"cell": cell})
        if o.latency:
            self.emit("phase", {"name": "latency", "text": f"{o.lat_tool} per rail"})
            for a, b in pairs:
                for i in range(self._rail_count(a, b)):
                    r.latency.append(await self._latency(a, b, i))
        if fleet:  # half a minute on a thousand hosts: said, not silent
            self.emit("phase", {"name": "counters", "text": "reading the ports' PFC/ECN counters after the tests"})
        after = await ctr.read(self.executors, ports, self.answers.ssh.max_parallel_hosts)
        r.counters = ctr.deltas(before, after, self.answers.roce.priority)
        self.emit("counters", {"items": r.counters})
        if fleet:
            from wizard.validate.fleet_run import conclude_fleet

            conclude_fleet(self)
        if o.nccl:
            from wizard.validate.nccl import judge, run_nccl

            self.emit("phase", {"name": "nccl", "text": "NCCL all_reduce_perf"})
            r.nccl = await run_nccl(self.answers, self.executors, self.facts)
            judge(r.nccl, min((a.expected_gbps for a in r.aggregate), default=None))
            self.emit("nccl", {"result": r.nccl})
        for task in self._leftovers:
            task.cancel()
        await asyncio.gather(*self._leftovers, return_exceptions=True)
        conclude(r, self.facts, self.answers)
        r.finished = now()
        self.emit("done", {"report": r})
        return r

    def _rail_count(self, a: str, b: str) -> int:
        return min(len(self.facts[a].rails()), len(self.facts[b].rails()))

    def end(self, host: str, rail: int) -> RailEnd | None:
        """Rail ``rail`` of ``host`` as tests address it: one object per port, shared by every result through it
        (a fleet's 30,000 results held 60,000 copies of 8,192 ports)."""
        key = (host, rail)
        if key not in self._ends:
            self._ends[key] = rail_end(self.facts[host], rail)
        return self._ends[key]

    async def _rail(self, a: str, b: str, i: int, mode: str, duration: float | None = None) -> RailResult:
        server, client = self.end(a, i), self.end(b, i)
        assert server is not None and client is not None
        spec = pt.Spec(self.options.tool, server, client, self._next_port(), self.answers.roce.tos)
        spec.sweep, spec.duration_s = duration is None, duration
        spec.line_buffered = self._stdbuf.get(b, False)
        result = RailResult(rail=i, server=server, client=client, mode=mode)  # type: ignore[arg-type]
        result.expected_gbps = self._expected(server, client, (i,))
        result.command = " ".join(pt.client_argv(spec))
        self.emit("rail_start", {"rail": i, "mode": mode, "pair": (a, b), "label": result.label})

        def row(size: int, gbps: float) -> None:
            self.emit("row", {"rail": i, "mode": mode, "pair": (a, b), "size": size, "gbps": gbps})

        out = await pt.run_pair(self.executors[a], self.executors[b], spec, row, self._leftovers)
        result.errors = out.errors
        if out.client is not None:
            result.output = "\n".join((out.client.stdout + "\n" + out.client.stderr).strip().splitlines()[-60:])
        if isinstance(out.parsed, PerftestBw) and out.parsed.results:
            result.sweep = [(row.bytes, row.average.gbps) for row in out.parsed.results]
            result.gbps, result.note = pt.measured_gbps(out.parsed, duration)
            result.mtu = out.parsed.mtu
        self._judge(result)
        if result.status == "pass" and len(self.hosts) > OUTPUT_KEPT_HOSTS:
            result.output = ""  # a fleet's report keeps perftest's own words for the flows that need a ticket
        self.emit("rail", {"result": result})
        return result

    def _judge(self, result: RailResult) -> None:
        if result.gbps is None:
            result.status = "fail"
        else:
            ratio = result.ratio
            result.status = "pass" if ratio is None or ratio >= self.pass_ratio else "fail"
        found = explain(result, self.facts, [], self.answers.roce.priority, self.answers.network.mtu)
        if found and result.status == "fail":
            result.cause, result.fix = found

    async def _together(self, a: str, b: str, number: int) -> PairCell:
        n = self._rail_count(a, b)
        runs = await asyncio.gather(*(self._rail(a, b, i, "together", self.options.together_s) for i in range(n)))
        self.report.together.extend(runs)
        rates = [x.gbps for x in runs]
        expected = sum(x.expected_gbps or 0 for x in runs)
        total = sum(g for g in rates if g is not None)
        fast = expected and total >= self.pass_ratio * expected
        status = "pass" if fast and all(x.status == "pass" for x in runs) else "fail"
        self.report.aggregate.append(Aggregate(hosts=(a, b), gbps=total, expected_gbps=expected, status=status))
        slow = [x for x in runs if x.status != "pass"]
        hint = slow[0].cause or slow[0].label if slow else None
        return PairCell(
            a=a, b=b, round=number, gbps=total, expected_gbps=expected, rails=rates, status=status, hint=hint
        )

    async def _latency(self, a: str, b: str, i: int) -> LatencyResult:
        server, client = self.end(a, i), self.end(b, i)
        assert server is not None and client is not None
        spec = pt.Spec(self.options.lat_tool, server, client, self._next_port(), self.answers.roce.tos)
        out = await pt.run_pair(self.executors[a], self.executors[b], spec, None, self._leftovers)
        res = LatencyResult(rail=i, server=server, client=client, errors=out.errors, threshold_us=self.latency_alarm_us)
        row = out.parsed.last() if isinstance(out.parsed, PerftestLat) else None
        if row is None:
            res.status, res.cause = "fail", "; ".join(out.errors[:2]) or "no latency result"
        else:
            res.typical_us, res.p99_us, res.p99_9_us = row.t_typical_us, row.p99_us, row.p99_9_us
            typical = row.t_typical_us or row.t_avg_us or 0.0
            tail = row.p99_9_us or row.t_max_us or typical
            if typical > self.latency_alarm_us:
                res.status = "fail"
                res.cause = f"typical {typical:.2f} us > {self.latency_alarm_us:g} us (validation.latency_alarm_us)"
            elif tail > 4 * typical:
                res.status = "warn"
                res.cause = (
                    f"99.9% tail {tail:.2f} us is {tail / typical:.1f}x typical: drops/retransmits or CPU jitter"
                )
            else:
                res.status = "pass"
        self.emit("latency", {"result": res})
        return res
