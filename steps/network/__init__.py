"""Stage network: per-port rails (or per-card RoCE LAG), MTU and addressing in netplan, cabling verified per port.

Modules (the same shape in every stage where it fits):
- ``stage``: the stage
- ``facts``: live interface, routing, netplan and sysctl state
- ``design``: which interface carries which rail, and why
- ``render``: the netplan and sysctl files as exact text
- ``renderer``: networkd or NetworkManager
- ``merge``: other netplan files that mention our interfaces
- ``notes``: plan notes
- ``predict``: facts after the plan, for planning ahead
- ``checks``: per-host verification
- ``cabling``: cross-host cabling tests
- ``wiring``: cabling verdicts
- ``routes``: per-rail routing end to end

The stage itself is ``steps.network.Network``, loaded on first use (``steps.stage_entry``).
"""

from __future__ import annotations

from steps import stage_entry

__all__ = ["Network"]
__getattr__ = stage_entry(__name__, "Network")
