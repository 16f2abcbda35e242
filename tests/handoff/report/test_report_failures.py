"""A run that failed, with no bandwidth test: the report says what failed, why, the fix, and that no test ran."""

from __future__ import annotations

import json
from html import escape
from pathlib import Path

import pytest

from wizard.cli.report import to_json
from wizard.errors import EXIT_USAGE, StateError
from wizard.report.collect import collect, seconds_between, tail
from wizard.report.render import render


def test_a_failed_stage_is_reported_with_its_reason_and_the_stages_it_held_back(failed_state: Path) -> None:
    doc = to_json(collect(failed_state))
    assert doc["verdict"] == "failed" and doc["exit_code"] == 1
    rows = {(h["host"], r["stage"]): r for h in doc["hosts"] for r in h["stages"]}
    failed = rows[("server2", "discovery")]
    assert failed["status"] == "failed" and "ens2f1np1: no link" in failed["reason"]
    # back to back, the peer port on server1 loses its link too
    assert rows[("server1", "discovery")]["status"] == "failed"
    assert rows[("server2", "ofed")] == {**rows[("server2", "ofed")], "status": "skipped",
                                         "reason": "stage discovery is failed on this host"}  # fmt: skip
    assert rows[("server1", "roce")]["status"] == "pending" and rows[("server1", "roce")]["reason"] == "not run"
    totals = {t["stage"]: t for t in doc["stages"]}
    assert totals["discovery"]["counts"] == {"failed": 2} and totals["discovery"]["checks"]["fail"] >= 1


def test_needs_attention_lists_the_failing_check_with_evidence_and_fix_and_the_log_tail(failed_state: Path) -> None:
    report = collect(failed_state)
    page = render(report)
    attention = page[page.index("<h2 id='attention'>") : page.index("<h2 id='timings'>")]
    link = next(c for r in report.hosts[1].stages for c in r.checks if c.status == "fail")
    assert link.title == "links up" and "ens2f1np1" in link.evidence and link.fix
    for text in (link.title, link.evidence, link.fix, "server2", "discovery"):
        assert escape(text) in attention, text
    assert "Nothing: no stage failed" not in attention
    assert report.hosts[1].log_tail
    log_end = (failed_state / "logs" / "server2.log").read_text().splitlines()[-1]
    assert report.hosts[1].log_tail[-1] == log_end and escape(log_end) in attention
    assert "class='banner fail'" in page


def test_only_hosts_that_failed_show_their_log_tail(demo_state: Path, failed_state: Path) -> None:
    assert all(h.log_tail == [] and h.log for h in collect(demo_state).hosts)
    assert all(len(h.log_tail) == 25 for h in collect(failed_state).hosts)


def test_with_no_bandwidth_run_the_report_says_so_in_html_and_json(failed_state: Path) -> None:
    report = collect(failed_state)
    doc = to_json(report)
    assert doc["validation"] is None
    assert doc["validation_note"].startswith("no bandwidth test in this state directory")
    assert f"roce-wizard bwtest --state-dir {failed_state}" in doc["validation_note"]
    page = render(report)
    assert "No bandwidth test results." in page and escape(doc["validation_note"]) in page
    assert "Per-rail bandwidth" not in page


def test_a_bandwidth_test_older_than_the_last_run_is_flagged(demo_state: Path, tmp_path: Path) -> None:
    import shutil

    state = tmp_path / "state"
    shutil.copytree(demo_state, state)
    run = json.loads((state / "run.json").read_text())
    run["finished_at"] = "2099-01-01T00:00:00Z"
    (state / "run.json").write_text(json.dumps(run))
    assert "the wizard ran again afterwards (finished 2099-01-01T00:00:00Z)" in collect(state).validation_note
    assert "ran again" not in collect(demo_state).validation_note


def test_an_unreadable_bandwidth_result_is_named_not_fatal(failed_state: Path, tmp_path: Path) -> None:
    import shutil

    state = tmp_path / "state"
    shutil.copytree(failed_state, state)
    (state / "validation").mkdir()
    (state / "validation" / "latest.json").write_text('{"verdict": "maybe"}')
    report = collect(state)
    assert report.validation is None and "could not be read" in report.validation_note


def test_a_directory_without_a_run_is_a_usage_error(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    with pytest.raises(StateError, match="no saved run in"):
        collect(tmp_path)
    from wizard.cli.main import main

    # Through the CLI's error handling: one line, exit 2, no page written.
    assert main(["report", "--state-dir", str(tmp_path), "--html", str(tmp_path / "r.html")]) == EXIT_USAGE
    assert "no saved run in" in capsys.readouterr().err
    assert not (tmp_path / "r.html").exists()


def test_durations_and_log_tails_are_read_exactly(tmp_path: Path) -> None:
    assert seconds_between("2026-01-01T00:00:00Z", "2026-01-01T00:02:05Z") == 125.0
    assert seconds_between("2026-01-01T00:00:05Z", "2026-01-01T00:00:00Z") is None  # clock went back: no duration
    assert seconds_between(None, "2026-01-01T00:00:00Z") is None
    log = tmp_path / "h.log"
    log.write_text("".join(f"line {i}\n" for i in range(100_000)))  # about 1 MB: only its end is read
    assert tail(log, 3) == ["line 99997", "line 99998", "line 99999"]
    assert tail(tmp_path / "missing.log", 3) == []
    lines = ["10:00:00 $ ethtool -S eth0", "10:00:00   | rx_prio3_pause: 0", "10:00:00   ! warn", "10:00:00   = exit 0"]
    log.write_text("\n".join(lines) + "\n")
    assert tail(log, 3, commands_only=True) == [lines[0], lines[2], lines[3]]  # without the command's output
