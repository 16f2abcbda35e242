"""A text bar chart with axes: rate (y, 0 .. line rate, with its unit) over message size (x, log2, 2 B .. 8 MiB),
the pass line drawn at the rate the engine judges by (PASS_RATIO of the line rate)."""

from __future__ import annotations

import math
from dataclasses import dataclass, field

from rich.text import Text
from textual.widget import Widget

from wizard.validate.model import PASS_RATIO
from wizard.validate.svg import nice_ceiling, size_label

BLOCKS = " ▁▂▃▄▅▆▇█"
X_RANGE = (1, 23)  # ib_write_bw -a sweeps 2 B .. 8 MiB
PASS_MARK = "╌"
PASS_STYLE = "red"


def chart(points: dict[int, float], *, top: float | None, unit: str, rows: int = 4, color: str = "cyan",
          note: str = "", mark: float | None = None, width: int | None = None) -> Text:  # fmt: skip
    """Bars of ``points`` (message bytes -> rate) under a y axis from 0 to ``top`` (the line rate) and over an
    x axis of message sizes, one column per power of two (two where ``width`` allows). ``mark`` (the pass rate)
    is drawn as a dashed line across the empty cells of the text row it falls in, labelled at its right end."""
    logs = {round(math.log2(max(1, size))): rate for size, rate in points.items()}
    lo = min([X_RANGE[0], *logs])
    hi = max([X_RANGE[1], *logs])
    ymax = top or nice_ceiling(max(logs.values(), default=0.0))
    ticks = {0: f"{ymax:g}", rows // 2: f"{ymax / 2:g}"} if rows >= 3 else {0: f"{ymax:g}"}
    lw = max(len(unit), *(len(t) for t in ticks.values()), 1)
    mark_label = f" pass {mark:g}" if mark else ""
    cw = 2 if hi - lo < 32 else 1
    if width is not None and lw + 1 + (hi - lo + 1) * cw + len(mark_label) > width:
        mark_label = ""  # a narrow pane: the title line above says where the pass line is
        if lw + 1 + (hi - lo + 1) * cw > width:
            cw = 1  # narrower still: one column per size keeps every line whole
    # The text row whose band [floor, floor + ymax / rows) holds the pass rate.
    mark_row = rows - 1 - min(rows - 1, int(mark / ymax * rows)) if mark and mark <= ymax else None
    out = Text(no_wrap=True, overflow="crop")
    out.append(f"{unit:>{lw}}", style="bold")
    out.append(f"  {note}\n" if note else "\n", style="dim")
    for r in range(rows):
        out.append(f"{ticks.get(r, ''):>{lw}}" + ("┤" if r in ticks else "│"), style="dim")
        floor = (rows - 1 - r) / rows * ymax  # the rate at the bottom of this text row
        for x in range(lo, hi + 1):
            rate = logs.get(x)
            eighths = 0
            if rate is not None:
                eighths = max(0, min(8, round((rate - floor) / ymax * rows * 8)))
                if r == rows - 1 and rate > 0 and eighths == 0:
                    eighths = 1  # a measured but tiny rate still shows
            if eighths == 0 and r == mark_row:
                out.append(PASS_MARK * cw, style=PASS_STYLE)
            elif rate is None:
                out.append(" " * cw)
            else:
                out.append(BLOCKS[eighths] * cw, style=color)
        if r == mark_row:
            out.append(mark_label, style=PASS_STYLE)
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
    sizes = " " * (lw + 1) + "".join(line).rstrip()
    fits = width is None or len(sizes) + 14 <= width
    out.append(sizes + ("  message size" if fits else ""), style="dim")
    return out


@dataclass
class Sweep:
    """One pair's sweep on one rail as it arrives: the chart shows it, the page keeps every pair's."""

    label: str
    points: dict[int, float] = field(default_factory=dict)
    title: str = ""
    top: float | None = None  # the line rate: the y axis ends there, the pass line is PASS_RATIO of it
    color: str = "cyan"
    graded: bool = True  # judged against the line rate (NCCL's bus bandwidth is not)

    def __post_init__(self) -> None:
        self.title = self.title or self.label


class SweepChart(Widget):
    """One rail's sweep: a title line with the rate so far, then the chart with its pass line."""

    DEFAULT_CSS = "SweepChart { height: auto; width: 1fr; margin-bottom: 1; }"

    def __init__(self, key: str, label: str, *, unit: str = "Gb/s", rows: int = 4) -> None:
        super().__init__(id=f"chart-{key}")
        self.unit = unit
        self.rows = rows
        self.sweep = Sweep(label, graded=unit == "Gb/s")

    @property
    def points(self) -> dict[int, float]:
        return self.sweep.points

    @property
    def top(self) -> float | None:
        return self.sweep.top

    @property
    def title(self) -> str:
        return self.sweep.title

    def show(self, sweep: Sweep) -> None:
        """Draw this sweep (another pair's, or the same one grown)."""
        self.sweep = sweep
        self.refresh(layout=True)

    def render(self) -> Text:
        """The title (broken before the rate when the pane is narrow), then the chart, never wrapped."""
        s = self.sweep
        width = self.size.width or None
        title = Text.from_markup(s.title)
        if width is not None and title.cell_len > width and "  " in title.plain:
            title = Text("\n").join(title.split("  "))
        out = Text(no_wrap=True, overflow="crop")
        out.append_text(title)
        out.append("\n")
        mark = PASS_RATIO * s.top if s.top and s.graded else None
        note = f"pass >= {mark:g} ({PASS_RATIO:.0%} of the {s.top:g} line rate)" if mark else ""
        out.append_text(chart(s.points, top=s.top, unit=self.unit, rows=self.rows, color=s.color, note=note,
                              mark=mark, width=width))  # fmt: skip
        return out
