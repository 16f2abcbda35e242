"""Inline SVG charts for the HTML report: lines of Gb/s by message size, bars, and a heat map."""

from __future__ import annotations

import math
from html import escape

COLORS = ["#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd", "#8c564b", "#e377c2", "#7f7f7f"]


def line_chart(series: dict[str, list[tuple[int, float]]], *, unit: str, ref: float | None = None,
               width: int = 640, height: int = 260) -> str:  # fmt: skip
    """Lines over a log2 x axis of message sizes; ``ref`` draws the pass threshold."""
    points = [p for s in series.values() for p in s]
    if not points:
        return "<p><em>no data</em></p>"
    left, bottom, top, right = 56, 34, 12, 200
    xs = [math.log2(max(1, x)) for x, _ in points]
    x0, x1 = min(xs), max(xs) or 1
    ymax = max([y for _, y in points] + [ref or 0]) * 1.1 or 1
    w, h = width - left - right, height - top - bottom

    def px(x: float) -> float:
        return left + (math.log2(max(1, x)) - x0) / max(1e-9, x1 - x0) * w

    def py(y: float) -> float:
        return top + h - y / ymax * h

    out = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" role="img">']
    out.append(f'<rect x="{left}" y="{top}" width="{w}" height="{h}" fill="#fafafa" stroke="#ccc"/>')
    for k in range(5):
        y = ymax * k / 4
        out.append(f'<text x="{left - 6}" y="{py(y) + 4:.1f}" font-size="10" text-anchor="end">{y:.0f}</text>')
        out.append(f'<line x1="{left}" x2="{left + w}" y1="{py(y):.1f}" y2="{py(y):.1f}" stroke="#eee"/>')
    for x in sorted({x for x, _ in points}):
        if int(math.log2(max(1, x))) % 3 == 1:
            label = _size(x)
            out.append(f'<text x="{px(x):.1f}" y="{top + h + 14}" font-size="10" text-anchor="middle">{label}</text>')
    out.append(f'<text x="{left + w / 2}" y="{height - 4}" font-size="11" text-anchor="middle">message size</text>')
    out.append(f'<text x="12" y="{top + h / 2}" font-size="11" transform="rotate(-90 12 {top + h / 2})" '
               f'text-anchor="middle">{escape(unit)}</text>')  # fmt: skip
    if ref:
        out.append(f'<line x1="{left}" x2="{left + w}" y1="{py(ref):.1f}" y2="{py(ref):.1f}" stroke="#d62728" '
                   'stroke-dasharray="5,4"/>')  # fmt: skip
        out.append(f'<text x="{left + w - 4}" y="{py(ref) + 12:.1f}" font-size="10" fill="#d62728" '
                   f'text-anchor="end">pass {ref:.1f}</text>')  # fmt: skip
    for n, (name, pts) in enumerate(series.items()):
        color = COLORS[n % len(COLORS)]
        path = " ".join(f"{px(x):.1f},{py(y):.1f}" for x, y in sorted(pts))
        out.append(f'<polyline fill="none" stroke="{color}" stroke-width="2" points="{path}"/>')
        out.append(f'<rect x="{left + w + 10}" y="{top + 4 + n * 16}" width="10" height="10" fill="{color}"/>')
        out.append(f'<text x="{left + w + 24}" y="{top + 13 + n * 16}" font-size="11">{escape(name)}</text>')
    out.append("</svg>")
    return "".join(out)


def bar_chart(bars: list[tuple[str, float, float | None, bool]], *, unit: str, width: int = 640) -> str:
    """Horizontal bars (label, value, expected, ok); the expected value is a thin outline."""
    if not bars:
        return "<p><em>no data</em></p>"
    left, row = 230, 24
    vmax = max([v for _, v, _, _ in bars] + [e or 0 for _, _, e, _ in bars]) or 1
    w = width - left - 70
    height = row * len(bars) + 10
    out = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" role="img">']
    for i, (label, value, expected, ok) in enumerate(bars):
        y = 5 + i * row
        color = "#2ca02c" if ok else "#d62728"
        out.append(f'<text x="{left - 6}" y="{y + 15}" font-size="11" text-anchor="end">{escape(label)}</text>')
        if expected:
            out.append(f'<rect x="{left}" y="{y + 2}" width="{expected / vmax * w:.1f}" height="{row - 6}" '
                       'fill="none" stroke="#999" stroke-dasharray="3,2"/>')  # fmt: skip
        out.append(f'<rect x="{left}" y="{y + 2}" width="{value / vmax * w:.1f}" height="{row - 6}" fill="{color}"/>')
        out.append(f'<text x="{left + value / vmax * w + 4:.1f}" y="{y + 15}" font-size="11">'
                   f'{value:.1f} {escape(unit)}</text>')  # fmt: skip
    out.append("</svg>")
    return "".join(out)


def heat_map(
    hosts: list[str],
    cells: dict[tuple[str, str], tuple[float | None, float | None]],
    *,
    cols: list[str] | None = None,
    size: int = 70,
) -> str:
    """Rows x columns (host x host, or one pair's rail x rail) coloured by the share of the expected rate
    (red < 75 % <= amber < 90 % <= green); the diagonal of a host x host map is the host itself."""
    cols = cols or hosts
    left, top = 110, 90
    n = len(hosts)
    width, height = left + len(cols) * size + 60, top + n * size + 10
    out = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" role="img">']
    for i, h in enumerate(hosts):
        out.append(f'<text x="{left - 6}" y="{top + i * size + size / 2 + 4}" font-size="11" '
                   f'text-anchor="end">{escape(h)}</text>')  # fmt: skip
    for i, h in enumerate(cols):
        x = left + i * size + size / 2
        out.append(f'<text x="{x}" y="{top - 8}" font-size="11" transform="rotate(-40 {x} {top - 8})">'
                   f"{escape(h)}</text>")  # fmt: skip
    for i, a in enumerate(hosts):
        for j, b in enumerate(cols):
            value, expected = cells.get((a, b)) or cells.get((b, a)) or (None, None)
            x, y = left + j * size, top + i * size
            if a == b and cols is hosts:
                color, text = "#eee", "-"
            elif value is None or not expected:
                color, text = "#bbb", "n/a"
            else:
                share = value / expected
                color = "#2ca02c" if share >= 0.9 else "#ffbf00" if share >= 0.75 else "#d62728"
                text = f"{value:.0f}"
            out.append(f'<rect x="{x}" y="{y}" width="{size - 2}" height="{size - 2}" fill="{color}"/>')
            out.append(f'<text x="{x + size / 2 - 1}" y="{y + size / 2 + 4}" font-size="12" text-anchor="middle" '
                       f'fill="#111">{text}</text>')  # fmt: skip
    out.append("</svg>")
    return "".join(out)


def _size(n: int) -> str:
    for unit, div in (("M", 1 << 20), ("K", 1 << 10)):
        if n >= div:
            return f"{n // div}{unit}"
    return str(n)
