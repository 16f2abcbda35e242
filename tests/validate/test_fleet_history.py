"""Every bwtest run is kept; `--history` lists them and `--compare` names the host ports that got slower."""

from __future__ import annotations

from pathlib import Path

import pytest

from wizard.errors import UsageError
from wizard.validate import store
from wizard.validate.history import compare, describe, earlier_rates, find_run, history_lines, load, load_rates
from wizard.validate.model import RailEnd, RailResult, Report


def _run(finished: str, rates: dict[tuple[str, str, int], float]) -> Report:
    """A saved run whose pair tests (all rails at once) got these rates: (client, server, rail) -> Gb/s."""
    report = Report(simulated=True, cluster="fleet", hosts=["gpu-0001", "gpu-0002", "gpu-0003"],
                    started=finished, finished=finished, verdict="pass")  # fmt: skip
    for (a, b, rail), gbps in rates.items():
        report.together.append(
            RailResult(
                rail=rail,
                mode="together",
                gbps=gbps,
                expected_gbps=400,
                status="pass",
                client=RailEnd(host=a, netdev=f"enp{rail}", device=f"mlx5_{rail}"),
                server=RailEnd(host=b, netdev=f"enp{rail}", device=f"mlx5_{rail}"),
            )  # fmt: skip
        )
    return report


def _healthy(finished: str, slow: float = 390.0) -> Report:
    return _run(finished, {("gpu-0001", "gpu-0002", 3): 390.0, ("gpu-0002", "gpu-0003", 3): slow,
                           ("gpu-0003", "gpu-0001", 3): slow})  # fmt: skip


def test_a_port_slower_with_every_peer_is_named_with_both_rates_and_the_date(tmp_path: Path) -> None:
    before, after = _healthy("2026-11-20T08:00:00+00:00"), _healthy("2026-11-28T08:00:00+00:00", slow=354.0)
    found = compare(before, after, "bwtest-20261120", threshold_pct=5)
    assert [describe(r) for r in found] == ["gpu-0003 rail 3: 390 -> 354 Gb/s (-9 %) since 2026-11-20"]


def test_a_saved_run_compares_the_same_read_for_its_rates_only_as_read_whole(tmp_path: Path) -> None:
    """--compare reads only each flow's hosts, rail, mode and rate of the earlier run (its file is 22 MB at 1,024
    hosts): the regressions are the ones the whole report gives."""
    before = _healthy("2026-11-20T08:00:00+00:00")
    before.rails.append(before.together[0].model_copy(update={"mode": "alone", "gbps": 395.0}))
    before.rails.append(before.together[1].model_copy(update={"mode": "cross", "gbps": 100.0}))  # not the same path
    path = store.save(tmp_path, before)
    after = _healthy("2026-11-28T08:00:00+00:00", slow=354.0)
    lean = compare(load_rates(path), after, "bwtest-20261120", threshold_pct=5)
    assert lean == compare(load(path), after, "bwtest-20261120", threshold_pct=5)
    # and what bwtest keeps of it while the new run runs (read before it starts): the same again
    assert compare(earlier_rates(path), after, "bwtest-20261120", threshold_pct=5) == lean
    # the alone flow's 395 counts (gpu-0001 and gpu-0002 now 390: within 5 %); the cross-rail flow does not
    assert [describe(r) for r in lean] == ["gpu-0003 rail 3: 390 -> 354 Gb/s (-9 %) since 2026-11-20"]


def test_a_drop_within_the_threshold_is_not_a_regression() -> None:
    before, after = _healthy("2026-11-20T08:00:00+00:00"), _healthy("2026-11-28T08:00:00+00:00", slow=375.0)
    assert compare(before, after, "x", threshold_pct=5) == []


def test_runs_are_kept_listed_and_found_by_a_part_of_their_name(tmp_path: Path) -> None:
    for when in ("2026-11-20T08:00:00+00:00", "2026-11-28T08:00:00+00:00"):
        store.save(tmp_path, _healthy(when))
    lines = history_lines(tmp_path)
    assert len(lines) == 2 and lines[0].startswith("bwtest-2026-11-20T080000Z00") and "PASS 3 hosts" in lines[0]
    assert load(find_run(tmp_path, "11-20")).finished == "2026-11-20T08:00:00+00:00"
    assert find_run(tmp_path, None).name.startswith("bwtest-2026-11-28")
    with pytest.raises(UsageError, match="matches no saved run"):
        find_run(tmp_path, "2025")


def test_compare_without_an_earlier_run_says_where_runs_are_kept(tmp_path: Path) -> None:
    with pytest.raises(UsageError, match="no earlier run in .*validation"):
        find_run(tmp_path, None)
