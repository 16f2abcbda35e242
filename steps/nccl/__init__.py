"""Stage nccl: /etc/nccl.conf from discovered facts, nccl-tests across hosts, transport proven from the NCCL log.

Modules (the same shape in every stage where it fits):
- ``stage``: the stage
- ``probe``: read-only probe
- ``facts``: what the probe read
- ``conf``: /etc/nccl.conf
- ``env``: what NCCL really inherits
- ``build``: nccl-tests or the torch smoke test
- ``launch``: the cross-host run
- ``run``: pure pieces of the run
- ``verdict``: verdicts on a run
- ``causes``: named causes of a failed run

The stage itself is ``steps.nccl.Nccl``, loaded on first use (``steps.stage_entry``).
"""

from __future__ import annotations

from steps import stage_entry

__all__ = ["Nccl"]
__getattr__ = stage_entry(__name__, "Nccl")
