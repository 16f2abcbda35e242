"""Events the runner emits; the TUI and the headless reporters are two sinks for the same stream."""

from __future__ import annotations

import time as _time
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

PROBING = "probing"
"""The reason of a ``running`` host whose stage probe has not answered yet."""
HOST_READ = "read; waiting for the other hosts"
"""The reason of a ``running`` host whose probe answered and whose facts are saved: the stage's cross-host checks
(and its plan and changes) come once every host is read. Displays count these hosts as "read"."""

_second: list[Any] = [-1, ""]  # the last whole second and its ISO text: an event per output line adds up


def utc_now_ms() -> str:
    """``datetime.now(UTC).isoformat(timespec="milliseconds")``, with the date and time formatted once a second."""
    now = _time.time()
    whole = int(now)
    if whole != _second[0]:
        _second[:] = [whole, datetime.fromtimestamp(whole, UTC).strftime("%Y-%m-%dT%H:%M:%S")]
    return f"{_second[1]}.{int((now - whole) * 1000):03d}+00:00"


@dataclass(frozen=True, slots=True)
class Event:
    """One thing that happened. ``kind`` is a stable snake_case name; ``data`` is JSON-able."""

    kind: str
    data: dict[str, Any] = field(default_factory=dict)
    time: str = field(default_factory=utc_now_ms)

    def to_json_dict(self) -> dict[str, Any]:
        return {"event": self.kind, "time": self.time, **self.data}


EventSink = Callable[[Event], None]


class EventBus:
    """Fans events out to every subscribed sink; a failing sink never breaks the run."""

    def __init__(self) -> None:
        self._sinks: list[EventSink] = []

    def subscribe(self, sink: EventSink) -> None:
        self._sinks.append(sink)

    def unsubscribe(self, sink: EventSink) -> None:
        if sink in self._sinks:
            self._sinks.remove(sink)

    def emit(self, kind: str, **data: Any) -> None:
        event = Event(kind, data)
        for sink in self._sinks:
            try:
                sink(event)
            except Exception:  # noqa: BLE001 - a broken display must not stop work on hosts
                pass
