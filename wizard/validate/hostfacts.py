"""Fresh facts for validation: the discovery and roce stages' own read-only probes, run again on every host (in
batches, as the stages run them: wizard/engine/prefetch.py)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from steps.discovery.facts import DiscoveryFacts, NicPort
from steps.roce.facts import RoceFacts
from wizard.answers.model import Answers
from wizard.engine.prefetch import read_stage
from wizard.engine.step import ProbeContext
from wizard.engine.waves import in_waves
from wizard.executors.base import Executor, ExecutorError


@dataclass
class HostFacts:
    """What one host looks like right now (None parts: the probe failed, ``error`` says why)."""

    name: str
    discovery: DiscoveryFacts
    roce: RoceFacts | None = None
    error: str | None = None
    link_layer: str = "ethernet"  # the answers' fabric.link_layer for this host
    ib_sl: int | None = None  # fabric.ib_sl: the service level perftest puts in its QPs on InfiniBand
    expect_gbps: int | None = None  # the link rate the answers give this host's group (or discovery's)

    def rails(self) -> list[NicPort]:
        """The rail ports in PCI order, of the host's link layer (RoCE, or InfiniBand): rail i of every host is its
        i-th port. A host without ConnectX RDMA ports (a lab) tests its software RDMA devices (Soft-RoCE) instead.
        """
        ports = self.discovery.rdma_ports() or self.discovery.soft_rdma
        wanted = {"ethernet": ("Ethernet",), "infiniband": ("InfiniBand",)}.get(self.link_layer)
        return [p for p in ports if wanted is None or (p.link_layer or "Ethernet") in wanted]


async def probe_host(answers: Answers, name: str, ex: Executor, *, link_counters: bool = True) -> HostFacts:
    """Discovery's and roce's read of one host, as a run keeps it; ``link_counters``: keep each port's carrier and
    error counters (the doctor compares them with a second read; a bandwidth test has no use for them)."""
    from steps.discovery.stage import Discovery
    from steps.roce.stage import Roce

    entry = next(h for h in answers.hosts if h.name == name)
    try:
        disc, _ = await read_stage(Discovery(platform=False), ProbeContext(entry, ex, answers, {}), None)
    except ExecutorError as exc:
        return HostFacts(name, DiscoveryFacts(), error=str(exc))
    facts = HostFacts(name, DiscoveryFacts.model_validate(_ports_as_tests_read(disc, link_counters)))
    facts.link_layer, facts.ib_sl = answers.fabric.link_layer_of(name), answers.fabric.ib_sl
    facts.expect_gbps = answers.expect_speed_gbps(name)
    try:
        roce, _ = await read_stage(Roce(), ProbeContext(entry, ex, answers, {"discovery": disc}), None)
        facts.roce = RoceFacts.model_validate(_what_tests_read(roce, answers.roce.dscp))
    except ExecutorError as exc:
        facts.error = str(exc)
    return facts


def _ports_as_tests_read(disc: dict[str, Any], link_counters: bool) -> dict[str, Any]:
    """Discovery's facts with each port's GIDs cut to the one the tests use, its first RoCE v2 IPv4 GID (what
    ``NicPort.roce_v2_ipv4_gid`` picks), and without its link counters unless asked for. A port's four GIDs and its
    counters were two thirds of a host's 62 KB of facts as Python objects (tracemalloc, a rails host)."""

    def port(entry: dict[str, Any]) -> dict[str, Any]:
        gids = [g for g in entry.get("gids") or [] if g.get("version") == "v2" and g.get("ipv4")][:1]
        return {**entry, "gids": gids} | ({} if link_counters else {"link": None})

    return {**disc, **{k: [port(p) for p in disc[k]] for k in ("ports", "soft_rdma") if disc.get(k)}}


# The roce stage's facts no test reads: its files' texts (a host's QoS script alone is 6 KB) and the ports it skips.
_UNREAD = ("notes", "unit_text", "script_text", "template_text", "udev_rule_text", "skipped")


def _what_tests_read(roce: dict[str, Any], dscp: int) -> dict[str, Any]:
    """The roce facts less what no test reads, kept for every host of a run: at 1,024 hosts each dropped kilobyte
    is a megabyte of the controller's memory. A port's DSCP map (64 entries) keeps the one DSCP the tests check
    (wizard/validate/lint.py), unless that DSCP is missing from it: then the map stays whole, as the check reads it."""
    kept = {k: v for k, v in roce.items() if k not in _UNREAD}
    ports = []
    for port in kept.get("ports", []):
        table = port.get("dscp2prio") or {}
        if str(dscp) in table or dscp in table:
            port = {**port, "dscp2prio": {dscp: table.get(str(dscp), table.get(dscp))}}
        ports.append(port)
    return {**kept, "ports": ports} if "ports" in kept else kept


async def probe_all(
    answers: Answers, executors: dict[str, Executor], *, link_counters: bool = True
) -> dict[str, HostFacts]:
    names = [h.name for h in answers.hosts if h.name in executors]
    limit = answers.ssh.max_parallel_hosts
    reads = (probe_host(answers, n, executors[n], link_counters=link_counters) for n in names)
    found = await in_waves(limit, reads)
    return dict(zip(names, found, strict=True))
