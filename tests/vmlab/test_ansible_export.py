"""The exported Ansible project configures two real kernels' network stage as the wizard verifies it, idempotently.

Run 1 of the playbook configures the bond and the rail (commit-confirmed), the wizard then finds nothing left to
apply on the same hosts, and run 2 of the playbook reports changed=0. (A play whose change cuts SSH:
tests/vmlab/test_cut_ssh.py.)
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
from pathlib import Path

import pytest

from tests.vmlab.conftest import LabVms
from tests.vmlab.test_real_kernel import BOND_AND_RAIL, statuses
from wizard.cli.export_ansible import main as export_ansible_cmd
from wizard.parsers import parse

pytestmark = [
    pytest.mark.vmlab,
    pytest.mark.skipif(shutil.which("ansible-playbook") is None, reason="ansible-core is not installed"),
]

RECAP = re.compile(r"^(\S+)\s*:\s*ok=(\d+)\s+changed=(\d+)\s+unreachable=(\d+)\s+failed=(\d+)", re.M)


def playbook(
    project: Path, timeout_s: float = 900
) -> tuple[subprocess.CompletedProcess[str], dict[str, dict[str, int]]]:
    """ansible-playbook site.yml in the project (its ansible.cfg applies); the recap per host."""
    env = {**os.environ, "ANSIBLE_NOCOLOR": "1", "ANSIBLE_FORCE_COLOR": "0"}
    proc = subprocess.run(
        [shutil.which("ansible-playbook") or "ansible-playbook", "site.yml"],
        cwd=project,
        capture_output=True,
        text=True,
        timeout=timeout_s,
        env=env,
    )
    recap = {
        m[1]: {"ok": int(m[2]), "changed": int(m[3]), "unreachable": int(m[4]), "failed": int(m[5])}
        for m in RECAP.finditer(proc.stdout)
    }
    return proc, recap


def test_the_exported_network_role_configures_the_vms_and_a_second_run_changes_nothing(lab_vms: LabVms) -> None:
    answers = lab_vms.answers(BOND_AND_RAIL)
    project = lab_vms.workdir / "ansible"
    state = lab_vms.workdir / "state"
    code = export_ansible_cmd(
        ["--answers", str(answers), "--only", "network", "--state-dir", str(state), "-o", str(project)]
    )
    assert code == 0
    assert sorted(p.name for p in (project / "roles").iterdir()) == ["network"]

    first, recap = playbook(project)
    assert first.returncode == 0, first.stdout[-6000:] + first.stderr[-2000:]
    assert set(recap) == {"vm1", "vm2"}
    for host, counts in recap.items():
        assert counts["failed"] == 0 and counts["unreachable"] == 0, (host, counts)
        assert counts["changed"] > 0, (host, counts)
    # The guard ran: a new connection confirmed the change and the timer was disarmed (no revert script left).
    assert "a NEW SSH connection proves the host is still reachable" in first.stdout
    vm1, vm2 = lab_vms.vms
    for vm in (vm1, vm2):
        left = lab_vms.ssh(vm, "ls /var/lib/roce-wizard/revert/").stdout.split()
        assert left and all(name.endswith(".claimed") for name in left), left
        timers = lab_vms.ssh(vm, "systemctl list-timers --all --no-legend 'roce-wizard-revert-*'").stdout
        assert "roce-wizard-revert" not in timers
    # The kernel agrees with the plan.
    bonding = parse("bonding", lab_vms.ssh(vm1, "cat /proc/net/bonding/bond0").stdout)
    assert (bonding.mode, bonding.transmit_hash_policy, bonding.mii_status) == ("balance-xor", "layer3+4", "up")
    assert lab_vms.ssh(vm1, "ping -c 2 -W 5 -M do -s 8972 10.78.0.2").exit_status == 0
    assert lab_vms.ssh(vm2, "ping -c 1 -W 5 10.79.0.1").exit_status == 0
    assert "10.0.2.15/24" in lab_vms.ssh(vm1, "ip -br addr show eth0").stdout

    # The wizard verifies the same hosts as configured: nothing left to apply.
    code, events, stderr = lab_vms.wizard("--answers", str(answers), "--only", "discovery,network", "--yes", "--json")
    assert code == 0, stderr
    assert not [e for e in events if e["event"] == "change_started"]
    assert statuses(events, "network") == {"vm1": "done", "vm2": "done"}

    second, recap = playbook(project)
    assert second.returncode == 0, second.stdout[-6000:] + second.stderr[-2000:]
    assert {h: c["changed"] for h, c in recap.items()} == {"vm1": 0, "vm2": 0}, second.stdout[-4000:]
    assert all(c["failed"] == 0 for c in recap.values())
