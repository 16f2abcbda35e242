"""Stage ofed: Choose and install DOCA-OFED (or MLNX_OFED LTS / inbox rdma-core)."""

from __future__ import annotations

from steps.not_yet import NotYetAvailable


class Ofed(NotYetAvailable):
    id = "ofed"
    title = "Driver stack"
    summary = (
        "Choose and install DOCA-OFED (or MLNX_OFED LTS / inbox rdma-core), RDMA userspace tools, perftest"
        " and time sync."
    )
