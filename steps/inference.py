"""Stage inference: Ray plus vLLM or SGLang across the hosts as systemd units."""

from __future__ import annotations

from steps.not_yet import NotYetAvailable


class Inference(NotYetAvailable):
    id = "inference"
    title = "Inference service"
    summary = "Ray plus vLLM or SGLang across the hosts as systemd units, health check and a latency/throughput probe."
