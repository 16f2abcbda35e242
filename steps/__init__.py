"""The stages of a bring-up, in order: one package per stage (``steps/<stage>/``), each with its probe, plan and
checks, and the stage class as the package's public entry (``steps.network.Network``)."""

from __future__ import annotations

from collections.abc import Callable

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


def stage_entry(package: str, name: str) -> Callable[[str], object]:
    """A stage package's module ``__getattr__``: ``steps.<stage>.<Name>`` loads ``steps.<stage>.stage`` on first use,
    so importing one of the package's pure modules (``steps.network.facts`` from a parser test, say) does not load
    the whole stage."""

    def entry(attribute: str) -> object:
        if attribute == name:
            import importlib

            return getattr(importlib.import_module(f"{package}.stage"), name)
        raise AttributeError(f"module {package!r} has no attribute {attribute!r}")

    return entry
