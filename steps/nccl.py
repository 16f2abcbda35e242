"""Stage nccl: /etc/nccl.conf from discovered facts."""

from __future__ import annotations

from steps.not_yet import NotYetAvailable


class Nccl(NotYetAvailable):
    id = "nccl"
    title = "NCCL"
    summary = "/etc/nccl.conf from discovered facts, all_reduce_perf across hosts, transport proven from the NCCL log."
