"""Messages from the runner to the UI. Output lines do not travel as messages: they go into bounded buffers that a
timer drains in batches (see LogBuffers), so a flood of lines costs one redraw per tick, not one per line."""

from __future__ import annotations

from dataclasses import dataclass

from textual.message import Message

from wizard.engine.events import Event


@dataclass
class RunnerEvent(Message):
    """A runner event (stage, plan, check, host status, change) arrived."""

    event: Event
