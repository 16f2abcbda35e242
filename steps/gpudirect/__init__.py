"""Stage gpudirect: DMA-BUF where supported, nvidia-peermem otherwise; proven in use, not just loaded.

Modules (the same shape in every stage where it fits):
- ``stage``: the stage
- ``facts``: what the stage reads, GPU<->NIC paths
- ``plan``: plan and per-host checks
- ``rebuild``: nvidia-peermem rebuild against the RDMA stack
- ``verify``: evidence GPUDirect RDMA is used

The stage itself is ``steps.gpudirect.GpuDirect``; it is loaded on first use, so importing one of the pure modules
(``steps.gpudirect.facts`` from a parser test, say) does not load the whole stage.
"""

from __future__ import annotations

__all__ = ["GpuDirect"]


def __getattr__(name: str) -> object:
    if name == "GpuDirect":
        from steps.gpudirect.stage import GpuDirect

        return GpuDirect
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
