"""The rails-16 demo profile through the command line: its answers file, discovery on all 16 hosts, usage errors."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from wizard.answers.profiles import demo_answers
from wizard.cli.main import main

ASSETS = Path(__file__).resolve().parents[2] / "assets"


def test_the_rails16_answers_file_is_shipped_and_every_key_is_commented() -> None:
    path = demo_answers("rails-16")
    assert path == ASSETS / "answers.rails-16.yaml"
    for number, line in enumerate(path.read_text().splitlines(), 1):
        stripped = line.strip()
        if stripped and not stripped.startswith("#") and ":" in stripped and not stripped.endswith(":"):
            assert "#" in line, f"line {number} has no comment: {line}"


def test_the_reference_pair_stays_the_default_demo() -> None:
    assert demo_answers(None).name == "answers.example.yaml"
    assert demo_answers("reference").name == "answers.example.yaml"


def test_profile_without_demo_is_a_usage_error(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["--profile", "rails-16", "--only", "discovery", "--answers", str(demo_answers("rails-16"))]) == 2
    assert "--profile only applies to the simulated cluster" in capsys.readouterr().err


def test_a_switch_fault_on_the_reference_demo_is_a_usage_error(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code = main(["--demo", "--only", "discovery", "--state-dir", str(tmp_path), "--fault", "server1:switch_mtu"])
    assert code == 2
    assert "needs modelled switches (--profile rails-16)" in capsys.readouterr().err


@pytest.mark.slow  # 16 hosts x 8 ports: ~40 s alone (the simulated grep over 16 x 6,000 GID files dominates)
def test_demo_profile_rails16_discovery_passes_on_all_16_hosts(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("ROCE_WIZARD_LAB_TIME_SCALE", "0.01")
    code = main(["--demo", "--profile", "rails-16", "--only", "discovery", "--json", "--state-dir", str(tmp_path)])
    out = capsys.readouterr().out
    assert code == 0, out[-2000:]
    events = [json.loads(line) for line in out.splitlines() if line.startswith("{")]
    done = {
        e["host"]
        for e in events
        if e["event"] == "host_status" and e.get("stage") == "discovery" and e.get("status") == "done"
    }
    assert done == {f"gpu-{i:03d}" for i in range(1, 17)}
