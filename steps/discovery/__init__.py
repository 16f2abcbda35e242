"""Stage 1, discovery: what every host has (OS, ConnectX ports, RDMA devices, GIDs, GPUs, LLDP neighbours), read-only.

Modules (the same shape in every stage where it fits):
- ``stage``: the stage: probes and checks
- ``facts``: facts assembled from parsed tool outputs
- ``checks``: per-host verdicts, summaries, cross-host differences
- ``links``: link flap counters
- ``lldp``: LLDP neighbours, rail cabling, switch PFC/MTU

The stage itself is ``steps.discovery.Discovery``; it is loaded on first use, so importing one of the pure modules
(``steps.discovery.facts`` from a parser test, say) does not load the whole stage.
"""

from __future__ import annotations

__all__ = ["Discovery"]


def __getattr__(name: str) -> object:
    if name == "Discovery":
        from steps.discovery.stage import Discovery

        return Discovery
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
