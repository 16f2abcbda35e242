"""What the bandwidth page writes once results are in: the verdict lines and the cross-rail grids (no Textual)."""

from __future__ import annotations

from rich.markup import escape
from rich.text import Text

from screens.heatmap import grid
from wizard.validate.model import PASS_RATIO, Report

NCCL_OFF = "off for this test (--no-nccl, --incast or --cross-rail)"
CrossCells = dict[tuple[str, str], dict[tuple[int, int], tuple[float | None, float | None]]]


def verdict_text(report: Report, *, nccl_seen: bool) -> str:
    """The Results tab's summary: the verdict and its threshold, the pairs, incast, lint, NCCL (or why it did not
    run) and the likely causes."""
    color = "green" if report.verdict == "pass" else "red"
    lines = [f"[b {color}]Verdict: {report.verdict.upper()}[/]  (a rail passes at >= {PASS_RATIO:.0%} of line rate)"]
    if len(report.aggregate) <= 4:
        lines += [
            f"  {a.hosts[0]} <-> {a.hosts[1]}: {a.gbps:.1f} of {a.expected_gbps:.0f} Gb/s all rails together"
            for a in report.aggregate
        ]
    else:  # the matrix tab shows every pair; here only how many failed
        slow = sum(a.status != "pass" for a in report.aggregate)
        lines.append(f"  all rails together: {len(report.aggregate)} host pairs, {slow} below the pass mark (m)")
    if report.incast:
        bad = sum(x.status == "fail" for x in report.incast)
        lines.append(f"  incast: {len(report.incast) - bad}/{len(report.incast)} rounds pass (Incast tab)")
    failed = [i for i in report.lint if i.status != "pass"]
    lines.append(f"  lint: {len(report.lint) - len(failed)}/{len(report.lint)} pass")
    if not nccl_seen:
        lines.append(f"  NCCL: not run: {escape(report.nccl.reason or NCCL_OFF)}")
    elif not report.nccl.busbw:
        lines.append(f"  NCCL: did not run: {escape(report.nccl.reason or 'no result')}")
    lines += [f"  cause {n}: {escape(c)}" for n, c in enumerate(report.causes[:6], 1)]
    return "\n".join(lines)


def cross_text(cross: CrossCells) -> Text:
    """Rail x rail of each pair (client rail down, server rail across), % of line rate; the diagonal, rail i to
    rail i, is the per-rail test, not a path through the spine, and stays blank."""
    out = Text()
    for (client, server), cells in cross.items():
        n = max(max(i, j) for i, j in cells) + 1
        names = [f"rail {i}" for i in range(n)]
        title = f"cross-rail {client} (rows: its rail) -> {server} (columns: its rail), % of line rate"
        out.append(f"\n{title}\n", "bold")
        out.append_text(grid(names, names, lambda a, b, c=cells: c.get((int(a[5:]), int(b[5:]))), diagonal=True))
    return out
