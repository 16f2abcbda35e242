"""Plan notes of the network stage: the fabric and topology decision, rail by rail, and GPU-NIC affinity."""

from __future__ import annotations

from steps.discovery.facts import DiscoveryFacts
from steps.network.design import SECTION0, Design, Endpoint
from wizard.answers.model import Answers


def fabric_notes(answers: Answers, d: Design) -> list[str]:
    """Why the plan looks the way it does, in the operator's words."""
    net = answers.network
    host_ids = {h.name: answers.host_id(h.name) for h in answers.hosts}
    if d.fabric == "back_to_back":
        why = "explicit" if net.fabric != "auto" else f"{len(answers.hosts)} hosts and no rail gateway"
        notes = [
            f"fabric back-to-back ({why}): each rail is its own subnet holding only the two ends of one cable, so "
            "the connected route is enough; no routing tables or source rules are needed"
        ]
    else:
        why = "explicit" if net.fabric != "auto" else "more than two hosts or a rail gateway"
        notes = [
            f"fabric switched ({why}): every rail gets routing table {net.route_table_base}+i and a rule "
            "`from <rail address>` so traffic leaves by the NIC that owns its source address; other rails' "
            "subnets are reached through the rail gateway when one is set; no default route goes through a rail"
        ]
    if net.topology == "rails":
        notes.append(
            "topology rails: rail i = the i-th RDMA Ethernet port in PCI order (rails[i].netdev overrides it), "
            f"host address = host id in each rail subnet ({', '.join(f'{h} .{i}' for h, i in host_ids.items())}); "
            "cable rail i to rail i on every peer and run NCCL with NCCL_CROSS_NIC=0"
        )
    elif net.topology == "roce_lag":
        notes.append(
            "topology roce_lag: one bond per card of exactly its two ports; RDMA then uses mlx5_bond_N. Per-port "
            f"rails give the same bandwidth with less to go wrong ({SECTION0})"
        )
    for e in d.endpoints:
        where = e.port.label if e.port else f"{' + '.join(e.members)}"
        notes.append(f"{e.label}: {where} -> {e.address}" + (f", gateway {e.gateway}" if e.gateway else ""))
    return notes


def gpu_notes(disc: DiscoveryFacts, endpoints: list[Endpoint]) -> list[str]:
    """GPU i <-> NIC from discovered PCIe affinity (nvidia-smi topo), one line per rail."""
    lines = []
    for endpoint in endpoints:
        device = endpoint.rdma_device
        gpus = [g.index for g in disc.gpus if device and device in g.nearest_nics]
        if gpus:
            names = ", ".join(f"GPU{i}" for i in gpus)
            lines.append(f"{endpoint.label} ({endpoint.netdev}, {device}) is nearest to {names}")
    if disc.gpus and not lines:
        lines.append("no GPU-NIC affinity from nvidia-smi topo -m: NCCL will pick NICs by PCI distance itself")
    return lines
