"""The headless run as a subprocess against the simulated cluster: exit codes, private state, resume.

(A whole bring-up's JSON events and a second run that changes nothing: tests/engine/test_plan_ahead.py, whose one
bring-up also checks what `plan --out` predicted.)"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

EXAMPLE = Path(__file__).resolve().parents[2] / "assets" / "answers.example.yaml"
ENV = {**os.environ, "ROCE_WIZARD_LAB_TIME_SCALE": "0.01"}


def cli(*args: str, timeout: float = 240) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "wizard", *args], capture_output=True, text=True, timeout=timeout, env=ENV
    )


def events(stdout: str) -> list[dict]:
    return [json.loads(line) for line in stdout.splitlines()]


def test_state_and_logs_are_private_and_hold_no_secret(tmp_path: Path) -> None:
    state = tmp_path / "state"
    result = cli("--demo", "--only", "discovery", "--state-dir", str(state))
    assert result.returncode == 0, result.stderr[-2000:]
    for path in [state / "run.json", state / "hosts" / "server1.json", state / "logs" / "server1.log"]:
        assert path.stat().st_mode & 0o777 == 0o600, path
    log = (state / "logs" / "server1.log").read_text()
    assert "$ lspci -D -nn -d 15b3:" in log and "ConnectX-4 Lx" in log


def test_an_unreachable_host_fails_alone_with_a_one_line_reason(tmp_path: Path) -> None:
    result = cli("--demo", "--only", "discovery", "--fault", "server2:unreachable", "--state-dir", str(tmp_path))
    assert result.returncode == 1
    assert "server1: ok" in result.stderr
    line = next(ln for ln in result.stderr.splitlines() if "server2: FAILED" in ln)
    assert "cannot connect to 127.0.0.1" in line
    assert "Traceback" not in result.stderr


def test_refused_sudo_fails_discovery_on_that_host_only(tmp_path: Path) -> None:
    result = cli("--demo", "--only", "discovery", "--fault", "server2:sudo_refused", "--state-dir", str(tmp_path))
    assert result.returncode == 1
    assert "server1: ok" in result.stderr
    assert any("server2: FAILED" in ln and "sudo" in ln for ln in result.stderr.splitlines())


def test_a_bad_fault_spec_is_a_usage_error(tmp_path: Path) -> None:
    result = cli("--demo", "--fault", "server9:pfc_off", "--state-dir", str(tmp_path))
    assert result.returncode == 2
    assert "server9" in result.stderr


def test_killing_the_run_at_any_point_leaves_a_resumable_state(tmp_path: Path) -> None:
    state = tmp_path / "state"
    proc = subprocess.Popen(
        [sys.executable, "-m", "wizard", "--demo", "--yes", "--json", "--state-dir", str(state)],
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        text=True,
        env={**ENV, "ROCE_WIZARD_LAB_TIME_SCALE": "0.2"},
    )
    assert proc.stdout is not None
    seen = 0
    for line in proc.stdout:
        if json.loads(line)["event"] == "command_done":
            seen += 1
            if seen == 12:
                break
    os.kill(proc.pid, signal.SIGKILL)
    proc.wait()
    for path in (state / "hosts").glob("*.json"):
        json.loads(path.read_text())  # never corrupt
    time.sleep(0.1)
    resumed = cli("--demo", "--yes", "--json", "--state-dir", str(state))
    assert resumed.returncode == 0, resumed.stderr[-3000:]
    status = json.loads(cli("status", "--state-dir", str(state), "--json").stdout)
    assert status["hosts"]["server2"]["command_in_flight"] is None


def test_a_connection_cut_mid_command_fails_that_host_and_a_rerun_resumes(tmp_path: Path) -> None:
    state = tmp_path / "state"
    cut = cli(
        "--demo", "--only", "discovery,ofed", "--yes", "--fault", "server2:ssh_drop=apt-get", "--state-dir", str(state)
    )
    assert cut.returncode == 1
    line = next(ln for ln in cut.stderr.splitlines() if "server2: FAILED" in ln)
    assert "connection lost during" in line and "apt-get" in line
    assert "server1: ok" in cut.stderr, "the other host keeps going"
    again = cli("--demo", "--only", "discovery,ofed", "--yes", "--state-dir", str(state))
    assert again.returncode == 0, again.stderr[-2000:]
    status = json.loads(cli("status", "--state-dir", str(state), "--json").stdout)
    assert status["hosts"]["server2"]["stages"]["ofed"]["status"] == "done"
