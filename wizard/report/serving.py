"""The inference part of the run report: each replica with its hosts, the NCCL its engine loaded and the transport
it runs on, its serving figures, and the entry point's; read from the facts the inference stage saved."""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from wizard.engine.state import StateStore


class ReplicaRow(BaseModel):
    model_config = ConfigDict(extra="forbid")

    head: str
    hosts: list[str]
    healthy: bool
    nccl: str = "-"  # "2.27.5 over NET/IB (4 RoCE ports)"
    requests: str = "-"  # "16/16"
    p50_s: float | None = None
    p90_s: float | None = None
    tokens_per_s: float | None = None
    ttft_s: float | None = None


class ServingSummary(BaseModel):
    model_config = ConfigDict(extra="forbid")

    replicas: list[ReplicaRow] = Field(default_factory=list)
    entry_host: str | None = None
    entry: dict[str, Any] | None = None
    simulated: bool = False


def _nccl(found: dict[str, Any] | None) -> str:
    if not found or not found.get("lines"):
        return "no NCCL init lines"
    if found.get("transport") != "IB":
        return f"{found.get('version')} over TCP sockets on {', '.join(found.get('socket_hosts') or []) or '?'}"
    return f"{found.get('version')} over NET/IB ({len(found.get('ib_ports') or [])} RoCE ports)"


def collect_serving(store: StateStore, names: list[str]) -> ServingSummary | None:
    """None when the inference stage has not probed a serving endpoint on any host."""
    clusters = {n: (store.load_facts(n).get("inference") or {}).get("cluster") or {} for n in names}
    heads = [n for n, c in clusters.items() if c.get("health") is not None and "served_by" not in c]
    if not heads:
        return None
    summary = ServingSummary()
    for head in heads:
        c = clusters[head]
        probe = c.get("probe") or {}
        members = [head] + [n for n, other in clusters.items() if other.get("served_by") == head]
        summary.replicas.append(
            ReplicaRow(
                head=head,
                hosts=members,
                healthy=bool((c.get("health") or {}).get("healthy")),
                nccl=_nccl(c.get("nccl")),
                requests=f"{probe.get('succeeded', 0)}/{probe.get('requests', 0)}" if probe else "-",
                p50_s=probe.get("p50_s"),
                p90_s=probe.get("p90_s"),
                tokens_per_s=probe.get("tokens_per_s"),
                ttft_s=probe.get("ttft_s"),
            )
        )
        summary.simulated |= bool(probe.get("simulated"))
        if c.get("entry") is not None:
            summary.entry_host, summary.entry = head, c["entry"]
    return summary
