"""Fresh facts for validation: the discovery and roce stages' own read-only probes, run again on every host (in
batches, as the stages run them: wizard/engine/prefetch.py)."""

from __future__ import annotations

from dataclasses import dataclass

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


async def probe_host(answers: Answers, name: str, ex: Executor) -> HostFacts:
    from steps.discovery.stage import Discovery
    from steps.roce.stage import Roce

    entry = next(h for h in answers.hosts if h.name == name)
    try:
        disc, _ = await read_stage(Discovery(platform=False), ProbeContext(entry, ex, answers, {}), None)
    except ExecutorError as exc:
        return HostFacts(name, DiscoveryFacts(), error=str(exc))
    facts = HostFacts(name, DiscoveryFacts.model_validate(disc))
    facts.link_layer, facts.ib_sl = answers.fabric.link_layer_of(name), answers.fabric.ib_sl
    facts.expect_gbps = answers.expect_speed_gbps(name)
    try:
        roce, _ = await read_stage(Roce(), ProbeContext(entry, ex, answers, {"discovery": disc}), None)
        facts.roce = RoceFacts.model_validate({k: v for k, v in roce.items() if k != "notes"})
    except ExecutorError as exc:
        facts.error = str(exc)
    return facts


async def probe_all(answers: Answers, executors: dict[str, Executor]) -> dict[str, HostFacts]:
    names = [h.name for h in answers.hosts if h.name in executors]
    limit = answers.ssh.max_parallel_hosts
    found = await in_waves(limit, (probe_host(answers, n, executors[n]) for n in names))
    return dict(zip(names, found, strict=True))
