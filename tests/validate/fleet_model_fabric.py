"""A switched fabric on paper, for the fleet tests: SUs of hosts, one leaf per rail per SU, spines chosen by a hash
of the two ports (ECMP), and faulty parts that slow the flows through them. The quick schedule runs on it and the
suspect inference reads what it measured; no hosts, no SSH."""

from __future__ import annotations

import zlib
from dataclasses import dataclass, field
from functools import cached_property

from wizard.validate.fabric_map import FabricMap, PortPlace
from wizard.validate.fleet_model import Budget, FleetSummary, RoundRecord
from wizard.validate.fleet_run import coverage
from wizard.validate.model import RailEnd, RailResult, Report
from wizard.validate.quick import Round, quick_rounds
from wizard.validate.suspects import Flow, flows_of, infer

LINE = 400.0


@dataclass
class PaperFabric:
    hosts_n: int
    su: int = 4  # hosts per SU (one leaf per rail each)
    rails: int = 4
    spines: int = 4
    bad_ports: dict[tuple[str, int], float] = field(default_factory=dict)  # port -> its rate
    low_speed: dict[tuple[str, int], float] = field(default_factory=dict)  # port -> the speed it trained at
    bad_hosts: set[str] = field(default_factory=set)
    bad_leaves: set[str] = field(default_factory=set)
    bad_uplinks: dict[str, int] = field(default_factory=dict)  # leaf -> the spine whose uplink is slow

    @cached_property
    def hosts(self) -> list[str]:
        return [f"gpu-{i + 1:04d}" for i in range(self.hosts_n)]

    @cached_property
    def _number(self) -> dict[str, int]:
        return {h: i for i, h in enumerate(self.hosts)}

    def leaf(self, host: str, rail: int) -> str:
        return f"leaf-su{(self._number[host] // self.su) + 1:02d}-r{rail}"

    def fabric(self) -> FabricMap:
        places = []
        for i, h in enumerate(self.hosts):
            for r in range(self.rails):
                speed = self.low_speed.get((h, r), LINE)
                places.append(PortPlace(h, r, f"enp{r}s0", self.leaf(h, r), f"swp{i % self.su + 1}", speed))
        return FabricMap(self.hosts, places)

    def spine(self, a: tuple[str, int], b: tuple[str, int]) -> int:
        return zlib.crc32(repr(sorted((a, b))).encode()) % self.spines

    def rate(self, a: tuple[str, int], b: tuple[str, int]) -> float:
        rate = LINE
        for port in (a, b):
            rate = min(rate, self.bad_ports.get(port, LINE), self.low_speed.get(port, LINE))
            if port[0] in self.bad_hosts:
                rate = min(rate, 0.55 * LINE)
            if self.leaf(*port) in self.bad_leaves:
                rate = min(rate, 0.3 * LINE)
        la, lb = self.leaf(*a), self.leaf(*b)
        if la != lb:
            for leaf in (la, lb):
                if self.bad_uplinks.get(leaf) == self.spine(a, b):
                    rate = min(rate, LINE / 4)
        return rate

    def flow(self, a: tuple[str, int], b: tuple[str, int]) -> Flow:
        gbps = self.rate(a, b)
        return Flow(a, b, gbps, LINE, gbps >= 0.9 * LINE, self.leaf(*a), self.leaf(*b))

    def run(self, schedule: list[Round]) -> list[Flow]:
        flows = []
        for r in schedule:
            for a, b in r.pairs:
                flows += [self.flow((a, i), (b, i)) for i in range(self.rails)]
            for a, b in r.cross:
                flows += [self.flow((a, i), (b, (i + 1) % self.rails)) for i in range(self.rails)]
        return flows


def paper_report(paper: PaperFabric, schedule: list[Round] | None = None) -> Report:
    """A saved-run-shaped report of the quick schedule on the paper fabric: its pair and cross-rail results (with
    the leaves LLDP would give), the budget and coverage, and the suspects inferred from them."""
    fabric = paper.fabric()
    schedule = schedule if schedule is not None else quick_rounds(fabric)
    report = Report(simulated=True, cluster=f"paper-{paper.hosts_n}", hosts=paper.hosts,
                    started="2026-11-29T08:00:00+00:00", finished="2026-11-29T08:05:00+00:00")  # fmt: skip

    def end(host: str, rail: int) -> RailEnd:
        place = fabric.place(host, rail)
        assert place is not None
        return RailEnd(host=host, netdev=place.netdev, device=f"mlx5_{rail}", speed_gbps=place.speed_gbps,
                       leaf=place.leaf, leaf_port=place.leaf_port)  # fmt: skip

    for f in paper.run(schedule):
        cross = f.a[1] != f.b[1]
        x = RailResult(rail=f.a[1], peer_rail=f.b[1] if cross else None, client=end(*f.a), server=end(*f.b),
                       mode="cross" if cross else "together", gbps=f.gbps, expected_gbps=f.expected,
                       status="pass" if f.ok else "fail")  # fmt: skip
        (report.cross_rail if cross else report.together).append(x)
    budget = Budget(mode="quick", rounds=[RoundRecord(kind=r.kind, why=r.why, pairs=r.size, seconds=4.5, ran=True)
                                          for r in schedule])  # fmt: skip
    budget.used_s = 4.5 * len(schedule)
    flows = flows_of(report.together + report.cross_rail)
    report.fleet = FleetSummary(budget=budget, coverage=coverage(fabric, flows), suspects=infer(flows, fabric))
    report.verdict = "fail" if report.fleet.suspects else "pass"
    return report
