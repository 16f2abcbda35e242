"""The bandwidth report (`bwtest --report FILE.html`) in a real browser, offline: headless Chromium loads it without a
console error or a fetch and draws every chart it holds: a pair's sweeps and bars, and 16 hosts x 8 rails with
sweep charts per rail, heat maps, incast and cross-rail grids."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

from tests.browser import find_chromium, look_at, png_size
from tests.validate import synthetic16
from tests.validate.test_pure import sample_report
from wizard.validate.html_report import render
from wizard.validate.model import Report

pytestmark = pytest.mark.skipif(
    find_chromium() is None, reason="no Chromium on PATH (tests/install-lab-tools.sh installs Debian's chromium)"
)
WIDTH = 1200


def two_hosts() -> Report:
    return sample_report()


def sixteen_hosts() -> Report:
    return synthetic16.build()[0]


TWO_HOSTS = {
    "rail 0 sweep: Gb/s by message size",  # one small sweep chart per rail: the rails' curves never hide each other
    "rail 1 sweep: Gb/s by message size",
    "bars in Gb/s",
    "all 2 rails together: % of the pair's summed line rate",
    "rail 0: % of line rate",
    "rail 1: % of line rate",
    "bars in us",
}
SIXTEEN_HOSTS = {
    "rail 2: 15 pairs, 2 failing, slowest gpu-003->gpu-002 240.0 Gb/s",  # a sweep chart per rail, this one slow
    "all 8 rails together: % of the pair's summed line rate",  # the host-pair heat map, then one per rail
    *(f"rail {i}: % of line rate" for i in range(8)),
    "gpu-002 -> gpu-001",  # the cross-rail grid
    "bars in us",  # latency
}


@pytest.mark.slow
@pytest.mark.parametrize(
    ("make", "charts", "min_png"),
    [(two_hosts, TWO_HOSTS, 50_000), (sixteen_hosts, SIXTEEN_HOSTS, 300_000)],
    ids=["two-hosts", "sixteen-hosts"],
)
def test_the_bandwidth_report_loads_offline_without_errors_and_draws_every_chart(
    make: Callable[[], Report], charts: set[str], min_png: int, tmp_path: Path
) -> None:
    page = tmp_path / "bwtest.html"
    page.write_text(render(make()), encoding="utf-8")  # what `bwtest --report` writes
    seen = look_at(page, width=WIDTH)
    seen.keep(f"bwtest-{make.__name__.replace('_', '-')}")  # REPORT_SHOTS=DIR keeps the pictures to look at
    assert seen.faults() == []  # no console error, no request beyond the file, every <svg> drawn and not empty
    assert charts <= {c.label for c in seen.charts}
    width, height = png_size(seen.png)
    assert width == WIDTH and height >= 900
    assert len(seen.png) > min_png  # a blank page compresses to a few kB
