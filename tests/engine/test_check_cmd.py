"""`roce-wizard check`: the Hosts screen's connection test without a terminal, one line per host."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

EXAMPLE = Path(__file__).resolve().parents[2] / "assets" / "answers.example.yaml"


def check(tmp_path: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "ROCE_WIZARD_LAB_TIME_SCALE": "0.02"}
    return subprocess.run(
        [sys.executable, "-m", "wizard", "check", "--demo", "--state-dir", str(tmp_path / "state"), *args],
        capture_output=True,
        text=True,
        timeout=120,
        env=env,
    )


def test_every_host_ready_exits_0_with_the_os_of_each(tmp_path: Path) -> None:
    result = check(tmp_path)
    assert result.returncode == 0, result.stderr
    lines = sorted(result.stdout.splitlines())
    assert [line.split(":")[0] for line in lines] == ["server1", "server2"]
    assert all(": ok - Ubuntu 22.04" in line for line in lines), lines
    assert "SIMULATED" in result.stderr and "2 of 2 hosts ready" in result.stderr


def test_each_broken_host_gets_one_line_naming_what_to_fix(tmp_path: Path) -> None:
    result = check(tmp_path, "--fault", "server1:auth_refused", "--fault", "server2:sudo_refused")
    assert result.returncode == 1
    lines = dict(line.split(": ", 1) for line in result.stdout.splitlines())
    assert lines["server1"].startswith("FAILED - authentication refused for user 'ubuntu'")
    assert lines["server2"].startswith("FAILED - sudo asks for a password (sudo: a password is required); ")
    assert "configure NOPASSWD for this user" in lines["server2"]
    assert "0 of 2 hosts ready; not ready: server1, server2" in result.stderr
    assert "Traceback" not in result.stderr


def test_json_reports_each_step_of_the_test_and_how_long_it_took(tmp_path: Path) -> None:
    result = check(tmp_path, "--json", "--fault", "server2:unreachable")
    assert result.returncode == 1
    rows = {row["host"]: row for row in map(json.loads, result.stdout.splitlines())}
    assert rows["server1"] | {"seconds": 0} == {
        "host": "server1",
        "ok": True,
        "reachable": True,
        "authenticated": True,
        "sudo": True,
        "os": "Ubuntu 22.04.5 LTS",
        "problem": "",
        "seconds": 0,
    }
    assert rows["server2"]["ok"] is False and rows["server2"]["reachable"] is False
    assert "cannot connect" in rows["server2"]["problem"]
    assert rows["server1"]["seconds"] > 0


def test_only_the_named_hosts_are_contacted(tmp_path: Path) -> None:
    result = check(tmp_path, "--host", "server2", "--fault", "server1:unreachable")
    assert result.returncode == 0, result.stdout + result.stderr
    assert result.stdout.startswith("server2: ok") and "server1" not in result.stdout


def test_an_unknown_host_or_a_fault_without_the_demo_is_a_usage_error(tmp_path: Path) -> None:
    assert check(tmp_path, "--host", "server9").returncode == 2
    real = subprocess.run(
        [sys.executable, "-m", "wizard", "check", "--answers", str(EXAMPLE), "--fault", "server1:unreachable"],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert real.returncode == 2 and "--fault only applies" in real.stderr
