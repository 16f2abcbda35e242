"""perftest's bandwidth when its CPU clock estimate failed: worked out from what moved, and said so."""

from __future__ import annotations

from pathlib import Path

import pytest

from wizard.parsers import parse
from wizard.validate.perftest import measured_gbps

SAMPLES = Path(__file__).resolve().parents[1] / "fixtures" / "real-outputs" / "ib_write_bw"


def test_a_zero_with_the_r2_warning_becomes_the_bytes_moved_over_the_duration() -> None:
    parsed = parse("ib_write_bw", (SAMPLES / "vmlab-debian12-rxe-eth3-client-D3-unstable-clock.txt").read_text())
    assert parsed.results[-1].average.gbps == 0 and parsed.results[-1].iterations == 291

    gbps, note = measured_gbps(parsed, 3.0)

    assert gbps == pytest.approx(291 * 65536 * 8 / 3 / 1e9)
    assert note is not None and "r^2" in note and "291 x 65536 B in 3 s" in note


def test_perftests_own_figure_stands_when_it_has_one_or_no_duration_is_known() -> None:
    parsed = parse("ib_write_bw", (SAMPLES / "vmlab-debian12-rxe-eth3-client-D3-unstable-clock.txt").read_text())
    assert measured_gbps(parsed, None) == (0.0, None), "a sweep (no -D) has no duration to divide by"
    healthy = sorted(SAMPLES.glob("*.txt"))
    assert healthy, "real ib_write_bw samples are kept as fixtures"
    for path in healthy:
        sample = parse("ib_write_bw", path.read_text(errors="replace"))
        if sample.results and sample.results[-1].average.gbps > 0:
            assert measured_gbps(sample, 3.0) == (sample.results[-1].average.gbps, None), path.name
