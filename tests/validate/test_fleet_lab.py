"""bwtest --quick, --budget, --suspects and --compare on five simulated rails-16 hosts (tests/validate/rails5.py),
over SSH as on a real fleet: the faults injected in the lab are named with their evidence, and nothing else."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.validate.rails5 import brought_up, run, target
from wizard.validate import perftest
from wizard.validate.history import load, runs

pytestmark = pytest.mark.slow

TRAINED_LOW = "gpu-003:degraded=enp64s0np0:200"  # rail 1 trained at 200 of 400 Gb/s
BAD_CABLE = "gpu-004:degraded=enp24s0np0"  # rail 0: symbol errors, about 60 % of line rate


@pytest.fixture
def state(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> tuple[Path, Path]:
    monkeypatch.setenv("ROCE_WIZARD_LAB_TIME_SCALE", "0.1")
    monkeypatch.setattr(perftest, "START_DELAY_S", 0.1)
    five = brought_up()
    return five.answers, five.copy_to(tmp_path / "state")


def _quick(answers: Path, state: Path, *extra: str) -> tuple[int, str]:
    return run("bwtest", *target(answers, state), "--quick", "--seconds", "1", *extra)


def test_quick_names_a_port_that_trained_low_and_a_bad_cable_with_their_evidence(
    state: tuple[Path, Path], capsys: pytest.CaptureFixture[str]
) -> None:
    answers, folder = state
    code, out = _quick(answers, folder, "--fault", TRAINED_LOW, "--fault", BAD_CABLE)
    assert code == 1, out
    report = load(runs(folder)[-1])
    assert report.fleet is not None
    named = {(s.kind, s.host, s.rail) for s in report.fleet.suspects}
    assert named == {("host_port", "gpu-003", 1), ("host_port", "gpu-004", 0)}, out
    low = next(s for s in report.fleet.suspects if s.host == "gpu-003")
    assert low.evidence[0] == "link trained at 200 Gb/s; rail 1 runs at 400 elsewhere"
    assert low.leaf == "leaf-r1"
    cable = next(s for s in report.fleet.suspects if s.host == "gpu-004")
    assert cable.evidence[0].startswith("error counters rose during the run (rx_")
    assert "host port: gpu-003 rail 1 (enp64s0np0, leaf-r1 " in out
    assert report.fleet.coverage.hosts == 5 and report.fleet.coverage.ports == 40
    err = capsys.readouterr().err
    listed = [line for line in err.splitlines() if line.startswith("[simulated]    together")]
    assert listed and all(" PASS" not in line for line in listed), "a fleet's passing flows are counted, not listed"
    assert "flows at full rate, " in err
    assert all(r.ran for r in report.fleet.budget.rounds)

    # --suspects: both re-tested against hosts no suspect names, both confirmed.
    code, out = run("bwtest", *target(answers, folder), "--suspects", "--seconds", "1",
                    "--fault", TRAINED_LOW, "--fault", BAD_CABLE)  # fmt: skip
    again = load(runs(folder)[-1])
    assert again.fleet is not None and again.fleet.budget.mode == "suspects"
    assert {(s.host, s.rail, s.status) for s in again.fleet.suspects} == {
        ("gpu-003", 1, "confirmed"), ("gpu-004", 0, "confirmed")}, out  # fmt: skip
    assert all(s.retest for s in again.fleet.suspects)


def test_a_budget_stops_before_a_round_that_does_not_fit_and_says_what_was_left(state: tuple[Path, Path]) -> None:
    answers, folder = state
    code, out = _quick(answers, folder, "--budget", "6s")  # each round: 1 s of test + 1.5 s of setup
    report = load(runs(folder)[-1])
    assert report.fleet is not None
    budget = report.fleet.budget
    assert [r.ran for r in budget.rounds] == [True, True, False, False]
    assert budget.used_s == 5.0 and budget.stopped is not None and "would not fit" in budget.stopped
    assert "not run: cross-rail, same-leaf" in out


def test_compare_names_the_port_that_got_slower_since_the_last_run(state: tuple[Path, Path]) -> None:
    answers, folder = state
    code, out = _quick(answers, folder)
    assert code == 0, out
    code, out = _quick(answers, folder, "--fault", TRAINED_LOW, "--compare")
    report = load(runs(folder)[-1])
    assert report.fleet is not None and report.fleet.compared_with is not None
    assert [(r.host, r.rail) for r in report.fleet.regressions] == [("gpu-003", 1)], out
    assert "gpu-003 rail 1: " in out and " since 20" in out


def test_a_fleet_report_keeps_perftest_output_only_for_the_flows_that_did_not_pass(
    state: tuple[Path, Path], monkeypatch: pytest.MonkeyPatch
) -> None:
    """Past OUTPUT_KEPT_HOSTS (here lowered to 2 for five hosts) a pass's printed output is dropped: a 1,024-host
    quick run is tens of thousands of flows."""
    from wizard.validate import run as validate_run

    monkeypatch.setattr(validate_run, "OUTPUT_KEPT_HOSTS", 2)
    answers, folder = state
    code, out = _quick(answers, folder, "--fault", TRAINED_LOW)
    assert code == 1, out
    report = load(runs(folder)[-1])
    passed = [x for x in report.together if x.status == "pass"]
    failed = [x for x in report.together if x.status != "pass"]
    assert passed and failed
    assert all(x.output == "" for x in passed)
    assert all("BW average" in x.output or "#bytes" in x.output for x in failed), failed[0].output
