"""Commit-confirmed apply: a disruptive change arms a revert on the host, is confirmed over a new SSH connection,
and when that fails the host rolls itself back and the wizard says so."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from wizard.engine.apply import ArmedRevert, revert_script
from wizard.engine.step import Change, FileWrite, Impact, RemoteCommand

ENV = {**os.environ, "ROCE_WIZARD_LAB_TIME_SCALE": "0.02"}


def cli(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "wizard", *args], capture_output=True, text=True, timeout=300, env=ENV)


def test_the_revert_script_restores_old_files_removes_new_ones_and_reapplies_netplan(tmp_path: Path) -> None:
    change = Change(
        summary="apply rails",
        impact=Impact.DISRUPTIVE,
        files=[FileWrite(path="/etc/netplan/60-roce-wizard.yaml", content="x")],
        commands=[RemoteCommand(argv=["netplan", "apply"])],
    )
    armed = ArmedRevert("roce-wizard-revert-ab12", "/var/lib/roce-wizard/revert/roce-wizard-revert-ab12.sh", 0.0)
    written = [("/etc/netplan/60-roce-wizard.yaml", None), ("/etc/sysctl.d/x.conf", "/var/lib/b/etc/sysctl.d/x.conf")]
    script = revert_script(change, written, armed)
    lines = script.splitlines()
    claim = "mkdir -- /var/lib/roce-wizard/revert/roce-wizard-revert-ab12.claimed 2>/dev/null || exit 0"
    assert lines[4].startswith(claim), "the revert first claims the change; if the wizard confirmed it, it stops"
    assert "rm -f -- /etc/netplan/60-roce-wizard.yaml" in lines
    assert "cp -a -- /var/lib/b/etc/sysctl.d/x.conf /etc/sysctl.d/x.conf" in lines
    assert lines.index("netplan apply") > lines.index("rm -f -- /etc/netplan/60-roce-wizard.yaml")
    assert "ip link" not in script, "no bond was created, none is deleted"
    path = tmp_path / "revert.sh"
    path.write_text(script)
    assert subprocess.run(["bash", "-n", str(path)]).returncode == 0


def test_the_revert_deletes_the_bonds_the_change_created_before_reapplying_netplan(tmp_path: Path) -> None:
    # On a real kernel netplan apply left a bond holding the management NIC after its file was gone.
    change = Change(
        summary="apply bond",
        impact=Impact.DISRUPTIVE,
        files=[FileWrite(path="/etc/netplan/60-roce-wizard.yaml", content="x")],
        commands=[RemoteCommand(argv=["netplan", "apply"])],
        creates_links=["mgmt0"],
    )
    armed = ArmedRevert("roce-wizard-revert-cd34", "/var/lib/roce-wizard/revert/roce-wizard-revert-cd34.sh", 0.0)
    script = revert_script(change, [("/etc/netplan/60-roce-wizard.yaml", None)], armed)
    lines = script.splitlines()
    assert lines.index("rm -f -- /etc/netplan/60-roce-wizard.yaml") < lines.index("ip link delete dev mgmt0")
    assert lines.index("ip link delete dev mgmt0") < lines.index("netplan apply")
    path = tmp_path / "revert.sh"
    path.write_text(script)
    assert subprocess.run(["bash", "-n", str(path)]).returncode == 0


def test_a_change_that_cuts_ssh_is_rolled_back_by_the_host_and_reported(tmp_path: Path) -> None:
    state = tmp_path / "state"
    run = cli("--demo", "--only", "discovery,ofed,network", "--yes", "--fault", "server2:lockout", "--state-dir",
              str(state))  # fmt: skip
    assert run.returncode == 1
    line = next(ln for ln in run.stderr.splitlines() if "server2: FAILED" in ln)
    assert "no new SSH connection" in line and "rolled itself back" in line and "NOT in place" in line
    assert "server1: ok - verified" in run.stderr.split("== network")[1], "the other host keeps its change"
    log = (state / "logs" / "server2.log").read_text()
    assert "systemd-run --unit=roce-wizard-revert-" in log
    again = cli("--demo", "--only", "network", "--yes", "--state-dir", str(state))
    assert again.returncode == 0, again.stderr[-2000:]


def test_a_confirmed_change_disarms_the_revert(tmp_path: Path) -> None:
    state = tmp_path / "state"
    run = cli("--demo", "--only", "discovery,ofed,network", "--yes", "--json", "--state-dir", str(state))
    assert run.returncode == 0, run.stderr[-2000:]
    commands = [json.loads(ln).get("command", "") for ln in run.stdout.splitlines()]
    armed = [c for c in commands if "systemd-run" in c]
    assert armed, "the netplan change must be guarded"
    name = armed[0].split("--unit=")[1].split()[0]
    assert any(c.startswith(f"sudo systemctl stop {name}.timer") for c in commands)


async def test_a_change_slower_than_the_revert_timer_is_reported_rolled_back_not_confirmed() -> None:
    # The host's timer fires while the change still runs: the revert claims the change first (mkdir is atomic),
    # so the wizard must not "confirm" a change the host has already undone.
    from tests.engine.test_ssh_executor import executor, start_lab
    from wizard.engine.apply import Guard, StepFailed, apply_change

    lab = await start_lab()
    ex = executor(lab)
    try:
        change = Change(
            summary="slow change",
            impact=Impact.DISRUPTIVE,
            files=[FileWrite(path="/etc/roce-wizard-slow.conf", content="new\n")],
            # 3 s in the lab; the timer, a safety window, fires after 10 % of 10 s (wizard/engine/clock.py)
            commands=[RemoteCommand(argv=["sleep", "3000"])],
        )
        guard = Guard(revert_after_s=10, confirm_timeout_s=5, clock_scale=0.001)
        with pytest.raises(StepFailed, match="revert timer fired before the wizard could confirm"):
            await apply_change(ex, change, "/var/lib/roce-wizard/backups/t/slow", 60, guard)
        assert (await ex.run(["test", "-e", "/etc/roce-wizard-slow.conf"])).exit_status == 1, "the revert ran"
    finally:
        await ex.close()
        await lab.stop()
