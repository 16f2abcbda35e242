"""What the terminal-wizard benchmarks share: keys sent as a terminal sends them, each timed to the first frame
composed after its effect is seen, and the figures (median, p95) they print.

A key's latency runs from sending the key to the first frame composed after its effect is visible in the widgets
(a cursor moved, a list redrawn, a page shown); headless: the frame is built, only writing it to a terminal is
skipped. bench/tui_scale.py (fake events) and bench/tui_real.py (the namespace lab) both time keys this way.
"""

from __future__ import annotations

import asyncio
import bisect
import os
import statistics
import sys
import time
from collections.abc import Callable

from textual import events
from textual.app import App
from textual.keys import _character_to_key

Check = Callable[[], bool]


def command_line(module: str) -> str:
    """The command as the user typed it, for the first line of the output."""
    spec = sys.modules["__main__"].__spec__
    head = f"python -m bench.{module}" if spec is not None else f"python bench/{module}.py"
    return " ".join([head, *sys.argv[1:]])


class KeyTimer:
    """Sends keys and times each one to the first frame after its effect is seen."""

    def __init__(self, app: App[object]) -> None:
        self.app = app
        self.frames: list[float] = []
        self.results: dict[str, list[float]] = {}
        self.missed: dict[str, int] = {}
        self.verbose = bool(os.environ.get("TUI_SCALE_VERBOSE"))
        display = app._display

        def timed_display(screen, renderable) -> None:  # type: ignore[no-untyped-def]
            if renderable is not None:
                self.frames.append(time.perf_counter())
                if len(self.frames) > 10_000:  # a long run draws for minutes; only recent frames are looked up
                    del self.frames[:5_000]
            display(screen, renderable)

        app._display = timed_display  # type: ignore[method-assign]

    def frame_after(self, moment: float) -> float | None:
        """The first frame composed after ``moment``, if one was (frames are kept in time order)."""
        index = bisect.bisect_right(self.frames, moment)
        return self.frames[index] if index < len(self.frames) else None

    def _send(self, key: str) -> None:
        char = key if len(key) == 1 else None
        name = _character_to_key(key) if char and not key.isalnum() else key
        event = events.Key(name, char)
        event.set_sender(self.app)
        assert self.app._driver is not None
        self.app._driver.send_message(event)

    async def press(self, label: str, key: str, done: Check, timeout_s: float = 5.0) -> float | None:
        """Send ``key``, wait for ``done`` and the next frame; the latency is kept under ``label`` and returned."""
        started = time.perf_counter()
        self._send(key)
        unseen = started  # the last time the effect was not there yet
        while not done():
            unseen = time.perf_counter()
            if unseen - started > timeout_s:
                self.missed[label] = self.missed.get(label, 0) + 1
                print(f"no effect: {label} {key}", file=sys.stderr)
                return None
            await asyncio.sleep(0.001)
        # The frame showing the effect is the first one composed after the effect was last seen missing (the
        # effect and its frame can both fall between two 1 ms polls).
        while (frame := self.frame_after(unseen)) is None:
            if time.perf_counter() - unseen > timeout_s:
                self.missed[label] = self.missed.get(label, 0) + 1
                print(f"no frame after: {label} {key}", file=sys.stderr)
                return None
            await asyncio.sleep(0.001)
        self.results.setdefault(label, []).append(frame - started)
        if self.verbose:
            print(f"{label:<12} {key:<22} {(frame - started) * 1000:7.1f} ms", file=sys.stderr)
        await asyncio.sleep(0.02)  # an operator's keys are not back to back
        return frame - started


def drawn(widget: object) -> Check:
    """Done when the widget has redrawn since now."""
    before = widget.drawn  # type: ignore[attr-defined]
    return lambda: widget.drawn > before  # type: ignore[attr-defined]


def moved(table: object) -> Check:
    """Done when the table's cursor has moved."""
    before = table.cursor_row  # type: ignore[attr-defined]
    return lambda: table.cursor_row != before  # type: ignore[attr-defined]


def ms(seconds: float) -> str:
    return f"{seconds * 1000:.1f}"


def p95(values: list[float]) -> float:
    ordered = sorted(values)
    return ordered[max(0, min(len(ordered) - 1, int(round(len(ordered) * 0.95)) - 1))]


def latency_figures(values: list[float]) -> dict[str, float | int]:
    """Keys, median, p95 and max in ms, rounded for a JSON line."""
    return {
        "keys": len(values),
        "p50_ms": round(statistics.median(values) * 1000, 1),
        "p95_ms": round(p95(values) * 1000, 1),
        "max_ms": round(max(values) * 1000, 1),
    }


def rss_mib() -> float:
    """The process's resident memory now (VmRSS), in MiB."""
    with open("/proc/self/status", encoding="ascii") as status:
        for line in status:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
    return 0.0
