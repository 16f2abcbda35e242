"""A change that cuts the host's SSH is rolled back by the host itself, on a real kernel, whichever engine applied it.

Moving a host's management NIC into a bond with a static address in another subnet is exactly the change that
strands an operator: qemu forwards SSH to 10.0.2.15, which the change removes. The wizard applies it on vm1 and the
exported Ansible project on vm2, side by side, because what takes the time is the same for both: the host's own
revert timer (40 s here; the 20 s confirmation window must end at least 10 s before it) running out.
"""

from __future__ import annotations

import shutil
import time
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import asyncssh
import pytest

from tests.vmlab.ansible_play import export_network_role, playbook
from tests.vmlab.conftest import LabVms
from tests.vmlab.test_real_kernel import statuses

pytestmark = [
    pytest.mark.vmlab,
    pytest.mark.skipif(shutil.which("ansible-playbook") is None, reason="ansible-core is not installed"),
]

GUARD = {"revert_after_s": 40, "confirm_within_s": 20}


def cut_off(host: str) -> dict[str, Any]:
    """The network answers that move ``host``'s management NIC (eth0) into a bond in another subnet."""
    return {
        "topology": "bond",
        "allow_management_changes": [host],
        "bonds": [{"name": "mgmt0", "mode": "active-backup", "members": ["eth0", "eth1"], "subnet": "10.0.9.0/24"}],
    }


def test_a_change_that_cuts_ssh_is_rolled_back_by_the_host_whether_the_wizard_or_ansible_applied_it(
    lab_vms: LabVms,
) -> None:
    vm1, vm2 = lab_vms.vms
    for vm in (vm1, vm2):
        lab_vms.management_by_dhcp(vm)
    by_wizard = lab_vms.answers(cut_off("vm1"), hosts=["vm1"], safe_apply=GUARD, file="wizard.yaml")
    by_ansible = lab_vms.answers(cut_off("vm2"), hosts=["vm2"], safe_apply=GUARD, file="ansible.yaml")
    project = export_network_role(by_ansible, lab_vms.workdir)

    started = time.monotonic()
    with ThreadPoolExecutor(1) as pool:
        play = pool.submit(playbook, project)
        code, events, stderr = lab_vms.wizard(
            "--answers", str(by_wizard), "--only", "discovery,network", "--yes", "--json"
        )
        proc, recap = play.result()

    # The wizard: the host failed with the reason, and it was told the host rolled itself back.
    assert code == 1, stderr
    assert statuses(events, "network") == {"vm1": "failed"}
    failure = next(e for e in events if e["event"] == "host_status" and e["status"] == "failed")
    assert "no new SSH connection within 20s" in failure["reason"]
    assert "rolled itself back" in failure["reason"] and "NOT in place" in failure["reason"]

    # Ansible: the play lost the host and failed it with the guard's message; the host reverts on its own.
    assert proc.returncode != 0
    assert recap["vm2"]["failed"] == 1, proc.stdout[-6000:]
    assert "the host restores its old files and network by itself 40s after the revert was armed" in proc.stdout
    reverted = ""
    while time.monotonic() - started < 400 and ".reverted" not in reverted:
        try:
            reverted = lab_vms.ssh(vm2, "ls /var/lib/roce-wizard/revert/", timeout_s=30).stdout
        except (OSError, asyncssh.Error, TimeoutError):
            time.sleep(5)
    assert ".reverted" in reverted, "vm2 ran its revert"

    # Both hosts are as they were: management address back, no bond, the wizard's netplan file gone.
    for vm in (vm1, vm2):
        assert "10.0.2.15/24" in lab_vms.ssh(vm, "ip -br addr show eth0").stdout, vm.name
        assert lab_vms.ssh(vm, "ip link show mgmt0").exit_status != 0, f"{vm.name}: the bond the change made is gone"
        assert lab_vms.ssh(vm, "test -e /etc/netplan/60-roce-wizard.yaml").exit_status == 1, vm.name
    leftovers = lab_vms.ssh(vm1, "ls /var/lib/roce-wizard/revert/").stdout.split()
    assert len(leftovers) == 1 and leftovers[0].endswith(".reverted"), "the marker stays, the script is cleaned up"
