"""The report of a real demo run holds every stage on every host, the checks, timings and the bandwidth test."""

from __future__ import annotations

import json
import re
from html import escape
from pathlib import Path

import pytest

from wizard.cli.report import main as report_cmd
from wizard.cli.report import to_json
from wizard.engine.stage_order import STAGE_IDS
from wizard.report.collect import collect
from wizard.report.render import render


@pytest.fixture(scope="module")
def outputs(demo_state: Path, tmp_path_factory: pytest.TempPathFactory) -> tuple[str, dict]:
    """The HTML file and the JSON document, both made through the command line entry point."""
    page = tmp_path_factory.mktemp("out") / "run.html"
    assert report_cmd(["--state-dir", str(demo_state), "--html", str(page)]) == 0
    doc = to_json(collect(demo_state))
    return page.read_text(encoding="utf-8"), doc


def saved_hosts(state: Path) -> dict[str, dict]:
    return {p.stem: json.loads(p.read_text()) for p in sorted((state / "hosts").glob("*.json"))}


def test_every_stage_on_every_host_is_reported_with_status_times_and_reason(demo_state: Path, outputs) -> None:
    page, doc = outputs
    hosts = saved_hosts(demo_state)
    assert [h["host"] for h in doc["hosts"]] == ["server1", "server2"] == sorted(hosts)
    for section in doc["hosts"]:
        saved = hosts[section["host"]]["stages"]
        assert [row["stage"] for row in section["stages"]] == list(STAGE_IDS)
        for row in section["stages"]:
            record = saved[row["stage"]]
            assert (row["status"], row["started_at"], row["finished_at"], row["reason"]) == (
                "done", record["started_at"], record["finished_at"], record["reason"])  # fmt: skip
            assert row["changes_applied"] == record["changes_applied"]
            assert page.count(f"{record['started_at']} &rarr; {record['finished_at']}") >= 1
        assert f"id='host-{section['host']}'" in page
    assert doc["verdict"] == "verified" and "every stage is verified on every host" in page
    assert doc["simulated"] is True and "SIMULATED" in page


def test_every_check_appears_with_its_evidence_and_fix(demo_state: Path, outputs) -> None:
    page, doc = outputs
    saved = [c for h in saved_hosts(demo_state).values() for s in h["stages"].values() for c in s["checks"]]
    reported = [c for h in doc["hosts"] for row in h["stages"] for c in row["checks"]]
    assert len(saved) == len(reported) > 100
    assert sorted(json.dumps(c, sort_keys=True) for c in saved) == sorted(json.dumps(c, sort_keys=True) for c in
                                                                          reported)  # fmt: skip
    for check in saved:
        assert escape(check["evidence"]) in page, check
        if check["fix"]:
            assert escape(check["fix"]) in page, check


def test_stage_timings_are_the_fleet_wall_time_from_first_start_to_last_end(outputs) -> None:
    page, doc = outputs
    for total in doc["stages"]:
        rows = [r for h in doc["hosts"] for r in h["stages"] if r["stage"] == total["stage"]]
        assert total["started_at"] == min(r["started_at"] for r in rows)
        assert total["finished_at"] == max(r["finished_at"] for r in rows)
        assert total["counts"] == {"done": 2}
        assert total["wall_s"] is not None and total["wall_s"] >= max(r["duration_s"] for r in rows)
    assert "<h2 id='timings'>Timings</h2>" in page and 'aria-label="bars in s"' in page


def test_the_bandwidth_latency_nccl_results_and_heat_maps_come_from_the_saved_bwtest(demo_state, outputs) -> None:
    page, doc = outputs
    saved = json.loads((demo_state / "validation" / "latest.json").read_text())
    v = doc["validation"]
    assert v["verdict"] == saved["verdict"] == "pass"
    assert [r["gbps"] for r in v["rails"]] == [r["gbps"] for r in saved["rails"]] and len(v["rails"]) == 4
    assert all(r["ratio"] > 0.9 for r in v["rails"])  # bwtest --json's ratios ride along
    assert v["nccl"]["peak_busbw"] == saved["nccl"]["peak_busbw"]
    assert "latest bandwidth test" in doc["validation_note"]
    for heading in ("Per-rail bandwidth", "All host pairs: heat maps", "Latency (ib_write_lat", "NCCL all_reduce_perf",
                    "Consistency lint", "PFC / ECN counters"):  # fmt: skip
        assert heading in page, heading
    assert page.count('data-band="pass"') >= 2  # the heat map cells of the one pair, both ways
    for rail in saved["rails"]:
        assert f"<td>{rail['gbps']:.2f}</td>" in page
    # the embedded bandwidth report sits below this report's headings, never beside them
    assert "<h1>" in page and page.count("<h1>") == 1 and "<h3>Fabric validation" in page


def test_the_page_is_self_contained_and_prints(outputs) -> None:
    page, _ = outputs
    assert page.startswith("<!DOCTYPE html>") and page.rstrip().endswith("</html>")
    for fetch in ("<script", "<link", " src=", "url(", "@import", "<iframe"):
        assert fetch not in page, fetch
    assert "@media print" in page and "details::details-content" in page
    assert "<svg" in page


def test_the_file_is_private_like_the_state(demo_state: Path, tmp_path: Path) -> None:
    page = tmp_path / "r.html"
    assert report_cmd(["--state-dir", str(demo_state), "--html", str(page)]) == 0
    assert page.stat().st_mode & 0o777 == 0o600


def test_json_flag_prints_one_document_with_the_same_content(demo_state, capsys: pytest.CaptureFixture[str]) -> None:
    assert report_cmd(["--state-dir", str(demo_state), "--json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert doc["kind"] == "roce-wizard-run-report" and doc["version"] == 1
    assert doc["cluster"] == "l20-pair" and doc["validation"]["verdict"] == "pass"
    html = render(collect(demo_state))
    titles = {c["title"] for h in doc["hosts"] for r in h["stages"] for c in r["checks"]}
    assert all(escape(t) in html for t in titles)


def test_without_html_or_json_it_prints_a_summary(demo_state, capsys: pytest.CaptureFixture[str]) -> None:
    assert report_cmd(["--state-dir", str(demo_state)]) == 0
    out = capsys.readouterr()
    assert out.out.splitlines()[0] == "SIMULATED run report of l20-pair: VERIFIED"
    assert re.search(r"^  discovery +2 done$", out.out, re.M) and "bandwidth test: PASS" in out.out
    assert "--html FILE" in out.err
