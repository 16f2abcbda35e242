"""Stage ofed: DOCA-OFED (or MLNX_OFED LTS / inbox rdma-core), RDMA tools, perftest, time sync.

Modules (the same shape in every stage where it fits):
- ``stage``: the stage
- ``facts``: what the stage reads
- ``state``: where a host stands against the wanted stack
- ``plan``: the install plan
- ``checks``: verification
- ``predict``: facts after the install, for planning ahead
- ``support``: what each NVIDIA release supports
- ``repo``: package sources (online or air-gapped)
- ``firmware``: adapter firmware against the release's table

The stage itself is ``steps.ofed.Ofed``; it is loaded on first use, so importing one of the pure modules
(``steps.ofed.facts`` from a parser test, say) does not load the whole stage.
"""

from __future__ import annotations

__all__ = ["Ofed"]


def __getattr__(name: str) -> object:
    if name == "Ofed":
        from steps.ofed.stage import Ofed

        return Ofed
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
