"""Inline SVG charts for the HTML report: rate over message size with axes and units, bars, and heat maps."""

from __future__ import annotations

import math
from collections.abc import Callable
from html import escape

from wizard.validate.model import PASS_RATIO, WARN_RATIO, share_band
from wizard.validate.svg_series import DASHES, MARKERS, marker, series_legend

COLORS = ["#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd", "#8c564b", "#e377c2", "#7f7f7f"]
BANDS = {"pass": "#2ca02c", "warn": "#ffbf00", "fail": "#d62728", "none": "#8e44ad", "wait": "#eeeeee"}
BAND_TEXT = {
    "pass": f"&#8805; {PASS_RATIO:.0%} of line rate",
    "warn": f"{WARN_RATIO:.0%} &#8211; {PASS_RATIO:.0%}",
    "fail": f"&lt; {WARN_RATIO:.0%}",
    "none": "no result",
    "wait": "not measured",
}
X_RANGE = (1, 23)  # ib_write_bw -a: 2 B .. 8 MiB
X_LABELS = (1, 6, 10, 15, 20, 23, 27, 30, 33)


def band(value: float | None, expected: float | None) -> str:
    return share_band(value / expected if value is not None and expected else None)


def size_label(n: int) -> str:
    """2 B, 64 B, 1 KiB, 32 KiB, 1 MiB, 8 MiB."""
    for unit, shift in (("GiB", 30), ("MiB", 20), ("KiB", 10)):
        if n >= 1 << shift:
            return f"{n >> shift} {unit}"
    return f"{n} B"


def nice_ceiling(value: float) -> float:
    """A round axis top above ``value``: 1, 2, 2.5 or 5 times a power of ten."""
    if value <= 0:
        return 1.0
    base = 10 ** math.floor(math.log10(value))
    return next(m * base for m in (1, 2, 2.5, 5, 10) if m * base >= value)


CHAR_W = 0.62  # a label's width per character, in font sizes (sans-serif digits and letters run 0.5-0.6)
LABEL_GAP = 6.0  # pixels kept free between two tick labels


def text_width(text: str, font: float) -> float:
    """An upper estimate of a label's width in pixels: what the layout keeps clear for it."""
    return len(text) * font * CHAR_W


def x_ticks(x0: int, x1: int, px: Callable[[float], float], font: float = 10) -> list[tuple[int, float, str]]:
    """Message-size tick labels (exponent, x, text) that fit side by side: the ends first, then the usual sizes
    left to right, each kept only if its extent (centred on its tick) clears every label kept so far."""
    wanted = [x1, x0, *(e for e in X_LABELS if x0 < e < x1)]
    kept: list[tuple[int, float, str]] = []
    spans: list[tuple[float, float]] = []
    for e in wanted:
        text, x = size_label(2**e), px(2**e)
        half = text_width(text, font) / 2
        span = (x - half, x + half)
        if all(span[1] + LABEL_GAP <= a or span[0] >= b + LABEL_GAP for a, b in spans):
            kept.append((e, x, text))
            spans.append(span)
    return sorted(kept)


def _svg(width: float, height: float, label: str) -> str:
    return (f'<svg xmlns="http://www.w3.org/2000/svg" width="{width:.0f}" height="{height:.0f}" role="img" '
            f'aria-label="{escape(label)}">')  # fmt: skip


def sweep_chart(series: dict[str, list[tuple[int, float]]], *, unit: str, line: float | None = None,
                failed: frozenset[str] | set[str] = frozenset(), title: str = "", width: int = 520,
                height: int = 250, legend: bool = True, graded: bool = True, label: str = "") -> str:  # fmt: skip
    """Rate (y, 0 .. the line rate, in ``unit``) over message size (x, log2, 2 B .. 8 MiB); one line per series,
    each with its own colour, dash and marker so that lines on top of each other stay visible, failing series in
    red, the pass mark dashed (``graded``: judged against ``line``). The legend gives each series' peak; series
    that draw the same curve share one entry that says so. More than 8 series are drawn thin and summed up."""
    points = [p for s in series.values() for p in s]
    if not points:
        return "<p><em>no data</em></p>"
    logs = [math.log2(max(1, x)) for x, _ in points]
    x0, x1 = min(X_RANGE[0], math.floor(min(logs))), max(X_RANGE[1], math.ceil(max(logs)))
    top = max(line or 0, nice_ceiling(max(y for _, y in points)) if not line else 0) or 1
    top = max(top, max(y for _, y in points))
    left, right, upper, bottom = 58, (190 if legend else 16), 26, 46
    w, h = width - left - right, height - upper - bottom

    def px(x: float) -> float:
        return left + (math.log2(max(1, x)) - x0) / max(1, x1 - x0) * w

    def py(y: float) -> float:
        return upper + h - y / top * h

    out = [_svg(width, height, label or title or f"{unit} by message size")]  # label: a name that stays put
    if title:
        out.append(f'<text x="{left}" y="14" font-size="12" font-weight="600">{escape(title)}</text>')
    out.append(f'<rect x="{left}" y="{upper}" width="{w}" height="{h}" fill="#fafafa" stroke="#bbb"/>')
    for k in range(5):
        y = top * k / 4
        out.append(f'<line x1="{left}" x2="{left + w}" y1="{py(y):.1f}" y2="{py(y):.1f}" stroke="#e6e6e6"/>')
        out.append(f'<text x="{left - 5}" y="{py(y) + 4:.1f}" font-size="10" text-anchor="end">{y:g}</text>')
    for e in range(x0, x1 + 1):
        x = px(2**e)
        out.append(f'<line x1="{x:.1f}" x2="{x:.1f}" y1="{upper + h}" y2="{upper + h + 4}" stroke="#888"/>')
    for _e, x, text in x_ticks(x0, x1, px):  # thinned so that no two labels touch, whatever the range
        out.append(f'<text x="{x:.1f}" y="{upper + h + 16}" font-size="10" text-anchor="middle" class="xtick">'
                   f"{text}</text>")  # fmt: skip
    out.append(f'<text x="{left + w / 2}" y="{height - 6}" font-size="11" text-anchor="middle">'
               "message size (bytes, log2 scale)</text>")  # fmt: skip
    mid = upper + h / 2
    out.append(f'<text x="14" y="{mid}" font-size="11" transform="rotate(-90 14 {mid})" '
               f'text-anchor="middle">{escape(unit)}</text>')  # fmt: skip
    if line and graded:
        ref = PASS_RATIO * line
        out.append(f'<line x1="{left}" x2="{left + w}" y1="{py(ref):.1f}" y2="{py(ref):.1f}" stroke="#d62728" '
                   'stroke-dasharray="5,4" class="passline"/>')  # fmt: skip
        out.append(f'<text x="{left + 4}" y="{py(ref) - 3:.1f}" font-size="10" fill="#d62728">pass {ref:g} '
                   f"{escape(unit)} ({PASS_RATIO:.0%} of {line:g})</text>")  # fmt: skip
    many = len(series) > len(COLORS)
    style: dict[str, tuple[str, str, str]] = {}  # name -> colour, dash, marker
    for n, (name, pts) in enumerate(series.items()):
        bad = name in failed
        color = "#d62728" if bad else ("#1f77b4" if many else COLORS[n % len(COLORS)])
        dash = "" if many else DASHES[n % len(DASHES)]
        style[name] = (color, dash, MARKERS[n % len(MARKERS)])
        path = " ".join(f"{px(x):.1f},{py(y):.1f}" for x, y in sorted(pts))
        stroke = 2 if bad or not many else 1
        opacity = "" if bad or not many else ' stroke-opacity="0.45"'
        dashed = f' stroke-dasharray="{dash}"' if dash else ""
        out.append(f'<polyline fill="none" stroke="{color}" stroke-width="{stroke}"{opacity}{dashed} points="{path}">'
                   f"<title>{escape(name)}</title></polyline>")  # fmt: skip
        if not many and len(series) > 1:
            out += [marker(style[name][2], px(x), py(y), color) for x, y in sorted(pts)[n % 3 :: 3]]
    if legend:
        out.append(series_legend(series, style, failed, unit, left + w + 10, upper + 4, many))
    out.append("</svg>")
    return "".join(out)


def bar_chart(bars: list[tuple[str, float, float | None, bool]], *, unit: str, width: int = 640,
              axis_title: str = "") -> str:  # fmt: skip
    """Horizontal bars (label, value, expected, ok) over a value axis from 0 with ticks, gridlines and its title
    (``axis_title``, else the unit); the expected value is a dashed outline."""
    if not bars:
        return "<p><em>no data</em></p>"
    left, row, axis_h = 230, 24, 40
    vmax = nice_ceiling(max([v for _, v, _, _ in bars] + [e or 0 for _, _, e, _ in bars]) or 1)
    w = width - left - 70
    plot_h = row * len(bars) + 6
    height = plot_h + axis_h
    out = [_svg(width, height, f"bars in {unit}")]
    for k in range(5):  # value axis: ticks, gridlines and labels at quarters of a round maximum
        value = vmax * k / 4
        x = left + value / vmax * w
        out.append(f'<line x1="{x:.1f}" x2="{x:.1f}" y1="2" y2="{plot_h}" stroke="#e6e6e6"/>')
        out.append(f'<line x1="{x:.1f}" x2="{x:.1f}" y1="{plot_h}" y2="{plot_h + 4}" stroke="#888"/>')
        out.append(f'<text x="{x:.1f}" y="{plot_h + 15}" font-size="10" text-anchor="middle" class="xtick">'
                   f"{value:g}</text>")  # fmt: skip
    out.append(f'<line x1="{left}" x2="{left + w}" y1="{plot_h}" y2="{plot_h}" stroke="#888"/>')
    out.append(f'<line x1="{left}" x2="{left}" y1="2" y2="{plot_h}" stroke="#888"/>')
    out.append(f'<text x="{left + w / 2:.1f}" y="{height - 4}" font-size="11" text-anchor="middle">'
               f"{escape(axis_title or unit)}</text>")  # fmt: skip
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
    rows: list[str],
    cells: dict[tuple[str, str], tuple[float | None, float | None]],
    *,
    cols: list[str] | None = None,
    size: int | None = None,
    title: str = "",
    row_title: str = "",
    col_title: str = "",
    diagonal: bool = True,
    symmetric: bool = True,
    legend: bool = True,
    unit: str = "Gb/s",
) -> str:
    """Rows x columns (host x host, or one pair's rail x rail) coloured by the share of the expected rate, with
    the share in percent in each cell when it is big enough, axis titles, a legend and a tooltip per cell.
    ``cells`` maps (row, column) to (value, expected); ``symmetric``: a pair measured once is looked up both ways."""
    cols = cols or rows
    size = size or (34 if len(cols) <= 16 else 22 if len(cols) <= 32 else 12)
    label_w = max(40, 7 * max((len(r) for r in rows), default=4) + 10)
    left, upper = label_w + 18, 30 + 7 * max((len(c) for c in cols), default=4)
    grid_w, grid_h = len(cols) * size, len(rows) * size
    title_w = text_width(title, 12) + 6 if title else 0  # a small map is at least as wide as its title
    width = max(left + grid_w + 10, 640 if legend else 0, title_w)
    height = upper + grid_h + (48 if legend else 10)
    out = [_svg(width, height, title or "heat map")]
    if title:
        out.append(f'<text x="2" y="14" font-size="12" font-weight="600">{escape(title)}</text>')
    mid = upper + grid_h / 2
    out.append(f'<text x="10" y="{mid}" font-size="11" transform="rotate(-90 10 {mid})" text-anchor="middle">'
               f"{escape(row_title)}</text>")  # fmt: skip
    out.append(f'<text x="{left + grid_w / 2}" y="28" font-size="11" text-anchor="middle">{escape(col_title)}</text>')
    font = 11 if size >= 30 else 9
    for i, r in enumerate(rows):
        out.append(f'<text x="{left - 4}" y="{upper + i * size + size / 2 + 4}" font-size="{font}" '
                   f'text-anchor="end">{escape(r)}</text>')  # fmt: skip
    for j, c in enumerate(cols):
        x, y = left + j * size + size / 2 + 3, upper - 4
        out.append(f'<text x="{x}" y="{y}" font-size="{font}" transform="rotate(-60 {x} {y})">{escape(c)}</text>')
    for i, a in enumerate(rows):
        for j, b in enumerate(cols):
            x, y = left + j * size, upper + i * size
            if diagonal and i == j:
                out.append(f'<rect x="{x}" y="{y}" width="{size - 1}" height="{size - 1}" fill="#f7f7f7"/>')
                continue
            found = cells.get((a, b)) or (cells.get((b, a)) if symmetric else None)
            kind = "wait" if found is None else band(*found)
            value, expected = found or (None, None)
            share = f"{value / expected:.0%}" if value is not None and expected else BAND_TEXT[kind]
            tip = f"{a} x {b}: " + (f"{value:.1f} of {expected:g} {unit} ({share})" if value is not None and expected
                                    else share)  # fmt: skip
            out.append(f'<rect x="{x}" y="{y}" width="{size - 1}" height="{size - 1}" fill="{BANDS[kind]}" '
                       f'data-band="{kind}"><title>{escape(tip)}</title></rect>')  # fmt: skip
            if size >= 20 and kind != "wait":
                text = "n/a" if value is None or not expected else f"{min(999, round(value / expected * 100))}"
                fill = "#fff" if kind in ("fail", "none") else "#111"
                out.append(f'<text x="{x + size / 2 - 0.5}" y="{y + size / 2 + 3}" font-size="{font - 1}" '
                           f'text-anchor="middle" fill="{fill}">{text}</text>')  # fmt: skip
    if legend:
        out.append(_legend(2, upper + grid_h + 14, "numbers: % of line rate"))
    out.append("</svg>")
    return "".join(out)


def _legend(x: float, y: float, note: str) -> str:
    out = []
    for kind in ("pass", "warn", "fail", "none", "wait"):
        out.append(f'<rect x="{x}" y="{y}" width="12" height="12" fill="{BANDS[kind]}" stroke="#ccc"/>')
        out.append(f'<text x="{x + 16}" y="{y + 10}" font-size="10">{BAND_TEXT[kind]}</text>')
        shown = BAND_TEXT[kind].replace("&#8805;", "=").replace("&#8211;", "-").replace("&lt;", "<")
        x += 16 + text_width(shown, 10) + 10
    out.append(f'<text x="{x}" y="{y + 10}" font-size="10" fill="#555">{escape(note)}</text>')
    return "".join(out)
