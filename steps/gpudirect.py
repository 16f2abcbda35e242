"""Stage gpudirect: DMA-BUF where supported, nvidia-peermem otherwise; proven in use, not just loaded."""

from __future__ import annotations

from steps.not_yet import NotYetAvailable


class GpuDirect(NotYetAvailable):
    id = "gpudirect"
    title = "GPUDirect RDMA"
    summary = "DMA-BUF where supported, nvidia-peermem otherwise; proven in use, not just loaded."
