"""The bwtest and doctor subcommands are registered and refuse unusable arguments with a usage error."""

from __future__ import annotations

import pytest

from wizard.cli.main import SUBCOMMANDS, main
from wizard.errors import EXIT_USAGE


def test_bwtest_and_doctor_are_subcommands():
    assert {"bwtest", "doctor"} <= set(SUBCOMMANDS)


@pytest.mark.parametrize("command", ["bwtest", "doctor"])
def test_without_answers_or_demo_it_is_a_usage_error(command: str, capsys: pytest.CaptureFixture[str]):
    assert main([command]) == EXIT_USAGE
    assert "needs --answers FILE (or --demo)" in capsys.readouterr().err


def test_faults_only_apply_to_the_simulated_cluster(capsys: pytest.CaptureFixture[str]):
    assert main(["bwtest", "--answers", "assets/answers.example.yaml", "--fault", "server2:crosswire"]) == EXIT_USAGE
    assert "--fault only applies" in capsys.readouterr().err


def test_bwtest_help_lists_the_report_and_json_options(capsys: pytest.CaptureFixture[str]):
    with pytest.raises(SystemExit) as exc:
        main(["bwtest", "--help"])
    out = capsys.readouterr().out
    assert exc.value.code == 0 and "--report FILE.html" in out and "--json" in out and "--demo" in out


def test_bwtest_prints_json_writes_the_html_report_saves_results_and_fails_on_a_failed_verdict(
    tmp_path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
):
    import json
    from contextlib import asynccontextmanager

    from tests.validate.test_pure import sample_report
    from wizard.cli import bwtest as cli
    from wizard.validate.run import Validation

    @asynccontextmanager
    async def fake_executors(args):  # type: ignore[no-untyped-def]
        yield None, {}, tmp_path / "state"

    async def fake_run(self):  # type: ignore[no-untyped-def]
        return sample_report()

    monkeypatch.setattr(cli, "connected_hosts", fake_executors)
    monkeypatch.setattr(Validation, "__init__", lambda self, *a, **k: None)
    monkeypatch.setattr(Validation, "run", fake_run)
    report = tmp_path / "report.html"
    code = main(["bwtest", "--demo", "--json", "--report", str(report)])
    out = capsys.readouterr()
    data = json.loads(out.out)
    assert code == 1 and data["verdict"] == "fail" and data["rails"][0]["gbps"] == 23.4
    assert report.read_text().startswith("<!DOCTYPE html>")
    assert (tmp_path / "state" / "validation" / "latest.json").exists()
    assert "results saved in" in out.err


def test_the_human_summary_names_each_rail_the_aggregate_latency_lint_and_causes(capsys):
    from tests.validate.test_pure import sample_report
    from wizard.cli.bwtest import print_summary

    print_summary(sample_report())
    out = capsys.readouterr().out
    assert out.splitlines()[0] == "SIMULATED fabric validation of l20-pair: FAIL"
    assert "PASS  rail 0: server2 ens1f0np0 -> server1 ens1f0np0: 23.40 Gb/s (94% of 25)" in out
    assert "aggregate server1<->server2: 42.5 of 50 Gb/s" in out and "latency rail 0: typical 1.60 us" in out
    assert "cause 1: server2 ens1f1np1: PFC off" in out
