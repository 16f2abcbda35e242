"""Stage 1, discovery: what every host has (OS, ConnectX ports, RDMA devices, GIDs, GPUs, LLDP neighbours), read-only.

Modules (the same shape in every stage where it fits):
- ``stage``: the stage: probes and checks
- ``facts``: facts assembled from parsed tool outputs
- ``checks``: per-host verdicts, summaries, cross-host differences
- ``links``: link flap counters
- ``lldp``: LLDP neighbours, rail cabling, switch PFC/MTU

The stage itself is ``steps.discovery.Discovery``, loaded on first use (``steps.stage_entry``).
"""

from __future__ import annotations

from steps import stage_entry

__all__ = ["Discovery"]
__getattr__ = stage_entry(__name__, "Discovery")
