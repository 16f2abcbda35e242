"""Stage gpudirect: DMA-BUF where supported, nvidia-peermem otherwise; proven in use, not just loaded.

Modules (the same shape in every stage where it fits):
- ``stage``: the stage
- ``facts``: what the stage reads, GPU<->NIC paths
- ``plan``: plan and per-host checks
- ``rebuild``: nvidia-peermem rebuild against the RDMA stack
- ``verify``: evidence GPUDirect RDMA is used

The stage itself is ``steps.gpudirect.GpuDirect``, loaded on first use (``steps.stage_entry``).
"""

from __future__ import annotations

from steps import stage_entry

__all__ = ["GpuDirect"]
__getattr__ = stage_entry(__name__, "GpuDirect")
