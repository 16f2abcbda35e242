"""Bad input and broken connections against real OpenSSH and real sudo (the VMs), not the simulator.

Each failure must come back as one line naming the host, while the other host carries on, and no secret may reach a
log or state file.
"""

from __future__ import annotations

import os
import subprocess
import threading
import time
from pathlib import Path

import pytest

from tests.vmlab.conftest import LabVms
from tests.vmlab.test_real_kernel import BOND_AND_RAIL, statuses

pytestmark = pytest.mark.vmlab

PASSWORD = "Corr3ct-horse-battery"  # a test user's password on a throwaway VM


def add_password_sudo_user(lab: LabVms) -> None:
    """A user whose sudo asks for a password, as on many real servers."""
    for vm in lab.vms:
        ready = lab.ssh(
            vm,
            "useradd -m -s /bin/bash opsadmin && echo 'opsadmin:" + PASSWORD + "' | chpasswd && "
            "echo 'opsadmin ALL=(ALL) ALL' > /etc/sudoers.d/opsadmin && chmod 440 /etc/sudoers.d/opsadmin && "
            "install -d -m 700 -o opsadmin -g opsadmin /home/opsadmin/.ssh && "
            "install -m 600 -o opsadmin -g opsadmin /root/.ssh/authorized_keys /home/opsadmin/.ssh/",
        )
        assert ready.exit_status == 0, ready.stderr


def secrets_in(directory: Path, secret: str) -> list[str]:
    return [str(p) for p in directory.rglob("*") if p.is_file() and secret.encode() in p.read_bytes()]


def test_sudo_with_a_password_works_and_a_wrong_one_fails_that_host_only(lab_vms: LabVms) -> None:
    add_password_sudo_user(lab_vms)
    answers = lab_vms.answers(BOND_AND_RAIL, ssh={"user": "opsadmin", "sudo": "password"})
    env = {**os.environ, "ROCE_WIZARD_SUDO_PASSWORD": PASSWORD}
    code, events, stderr = lab_vms.wizard("--answers", str(answers), "--only", "discovery", "--json", env=env)
    assert code == 0, stderr
    assert statuses(events, "discovery") == {"vm1": "done", "vm2": "done"}
    assert secrets_in(lab_vms.workdir / "state", PASSWORD) == [], "the sudo password reached a file"
    # Break the password on vm2 only: vm2 fails with one line, vm1 is verified as before.
    vm2 = lab_vms.vms[1]
    assert lab_vms.ssh(vm2, "echo 'opsadmin:something-else' | chpasswd").exit_status == 0
    code, events, stderr = lab_vms.wizard("--answers", str(answers), "--only", "discovery", "--json", env=env)
    assert code == 1
    assert statuses(events, "discovery")["vm1"] == "done"
    failed = [e for e in events if e["event"] == "check" and e["host"] == "vm2" and e["status"] == "fail"]
    assert any("sudo refused the password" in e["evidence"] for e in failed), failed
    assert PASSWORD not in stderr and secrets_in(lab_vms.workdir / "state", PASSWORD) == []


def test_a_wrong_key_and_a_host_that_stops_answering_fail_only_that_host(lab_vms: LabVms, tmp_path: Path) -> None:
    other_key = tmp_path / "not-the-lab-key"
    subprocess.run(["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-f", str(other_key)], check=True)
    answers = lab_vms.answers(BOND_AND_RAIL, host_extra={"vm2": {"identity_file": str(other_key)}})
    code, events, stderr = lab_vms.wizard("--answers", str(answers), "--only", "discovery", "--json")
    assert code == 1
    assert statuses(events, "discovery") == {"vm1": "done", "vm2": "failed"}
    assert "vm2: FAILED - authentication refused for user 'ubuntu'" in stderr

    # vm1 freezes (qemu `stop`: no FIN, no RST, like a pulled cable) in the middle of the run: SSH keepalives
    # must notice (seen: "connection lost during 'grep ...': Server not responding to keepalive" after 12 s).
    answers = lab_vms.answers(BOND_AND_RAIL, hosts=["vm1"])
    vm1 = lab_vms.vms[0]
    log = lab_vms.workdir / "state" / "logs" / "vm1.log"
    stop_polling = threading.Event()
    seen = log.stat().st_size  # the first run's lines are already there

    def freeze_once_discovery_runs() -> None:
        while not stop_polling.wait(0.1):
            if "$ lspci" in log.read_bytes()[seen:].decode(errors="replace"):
                vm1.hmp("stop")
                return

    freeze = threading.Thread(target=freeze_once_discovery_runs, daemon=True)
    freeze.start()
    started = time.monotonic()
    try:
        code, events, stderr = lab_vms.wizard(
            "--answers", str(answers), "--only", "discovery,network", "--yes", "--json", timeout_s=300
        )
    finally:
        stop_polling.set()
        freeze.join()
        vm1.hmp("cont")
    assert code == 1
    assert time.monotonic() - started < 240, "keepalives must notice a dead peer; the run must not hang"
    failed = [e for e in events if e["event"] == "host_status" and e["status"] == "failed"]
    assert failed and failed[0]["host"] == "vm1"
    # The freeze lands while a command runs ("connection lost during '...'") or just as the next one is being opened
    # ("connection lost before '...' started"): both name the command and the keepalive that noticed.
    reason = failed[0]["reason"]
    assert ("connection lost during" in reason or "connection lost before" in reason) and "keepalive" in reason, failed
    # Progress was saved: the state file says where vm1 stopped.
    assert (lab_vms.workdir / "state" / "hosts" / "vm1.json").exists()
