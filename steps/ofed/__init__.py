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

The stage itself is ``steps.ofed.Ofed``, loaded on first use (``steps.stage_entry``).
"""

from __future__ import annotations

from steps import stage_entry

__all__ = ["Ofed"]
__getattr__ = stage_entry(__name__, "Ofed")
