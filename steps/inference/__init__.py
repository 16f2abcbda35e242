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

The stage itself is ``steps.inference.Inference``, loaded on first use (``steps.stage_entry``).
"""

from __future__ import annotations

from steps import stage_entry

__all__ = ["Inference"]
__getattr__ = stage_entry(__name__, "Inference")
