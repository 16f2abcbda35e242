"""The whole-run report in a real browser, offline: headless Chromium loads it without a console error or a fetch,
draws every chart the HTML holds, shows it on screen and prints it to PDF."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.browser import find_chromium, look_at, pdf_pages, png_size
from wizard.cli.report import main as report_cmd

pytestmark = pytest.mark.skipif(
    find_chromium() is None, reason="no Chromium on PATH (tests/install-lab-tools.sh installs Debian's chromium)"
)
WIDTH = 1200
# The charts each report draws (their aria-labels): the demo run has a whole bandwidth test in it, the failed run
# only the timings of the stages that ran.
DEMO_CHARTS = {
    "bars in s",  # stage wall times
    "rail 0 sweep: Gb/s by message size",  # the per-rail sweeps, one small chart per rail
    "bars in Gb/s",  # all rails together
    "all 4 rails together: % of the pair's summed line rate",  # the host-pair heat map, then one per rail
    "rail 0: % of line rate",
    "rail 3: % of line rate",
    "bars in us",  # latency
    "NCCL all_reduce_perf busbw",
}
FAILED_CHARTS = {"bars in s"}


@pytest.mark.slow
@pytest.mark.parametrize(
    ("which", "charts"),
    [("demo_state", DEMO_CHARTS), ("failed_state", FAILED_CHARTS)],
    ids=["demo_state", "failed_state"],
)
def test_the_run_report_loads_offline_without_errors_draws_every_chart_and_prints(
    which: str, charts: set[str], request: pytest.FixtureRequest, tmp_path: Path
) -> None:
    state = request.getfixturevalue(which)
    page = tmp_path / "report.html"
    assert report_cmd(["--state-dir", str(state), "--html", str(page)]) == 0
    seen = look_at(page, width=WIDTH, pdf=True)
    seen.keep(which)  # REPORT_SHOTS=DIR keeps the pictures to look at
    assert seen.faults() == []  # no console error, no request beyond the file, every <svg> drawn and not empty
    assert charts <= {c.label for c in seen.charts}
    width, height = png_size(seen.png)
    assert width == WIDTH and height > 2000  # the whole page, not the first screen
    assert len(seen.png) > 50_000  # a blank page compresses to a few kB; text, tables and charts do not
    assert seen.pdf.startswith(b"%PDF") and pdf_pages(seen.pdf) >= 2
