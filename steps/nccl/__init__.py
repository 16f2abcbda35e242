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

The stage itself is ``steps.nccl.Nccl``; it is loaded on first use, so importing one of the pure modules
(``steps.nccl.facts`` from a parser test, say) does not load the whole stage.
"""

from __future__ import annotations

__all__ = ["Nccl"]


def __getattr__(name: str) -> object:
    if name == "Nccl":
        from steps.nccl.stage import Nccl

        return Nccl
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
