"""The engine process's events on their way to the screen: output lines gathered, long outputs cut.

A discovery batch prints tens of thousands of lines per host and an ``ethtool -S`` dump 1,600 per port; the log pane
shows a command's first few output lines and folds the rest into one line (screens/log_buffer.py). So consecutive
output events of one host are sent as one, with only their first ``SHOWN`` lines and the number of the others
(``more``): the screen decodes a few lines instead of every one, and still folds exactly as it would have. Every line
is in the host's log file, which the engine process writes itself.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import Any

from wizard.engine.events import Event

SHOWN = 8
"""Lines of one output run sent in full: at least what the log pane shows before folding (HEAD + SLACK there)."""
LINGER_S = 0.05
"""How long a run of output waits for more lines of the same command before it is sent anyway (a slow command's
lines still reach the pane within a frame or two)."""

Send = Callable[[dict[str, Any]], None]


class OutputCoalescer:
    """Forwards events in order; consecutive output of one host and stream goes as one message."""

    def __init__(self, send: Send) -> None:
        self.send = send
        self._key: tuple[str, str] | None = None
        self._first: dict[str, Any] | None = None
        self._lines: list[str] = []
        self._more = 0
        self._timer: asyncio.TimerHandle | None = None

    def event(self, event: Event) -> None:
        if event.kind != "output":
            self.flush()
            self.send(event.to_json_dict())
            return
        data = event.data
        key = (data["host"], data.get("stream", "stdout"))
        if key != self._key:
            self.flush()
            self._key, self._first = key, event.to_json_dict()
            self._first.pop("line", None)
            self._first.pop("lines", None)
            self._schedule()
        lines = data["lines"] if "lines" in data else [data["line"]]
        room = SHOWN - len(self._lines)
        if room > 0:
            self._lines.extend(lines[:room])
        self._more += max(0, len(lines) - max(room, 0))

    def flush(self) -> None:
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None
        if self._first is None:
            return
        message = {**self._first, "lines": self._lines}
        if self._more:
            message["more"] = self._more
        self._key, self._first, self._lines, self._more = None, None, [], 0
        self.send(message)

    def _schedule(self) -> None:
        try:
            loop = asyncio.get_running_loop()
        except RuntimeError:
            return  # not on a loop (a test feeding events by hand): sent at the next event or flush
        self._timer = loop.call_later(LINGER_S, self.flush)


def event_from_message(message: dict[str, Any]) -> Event:
    """An engine process's event line as the Event the runner emitted (``more`` kept in its data)."""
    data = dict(message)
    kind = data.pop("event")
    when = data.pop("time", "")
    return Event(kind, data, when) if when else Event(kind, data)
