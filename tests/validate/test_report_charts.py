"""The HTML report's charts read well (issue 25): coinciding rails stay visible, tick labels never overlap, the
heat map's title says what its cells are, every chart has axes, and NCCL is no empty chart when it did not run."""

from __future__ import annotations

import math
import re

from tests.validate import synthetic16
from tests.validate.test_pure import sample_report
from wizard.report.model import RunReport, StageTotal
from wizard.report.render import render as render_run
from wizard.validate import svg
from wizard.validate.html_report import render
from wizard.validate.model import NcclResult
from wizard.validate.report_sections import matrix_section, sweep_charts

SWEEP = [(2**e, min(400.0, 0.02 * 2**e)) for e in range(1, 24)]  # 2 B .. 8 MiB, flat at 400 from 32 KiB


def texts(chart: str, cls: str | None = None) -> list[tuple[float, str]]:
    """(x, text) of every <text> of a chart (of one class when given)."""
    pattern = r'<text x="([\d.]+)"[^>]*?' + (f'class="{cls}"' if cls else "") + r"[^>]*>([^<]*)</text>"
    return [(float(x), t) for x, t in re.findall(pattern, chart)]


def extents(labels: list[tuple[float, str]], font: float = 10) -> list[tuple[float, float]]:
    """Each centred label's horizontal extent at the widest a 10 px sans-serif character gets (0.62 em)."""
    return sorted((x - len(t) * font * 0.31, x + len(t) * font * 0.31) for x, t in labels)


def test_nccl_size_labels_up_to_8_gib_are_thinned_so_that_no_two_overlap():
    busbw = [(2**e, min(40.0, 2 ** (e - 25))) for e in range(3, 34)]  # 8 B .. 8 GiB
    chart = svg.sweep_chart({"busbw": busbw}, unit="GB/s", graded=False, width=640)
    labels = texts(chart, "xtick")
    shown = [t for _, t in labels]
    assert shown[0] == "2 B" and shown[-1] == "8 GiB", "both ends of the axis are labelled"
    assert "128 MiB1 GiB8 GiB" not in "".join(shown)
    spans = extents(labels)
    assert all(a[1] <= b[0] for a, b in zip(spans, spans[1:], strict=False)), f"labels overlap: {labels}"
    assert len(labels) >= 5, "thinned, not emptied"
    assert "passline" not in chart, "NCCL's bus bandwidth is not judged against a line rate"


def test_a_narrow_chart_keeps_fewer_labels_and_they_still_clear_each_other():
    for width in (260, 340, 520):
        labels = texts(svg.sweep_chart({"a": SWEEP}, unit="Gb/s", line=400, width=width, legend=False), "xtick")
        spans = extents(labels)
        assert all(a[1] <= b[0] for a, b in zip(spans, spans[1:], strict=False)), (width, labels)


def test_rails_on_the_same_curve_each_get_a_dash_and_marker_and_the_legend_says_they_coincide():
    series = {f"rail {i}": SWEEP for i in range(4)}
    chart = svg.sweep_chart(series, unit="Gb/s", line=400, width=640)
    lines = re.findall(r"<polyline[^>]*>", chart)
    dashes = [m.group(1) if (m := re.search(r'stroke-dasharray="([^"]*)"', tag)) else "" for tag in lines]
    assert len(set(dashes)) == 4, "every line its own dash pattern: lines on top of each other interleave"
    assert len(re.findall(r"<circle|<rect x=\"[\d.]+\" y=\"[\d.]+\" width=\"4.8\"|<polygon", chart)) > 4
    legend = [t for _, t in texts(chart)]
    assert "4 on one curve, 400 Gb/s:" in legend
    assert [t.strip() for t in legend if t.strip() in series] == list(series)


def test_different_curves_are_listed_with_their_own_peaks():
    slow = [(size, rate * 0.6) for size, rate in SWEEP]
    chart = svg.sweep_chart({"rail 0": SWEEP, "rail 1": slow}, unit="Gb/s", line=400, failed={"rail 1"})
    legend = [t for _, t in texts(chart)]
    assert "rail 0: 400 Gb/s" in legend and "rail 1: 240 Gb/s" in legend
    assert chart.count('class="passline"') == 1 and "pass 360 Gb/s (90% of 400)" in legend


def test_one_pair_per_rail_gets_one_small_chart_per_rail_each_with_its_pass_line():
    r = sample_report()
    html = sweep_charts(r.rails)
    labels = re.findall(r'aria-label="([^"]*)"', html)
    assert labels == [f"rail {x.rail} sweep: Gb/s by message size" for x in r.rails if x.sweep]
    assert html.count('class="passline"') == len(labels)
    assert "rail 1: server2 -&gt; server1 19.1 Gb/s FAIL" in html


def test_the_heat_map_titles_say_the_cells_are_percent_of_line_rate():
    html = matrix_section(synthetic16.build()[0])
    titles = re.findall(r'font-weight="600">([^<]*)</text>', html)
    assert titles[0] == "all 8 rails together: % of the pair&#x27;s summed line rate"
    assert titles[1:] == [f"rail {i}: % of line rate" for i in range(8)]
    assert "Gb/s summed" not in html


def test_bar_charts_have_a_value_axis_with_round_ticks_and_a_title():
    chart = svg.bar_chart([("discovery", 12.0, None, True), ("ofed", 343.0, None, True)], unit="s",
                          axis_title="wall time (seconds)")  # fmt: skip
    ticks = [t for _, t in texts(chart, "xtick")]
    assert ticks == ["0", "125", "250", "375", "500"], "quarters of a round maximum above the longest bar"
    assert "wall time (seconds)" in chart
    xs = [x for x, _ in texts(chart, "xtick")]
    assert xs == sorted(xs) and math.isclose(xs[1] - xs[0], xs[2] - xs[1])


def test_the_run_reports_timings_chart_has_its_axis_and_title():
    stages = [StageTotal(stage="discovery", counts={"done": 2}, wall_s=41.0),
              StageTotal(stage="ofed", counts={"done": 1, "failed": 1}, wall_s=388.0)]  # fmt: skip
    report = RunReport(generated_at="now", state_dir="/s", cluster="c", simulated=True, verdict="failed", stages=stages)
    html = render_run(report)
    timings = html[html.index("<h2 id='timings'>") : html.index("<h2 id='hosts'>")]
    assert [t for _, t in texts(timings, "xtick")] == ["0", "125", "250", "375", "500"]
    assert "wall time (seconds)" in timings and "388.0 s" in timings


def test_nccl_that_did_not_run_is_one_line_and_no_chart():
    r = sample_report()
    r.nccl = NcclResult(status="skip", reason="/opt/nccl-tests/build/all_reduce_perf is not built on server1")
    html = render(r)
    section = html[html.index("<h2>NCCL") :]
    assert "did not run: /opt/nccl-tests/build/all_reduce_perf is not built on server1" in section
    assert "<svg" not in section.split("<h2>", 2)[1]
    r.nccl = NcclResult()  # --no-nccl: no reason given by the run
    assert "did not run: not run in this test" in render(r)
