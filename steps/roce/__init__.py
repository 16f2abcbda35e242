"""Stage roce: DSCP trust, PFC on one priority, ECN/DCQCN and RDMA-CM defaults on every RoCE port, persisted.

Modules (the same shape in every stage where it fits):
- ``stage``: the stage
- ``facts``: what the stage reads
- ``desired``: the state the answers ask for
- ``plan``: the plan
- ``script``: boot-time persistence (oneshot unit and script)
- ``checks``: verification
- ``dcbx``: NIC vs switch PFC (LLDP)

The stage itself is ``steps.roce.Roce``, loaded on first use (``steps.stage_entry``).
"""

from __future__ import annotations

from steps import stage_entry

__all__ = ["Roce"]
__getattr__ = stage_entry(__name__, "Roce")
