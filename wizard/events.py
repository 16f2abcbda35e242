"""Events the runner emits; the TUI and the headless reporters are two sinks for the same stream."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any


@dataclass(frozen=True, slots=True)
class Event:
    """One thing that happened. ``kind`` is a stable snake_case name; ``data`` is JSON-able."""

    kind: str
    data: dict[str, Any] = field(default_factory=dict)
    time: str = field(default_factory=lambda: datetime.now(UTC).isoformat(timespec="milliseconds"))

    def to_json_dict(self) -> dict[str, Any]:
        return {"event": self.kind, "time": self.time, **self.data}


EventSink = Callable[[Event], None]


class EventBus:
    """Fans events out to every subscribed sink; a failing sink never breaks the run."""

    def __init__(self) -> None:
        self._sinks: list[EventSink] = []

    def subscribe(self, sink: EventSink) -> None:
        self._sinks.append(sink)

    def emit(self, kind: str, **data: Any) -> None:
        event = Event(kind, data)
        for sink in self._sinks:
            try:
                sink(event)
            except Exception:  # noqa: BLE001 - a broken display must not stop work on hosts
                pass
