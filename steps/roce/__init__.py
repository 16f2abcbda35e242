"""Stage roce: DSCP trust, PFC on one priority, ECN/DCQCN and RDMA-CM defaults on every RoCE port, persisted.

Modules (the same shape in every stage where it fits):
- ``stage``: the stage
- ``facts``: what the stage reads
- ``desired``: the state the answers ask for
- ``plan``: the plan
- ``script``: boot-time persistence (oneshot unit and script)
- ``checks``: verification
- ``dcbx``: NIC vs switch PFC (LLDP)

The stage itself is ``steps.roce.Roce``; it is loaded on first use, so importing one of the pure modules
(``steps.roce.facts`` from a parser test, say) does not load the whole stage.
"""

from __future__ import annotations

__all__ = ["Roce"]


def __getattr__(name: str) -> object:
    if name == "Roce":
        from steps.roce.stage import Roce

        return Roce
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
