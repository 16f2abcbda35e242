"""The overall verdict and its causes, most likely first, each naming host, port and fix."""

from __future__ import annotations

from wizard.answers.model import Answers
from wizard.validate.diagnose import explain
from wizard.validate.hostfacts import HostFacts
from wizard.validate.incast_verdict import explained_ports
from wizard.validate.model import Report

# Lint items in the order they explain failures: no host, no link, cabling/MTU, then QoS.
LINT_ORDER = ["hosts", "link", "gid", "mtu", "trust", "pfc", "dscp", "speed", "tos", "hca", "firmware", "ofed"]


def conclude(report: Report, facts: dict[str, HostFacts], answers: Answers) -> None:
    """Explain slow rails with the counters too, then set ``verdict`` and ``causes``."""
    prio, mtu = answers.roce.priority, answers.network.mtu
    for rail in report.rails + report.together:
        if rail.status == "fail":
            found = explain(rail, facts, report.counters, prio, mtu)
            if found:
                rail.cause, rail.fix = found
    causes: list[str] = []

    def add(text: str) -> None:
        if text not in causes:
            causes.append(text)

    lint = sorted(report.lint, key=lambda i: LINT_ORDER.index(i.id) if i.id in LINT_ORDER else 99)
    for item in lint:
        if item.status == "fail":
            add(f"{item.title}: {item.evidence} -> {item.fix}")
    for rail in report.rails + report.together:
        if rail.status == "fail" and rail.cause:
            add(f"{rail.cause} -> {rail.fix}")
    for x in report.incast:
        if x.status == "fail" and x.cause:
            add(f"incast rail {x.rail}: {x.cause} -> {x.fix}")
    for x in report.cross_rail:
        if x.status == "fail" and x.cause:
            add(f"cross-rail {x.rail}->{x.peer_rail}: {x.cause} -> {x.fix}")
    explained = " ".join(causes) + " " + explained_ports(report.incast)
    for c in report.counters:
        if c.status == "fail" and f"{c.host} {c.netdev}" not in explained:
            add(f"{c.host} {c.netdev}: {c.note} -> run stage roce (trust dscp, PFC on priority {prio})")
    broken = {(x.rail, x.client.host, x.server.host) for x in report.rails + report.together if x.gbps is None}
    for lat in report.latency:
        if lat.status == "fail" and lat.cause and (lat.rail, lat.client.host, lat.server.host) not in broken:
            add(f"latency rail {lat.rail} {lat.client.host}->{lat.server.host}: {lat.cause}")
    skipped = any(i.id == "cross_rail" and i.status == "skip" for i in report.lint)  # asked for, nothing to route
    if not report.rails and not report.together and not report.incast and not report.cross_rail and not skipped:
        add(f"no RDMA test ran: {len(report.hosts)} host(s) with rail ports in the run; bandwidth needs two hosts "
            "whose rails (ConnectX Ethernet ports in PCI order) have RoCE devices")  # fmt: skip
    if report.nccl.status == "fail":
        add(f"NCCL: {report.nccl.reason}")
    failed = (
        causes
        or any(x.status == "fail" for x in report.rails + report.together + report.latency)
        or any(a.status == "fail" for a in report.aggregate)
        or any(x.status == "fail" for x in report.incast)
        or any(x.status == "fail" for x in report.cross_rail)
    )
    report.verdict = "fail" if failed else "pass"
    report.causes = causes
