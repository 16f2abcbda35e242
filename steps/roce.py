"""Stage roce: DSCP trust."""

from __future__ import annotations

from steps.not_yet import NotYetAvailable


class Roce(NotYetAvailable):
    id = "roce"
    title = "RoCE v2 and lossless QoS"
    summary = "DSCP trust, PFC on one priority, ECN, RDMA-CM ToS, persisted by a oneshot unit; checked across hosts."
