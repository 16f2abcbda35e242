"""`roce-wizard check`: the Hosts screen's connection test without a terminal, one line per host."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from tests.engine.test_ssh_executor import executor, start_lab
from wizard.engine.conn_test import ConnectionReport, check_host

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


# -- round trips: the test is one exec per host after login (issue 15) -------------------------------------------


class Commands:
    """A listener that keeps the command lines the host log shows."""

    def __init__(self) -> None:
        self.shown: list[str] = []

    def command_started(self, host: str, command: str) -> None:
        self.shown.append(command)

    def output_line(self, host: str, stream: str, line: str) -> None:
        pass

    def command_finished(self, host: str, command: str, result: object, error: str | None) -> None:
        pass


async def _check_on_lab(fault: str | None = None, **target: object) -> tuple[ConnectionReport, list[str], list[str]]:
    """Test server1 of a fresh simulated lab; returns the report, the execs its SSH server got and the log's lines."""
    lab = await start_lab(*([f"server1:{fault}"] if fault else []))
    try:
        ex = executor(lab, **target)
        ex.listener = Commands()  # type: ignore[assignment]
        lab.host("server1").history.clear()
        report = await check_host(ex)
        await ex.close()
        return report, list(lab.host("server1").history), ex.listener.shown  # type: ignore[attr-defined]
    finally:
        await lab.stop()


async def test_a_ready_host_costs_one_exec_after_login_and_its_log_shows_both_commands() -> None:
    report, execs, shown = await _check_on_lab()
    assert (report.ok, report.os, report.problem) == (True, "Ubuntu 22.04.5 LTS", "")
    assert len(execs) == 1 and " sh -s -- @@roce-wizard-" in execs[0], execs
    assert shown == ["cat /etc/os-release", "sudo -n true"]


async def test_sudo_wanting_a_password_reads_as_before_at_the_cost_of_one_more_exec() -> None:
    report, execs, _ = await _check_on_lab("sudo_refused")
    assert (report.reachable, report.authenticated, report.sudo, report.os) == (True, True, False, "Ubuntu 22.04.5 LTS")
    assert report.problem.startswith("sudo asks for a password (sudo: a password is required); configure NOPASSWD")
    assert len(execs) == 2 and execs[1] == "sudo -n true", execs  # the executor's own proof words the refusal


async def test_a_sudo_password_needs_its_own_exec_and_never_travels_in_the_script() -> None:
    report, execs, _ = await _check_on_lab("sudo_refused", sudo_password="s3cret")
    assert report.problem.startswith("sudo refused the password or the user: "), report.problem
    assert " sh -s -- @@roce-wizard-" in execs[0] and execs[-1] == "sudo -k -S -p '' -- true", execs
    assert not any("s3cret" in line for line in execs)
