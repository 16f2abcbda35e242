"""How the lines of one sweep chart stay apart when they coincide: a dash and a marker per series, and a legend
that gives each line's peak and says which lines draw the same curve."""

from __future__ import annotations

from html import escape

DASHES = ("", "7,3", "2,3", "9,3,2,3", "4,4", "12,4", "1,2", "6,2,2,2")  # one per series: coinciding lines interleave
MARKERS = ("circle", "square", "triangle", "diamond")
SAME_WITHIN = 0.01  # series within 1 % of each other at every size are one curve on the page: the legend says so


def coinciding(series: dict[str, list[tuple[int, float]]]) -> list[list[str]]:
    """Groups of series that draw the same curve (each point within SAME_WITHIN of the group's first series)."""
    groups: list[list[str]] = []
    for name, pts in series.items():
        mine = dict(pts)
        for group in groups:
            ref = dict(series[group[0]])
            if ref.keys() == mine.keys() and all(
                abs(mine[k] - v) <= SAME_WITHIN * max(abs(v), abs(mine[k]), 1e-9) for k, v in ref.items()
            ):
                group.append(name)
                break
        else:
            groups.append([name])
    return groups


def marker(kind: str, x: float, y: float, color: str) -> str:
    if kind == "circle":
        return f'<circle cx="{x:.1f}" cy="{y:.1f}" r="2.6" fill="{color}"/>'
    if kind == "square":
        return f'<rect x="{x - 2.4:.1f}" y="{y - 2.4:.1f}" width="4.8" height="4.8" fill="{color}"/>'
    if kind == "triangle":
        corners = [(x, y - 3.2), (x - 3, y + 2.4), (x + 3, y + 2.4)]
    else:
        corners = [(x, y - 3.4), (x + 3, y), (x, y + 3.4), (x - 3, y)]
    return f'<polygon points="{" ".join(f"{a:.1f},{b:.1f}" for a, b in corners)}" fill="{color}"/>'


def _num(value: float) -> str:
    """A peak in the legend: whole numbers from 100 up (388 Gb/s), one decimal below (23.4 Gb/s)."""
    return f"{value:.0f}" if value >= 100 else f"{value:.1f}"


def _peak(pts: list[tuple[int, float]]) -> float:
    return max((y for _, y in pts), default=0.0)


def series_legend(series: dict[str, list[tuple[int, float]]], style: dict[str, tuple[str, str, str]],
                   failed: frozenset[str] | set[str], unit: str, x: float, y: float, many: bool) -> str:  # fmt: skip
    """One entry per series with its peak; series on the same curve share an entry ("rail 0, rail 1: same
    curve"); past 8 series the failing ones by name and the others as one entry with their range of peaks."""
    out: list[str] = []
    entries: list[tuple[str, str, str, str]] = []  # text, colour, dash, marker shape
    if many:
        bad = [name for name in series if name in failed][:6]
        entries += [(f"{name}: {_num(_peak(series[name]))} {unit}", "#d62728", "", "") for name in bad]
        rest = [_peak(p) for name, p in series.items() if name not in failed]
        if rest:
            spread = _num(min(rest)) if _num(min(rest)) == _num(max(rest)) else f"{_num(min(rest))}-{_num(max(rest))}"
            entries.append((f"{len(rest)} others: {spread} {unit}", "#1f77b4", "", ""))
    else:
        for group in coinciding(series):
            color, dash, shape = style[group[0]]
            shape = shape if len(series) > 1 else ""  # a lone line is drawn without markers
            peak = f"{_num(_peak(series[group[0]]))} {unit}"
            if len(group) == 1:
                entries.append((f"{group[0]}: {peak}", color, dash, shape))
            else:
                entries.append((f"{len(group)} on one curve, {peak}:", color, dash, shape))
                entries += [(f"  {name}", style[name][0], style[name][1], style[name][2]) for name in group]
    for n, (text, color, dash, shape) in enumerate(entries):
        row = y + n * 15
        dashed = f' stroke-dasharray="{dash}"' if dash else ""
        out.append(f'<line x1="{x}" x2="{x + 18}" y1="{row + 5}" y2="{row + 5}" stroke="{color}" stroke-width="2"'
                   f"{dashed}/>")  # fmt: skip
        if shape:
            out.append(marker(shape, x + 9, row + 5, color))
        out.append(f'<text x="{x + 22}" y="{row + 9}" font-size="10">{escape(text)}</text>')
    return "".join(out)
