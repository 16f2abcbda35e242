"""Live all-pairs heat map: hosts x hosts coloured by share of line rate, per rail or all rails together."""

from __future__ import annotations

import os
from collections.abc import Callable, Iterable

from rich.text import Text
from textual.reactive import reactive
from textual.widget import Widget

from wizard.validate.model import PASS_RATIO, WARN_RATIO, PairCell, share_band

STYLES = {
    "pass": "black on green3",
    "warn": "black on yellow3",
    "fail": "bold white on red3",
    "none": "bold white on magenta",  # measured, but no rate came back (the test failed to run)
}
DIAGONAL, WAITING = "dim", "grey50"

Lookup = Callable[[str, str], "tuple[float | None, float | None] | None"]


band = share_band


def short_labels(names: list[str]) -> tuple[list[str], bool]:
    """Column labels: what is left of each name after the common prefix (gpu-001..gpu-016 -> 01..16), or the
    1-based position when that is still long (then True: the rows say which number is which host)."""
    prefix = os.path.commonprefix(names) if len(names) > 1 else ""
    rest = [n[len(prefix) :] or n for n in names]
    if max((len(r) for r in rest), default=0) <= 3:
        return rest, False
    return [str(i) for i in range(1, len(names) + 1)], True


def cell_width(n: int) -> int:
    """3 characters (two digits and a gap) up to 24 hosts, 2 up to 36, then 1 (colour only)."""
    return 3 if n <= 24 else 2 if n <= 36 else 1


def grid(rows: list[str], cols: list[str], lookup: Lookup, *, diagonal: bool, width: int | None = None) -> Text:
    """Rows x columns of cells; ``lookup`` gives (value, expected) or None when not measured yet. Each cell shows
    the share of the expected rate in percent (99 = 99 % or more) on a pass/warn/fail colour."""
    w = width or cell_width(len(cols))
    labels, numbered = short_labels(cols)
    row_names = [f"{i:>2} {r}" if numbered else r for i, r in enumerate(rows, 1)]
    lw = min(16, max((len(r) for r in row_names), default=4))
    out = Text(no_wrap=True, overflow="crop")
    depth = max((len(x) for x in labels), default=1)
    if depth < w:  # labels fit across: one header line
        out.append(" " * (lw + 1) + "".join(f"{x:>{w - 1}} " if w > 1 else x for x in labels) + "\n", style="bold")
    else:  # too narrow: the labels run down, one character a line
        for k in range(depth):
            line = "".join(f"{x.rjust(depth)[k]:>{w}}" for x in labels)
            out.append(" " * (lw + 1) + line + "\n", style="bold")
    for i, (a, name) in enumerate(zip(rows, row_names, strict=True)):
        out.append(f"{name[:lw]:>{lw}} ", style="bold")
        for j, b in enumerate(cols):
            text, style = _cell(a, b, lookup, w, diagonal and i == j)
            out.append(text[: w - 1] if w > 1 else text, style=style)
            if w > 1:
                out.append(text[w - 1 :])
        out.append("\n")
    return out


def _cell(a: str, b: str, lookup: Lookup, w: int, on_diagonal: bool) -> tuple[str, str]:
    digits = max(1, w - 1)
    if on_diagonal:
        return ("╲" * digits + " " * (w - digits))[:w], DIAGONAL
    found = lookup(a, b)
    if found is None:
        return ("·" * digits + " " * (w - digits))[:w], WAITING
    value, expected = found
    share = value / expected if value is not None and expected else None
    kind = band(share)
    if w == 1:
        return ("█" if share is not None else "x"), STYLES[kind].split(" on ")[-1]
    shown = "xx" if share is None else f"{min(99, round(share * 100)):>2}"
    return (shown[-digits:] + " ")[:w], STYLES[kind]


def legend(width: int = 3) -> Text:
    """What the colours mean, on one line."""
    out = Text(no_wrap=True, overflow="crop")
    sample = "99" if width > 1 else "█"
    for kind, label in (("pass", f">={PASS_RATIO:.0%}"), ("warn", f"{WARN_RATIO:.0%}-{PASS_RATIO:.0%}"),
                        ("fail", f"<{WARN_RATIO:.0%}")):  # fmt: skip
        out.append(sample, style=STYLES[kind] if width > 1 else STYLES[kind].split(" on ")[-1])
        out.append(f" {label}  ")
    out.append("xx", style=STYLES["none"])
    out.append(" no result  ")
    out.append("··", style=WAITING)
    out.append(" waiting")
    return out


class HeatMap(Widget):
    """The all-pairs matrix as it fills, one cell per host pair; ``rail`` None shows all rails together."""

    DEFAULT_CSS = "HeatMap { height: auto; width: auto; padding: 0 1; }"
    rail: reactive[int | None] = reactive(None)

    def __init__(self, hosts: Iterable[str] = (), *, id: str | None = None) -> None:  # noqa: A002 - textual's name
        super().__init__(id=id)
        self.hosts: list[str] = []
        self.cells: dict[frozenset[str], PairCell] = {}
        self.rail_lines: dict[tuple[frozenset[str], int], float] = {}  # measured line rate of one rail of a pair
        self.rails = 0
        self.pairs_total: int | None = None
        self.rounds_total: int | None = None
        self.add_hosts(hosts)

    # -- data -------------------------------------------------------------------------------------------------
    def add_hosts(self, names: Iterable[str]) -> None:
        new = [n for n in names if n and n not in self.hosts]
        if new:
            self.hosts.extend(new)
            self.refresh(layout=True)

    def add(self, cell: PairCell) -> None:
        self.add_hosts([cell.a, cell.b])
        self.cells[frozenset((cell.a, cell.b))] = cell
        self.rails = max(self.rails, len(cell.rails))
        self.refresh(layout=True)

    def expect(self, a: str, b: str, rail: int, line_gbps: float | None) -> None:
        """The line rate of one rail of a pair (from its together result); else the cell's total is split evenly."""
        if line_gbps:
            self.rail_lines[(frozenset((a, b)), rail)] = line_gbps
            self.rails = max(self.rails, rail + 1)

    def estimate(self, rounds: int, pairs: int) -> None:
        self.rounds_total, self.pairs_total = rounds, pairs
        self.refresh()

    def clear(self) -> None:
        self.cells.clear()
        self.rail_lines.clear()
        self.pairs_total = self.rounds_total = None
        self.refresh(layout=True)

    def value(self, a: str, b: str) -> tuple[float | None, float | None] | None:
        """(Gb/s, line Gb/s) of the pair on the shown rail, or None while it is not measured."""
        cell = self.cells.get(frozenset((a, b)))
        if cell is None:
            return None
        if self.rail is None:
            return cell.gbps, cell.expected_gbps
        if self.rail >= len(cell.rails):
            return None, None
        line = self.rail_lines.get((frozenset((a, b)), self.rail))
        if line is None and cell.expected_gbps and cell.rails:
            line = cell.expected_gbps / len(cell.rails)
        return cell.rails[self.rail], line

    # -- view -------------------------------------------------------------------------------------------------
    def cycle(self, step: int) -> None:
        """Next/previous view: all rails, rail 0, rail 1, ... and round again."""
        views: list[int | None] = [None, *range(self.rails)]
        self.rail = views[(views.index(self.rail) + step) % len(views)] if self.rail in views else None

    def watch_rail(self) -> None:
        self.refresh(layout=True)

    def title(self) -> str:
        view = "all rails together" if self.rail is None else f"rail {self.rail} of {self.rails or '?'}"
        done = f"{len(self.cells)}/{self.pairs_total}" if self.pairs_total else str(len(self.cells))
        return f"{view} - % of line rate - {done} pairs"

    def slowest(self) -> str:
        worst: tuple[float, str] | None = None
        for key in self.cells:
            a, b = sorted(key, key=self.hosts.index)
            got = self.value(a, b)
            if got is None:
                continue
            value, line = got
            share = (value / line) if value is not None and line else 0.0
            if worst is None or share < worst[0]:
                rate = f"{value:.0f}/{line:.0f} Gb/s ({share:.0%})" if value is not None and line else "no result"
                worst = (share, f"slowest {a} <-> {b}: {rate}")
        return worst[1] if worst else "no pair measured yet"

    def render(self) -> Text:
        w = cell_width(len(self.hosts))
        out = Text(no_wrap=True, overflow="crop")
        out.append(self.title() + "\n", style="bold")
        out.append_text(legend(w))
        out.append("\n")
        if self.hosts:
            out.append_text(grid(self.hosts, self.hosts, self.value, diagonal=True, width=w))
        out.append(self.slowest())
        return out
