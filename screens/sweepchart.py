"""A text bar chart with axes: rate (y, 0 .. line rate, with its unit) over message size (x, log2, 2 B .. 8 MiB)."""

from __future__ import annotations

import math

from rich.text import Text
from textual.widget import Widget

from wizard.validate.model import PASS_RATIO
from wizard.validate.svg import nice_ceiling, size_label

BLOCKS = " ▁▂▃▄▅▆▇█"
X_RANGE = (1, 23)  # ib_write_bw -a sweeps 2 B .. 8 MiB


def chart(points: dict[int, float], *, top: float | None, unit: str, rows: int = 4, color: str = "cyan",
          note: str = "") -> Text:  # fmt: skip
    """Bars of ``points`` (message bytes -> rate) under a y axis from 0 to ``top`` (the line rate) and over an
    x axis of message sizes, one column per power of two."""
    logs = {round(math.log2(max(1, size))): rate for size, rate in points.items()}
    lo = min([X_RANGE[0], *logs])
    hi = max([X_RANGE[1], *logs])
    cw = 2 if hi - lo < 32 else 1
    ymax = top or nice_ceiling(max(logs.values(), default=0.0))
    ticks = {0: f"{ymax:g}", rows // 2: f"{ymax / 2:g}"} if rows >= 3 else {0: f"{ymax:g}"}
    lw = max(len(unit), *(len(t) for t in ticks.values()), 1)
    out = Text(no_wrap=True, overflow="crop")
    out.append(f"{unit:>{lw}}", style="bold")
    out.append(f"  {note}\n" if note else "\n", style="dim")
    for r in range(rows):
        out.append(f"{ticks.get(r, ''):>{lw}}" + ("┤" if r in ticks else "│"), style="dim")
        floor = (rows - 1 - r) / rows * ymax  # the rate at the bottom of this text row
        for x in range(lo, hi + 1):
            rate = logs.get(x)
            if rate is None:
                out.append(" " * cw)
                continue
            eighths = max(0, min(8, round((rate - floor) / ymax * rows * 8)))
            if r == rows - 1 and rate > 0 and eighths == 0:
                eighths = 1  # a measured but tiny rate still shows
            out.append(BLOCKS[eighths] * cw, style=color)
        out.append("\n")
    labels = [x for x in (1, 6, 10, 15, 20, 23, 30) if lo <= x <= hi]
    axis = ["─"] * ((hi - lo + 1) * cw)
    for x in labels:
        axis[(x - lo) * cw] = "┬"
    out.append(f"{'0':>{lw}}└" + "".join(axis) + "\n", style="dim")
    line = [" "] * ((hi - lo + 1) * cw + 12)
    end = -1
    for x in labels:
        text, at = size_label(1 << x), (x - lo) * cw
        at = max(at - len(text) // 2, end + 2)
        if at + len(text) > len(line):
            continue
        line[at : at + len(text)] = text
        end = at + len(text)
    out.append(" " * (lw + 1) + "".join(line).rstrip() + "  message size", style="dim")
    return out


class SweepChart(Widget):
    """One rail's latest sweep, live: a title line with the rate so far, then the chart."""

    DEFAULT_CSS = "SweepChart { height: auto; width: 1fr; margin-bottom: 1; }"

    def __init__(self, key: str, label: str, *, unit: str = "Gb/s", rows: int = 4) -> None:
        super().__init__(id=f"chart-{key}")
        self.label_text = label
        self.title = label
        self.unit = unit
        self.rows = rows
        self.points: dict[int, float] = {}
        self.values: list[float] = []  # every rate in arrival order (the page's progress counter)
        self.top: float | None = None  # the line rate: the y axis ends there
        self.color = "cyan"

    def start(self, label: str) -> None:
        """A new pair on this rail: its sweep replaces the last one."""
        self.label_text = self.title = label
        self.points = {}
        self.color = "cyan"
        self.refresh(layout=True)

    def add(self, size: int, rate: float, note: str = "") -> None:
        self.points[size] = rate
        self.values.append(rate)
        self.title = f"{self.label_text}  [b]{rate:.2f} {self.unit}[/b] {note}".rstrip()
        self.refresh(layout=True)

    def finish(self, title: str, *, top: float | None = None, ok: bool | None = None) -> None:
        self.title = title
        self.top = top or self.top
        if ok is not None:
            self.color = "green3" if ok else "red3"
        self.refresh(layout=True)

    def render(self) -> Text:
        out = Text.from_markup(self.title + "\n")
        note = f"pass >= {PASS_RATIO * self.top:g} ({PASS_RATIO:.0%} of the {self.top:g} line rate)" if self.top else ""
        out.append_text(chart(self.points, top=self.top, unit=self.unit, rows=self.rows, color=self.color, note=note))
        return out
