"""Stage network: Per-port rails (or per-card RoCE LAG)."""

from __future__ import annotations

from steps.not_yet import NotYetAvailable


class Network(NotYetAvailable):
    id = "network"
    title = "Network topology"
    summary = (
        "Per-port rails (or per-card RoCE LAG), MTU 9000 and addressing in netplan; cabling verified port by port."
    )
