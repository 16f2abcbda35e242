"""Stage inference: Ray plus vLLM or SGLang as systemd units, a health check and a latency/throughput probe.

Modules (the same shape in every stage where it fits):
- ``stage``: the stage
- ``models``: model sizes and the fit rule
- ``choice``: replicas or one serving group across nodes
- ``layout``: who serves what
- ``fabric``: the RoCE ports handed to NCCL
- ``plan``: the plan for one host
- ``units``: environment file, units, pip commands
- ``checks``: verdicts
- ``bench``: health check and latency/throughput probe

The stage itself is ``steps.inference.Inference``; it is loaded on first use, so importing one of the pure modules
(``steps.inference.facts`` from a parser test, say) does not load the whole stage.
"""

from __future__ import annotations

__all__ = ["Inference"]


def __getattr__(name: str) -> object:
    if name == "Inference":
        from steps.inference.stage import Inference

        return Inference
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
