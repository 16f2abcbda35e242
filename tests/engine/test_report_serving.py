"""The run report's inference section: each replica with its hosts, the NCCL its engine runs on, its figures, and
the entry point, read from the facts the inference stage saved."""

from __future__ import annotations

from pathlib import Path

from wizard.engine.state import StateStore
from wizard.report.model import RunReport
from wizard.report.render import _serving
from wizard.report.serving import collect_serving

PROBE = {"requests": 16, "succeeded": 16, "p50_s": 1.2, "p90_s": 1.5, "tokens_per_s": 410.5, "simulated": True}
IB = {"read": True, "lines": True, "version": "2.27.5", "transport": "IB", "ib_ports": ["mlx5_0:1/RoCE"] * 8}
SOCKET = {"read": True, "lines": True, "version": "2.20.5", "transport": "Socket", "socket_hosts": ["gpu-004"]}


def store_with(tmp_path: Path, clusters: dict[str, dict]) -> StateStore:
    store = StateStore(tmp_path)
    for host, cluster in clusters.items():
        store.save_facts(host, {"inference": {"cluster": cluster}})
    return store


def test_replicas_list_their_hosts_transport_and_figures_and_the_entry_point(tmp_path: Path) -> None:
    entry = {**PROBE, "served_by": {"10.0.0.11:8000": 8, "10.0.0.13:8000": 8}}
    store = store_with(
        tmp_path,
        {
            "gpu-001": {"health": {"healthy": True}, "probe": PROBE, "nccl": IB, "entry": entry},
            "gpu-002": {"served_by": "gpu-001", "health": {"healthy": True}},
            "gpu-003": {"health": {"healthy": True}, "probe": PROBE, "nccl": SOCKET},
            "gpu-004": {"served_by": "gpu-003", "health": {"healthy": True}},
        },
    )
    summary = collect_serving(store, ["gpu-001", "gpu-002", "gpu-003", "gpu-004"])
    assert summary is not None and summary.simulated and summary.entry_host == "gpu-001"
    first, second = summary.replicas
    assert first.hosts == ["gpu-001", "gpu-002"] and first.nccl == "2.27.5 over NET/IB (8 RoCE ports)"
    assert second.nccl == "2.20.5 over TCP sockets on gpu-004" and second.tokens_per_s == 410.5
    html = _serving(RunReport.model_construct(serving=summary))
    assert "SIMULATED endpoints" in html and "gpu-003, gpu-004" in html and "10.0.0.13:8000: 8" in html


def test_a_run_without_serving_has_no_section(tmp_path: Path) -> None:
    store = store_with(tmp_path, {"gpu-001": {}})
    assert collect_serving(store, ["gpu-001"]) is None
