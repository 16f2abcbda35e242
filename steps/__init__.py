"""The stages of a bring-up, in order: one package per stage (``steps/<stage>/``), each with its probe, plan and
checks, and the stage class as the package's public entry (``steps.network.Network``)."""

from __future__ import annotations

from wizard.engine.step import Step


def all_steps() -> list[Step]:
    """One instance of every stage, in run order."""
    from steps.discovery import Discovery
    from steps.gpudirect import GpuDirect
    from steps.inference import Inference
    from steps.nccl import Nccl
    from steps.network import Network
    from steps.ofed import Ofed
    from steps.roce import Roce

    return [Discovery(), Ofed(), Network(), Roce(), GpuDirect(), Nccl(), Inference()]
