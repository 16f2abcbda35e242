"""A rail whose peer is off must never hold a real boot at network-online.target.

systemd-networkd-wait-online(8) waits (120 s by default) for every link networkd manages that is required for online;
netplan's `optional: true` ("not required for booting", netplan-yaml) makes netplan write RequiredForOnline=no for it.
Here real netplan and a real systemd-networkd-wait-online (Debian 12) answer for the file the network stage wrote,
with the rail's cable dark (qemu `set_link ... off`: the guest NIC loses carrier).
"""

from __future__ import annotations

import time

import pytest

from tests.vmlab.conftest import LabVms

pytestmark = pytest.mark.vmlab

RAIL_ONLY = {"topology": "rails", "mtu": 9000, "rails": [{"subnet": "10.79.0.0/24", "netdev": "eth3"}]}
WAIT = "/lib/systemd/systemd-networkd-wait-online --timeout=8"


def test_a_dark_rail_does_not_hold_network_online_but_the_same_rail_without_optional_does(lab_vms: LabVms) -> None:
    answers = lab_vms.answers(RAIL_ONLY)
    code, _, stderr = lab_vms.wizard("--answers", str(answers), "--only", "discovery,network", "--yes", "--json")
    assert code == 0, stderr
    vm1 = lab_vms.vms[0]
    assert "optional: true" in lab_vms.ssh(vm1, "cat /etc/netplan/60-roce-wizard.yaml").stdout
    vm1.hmp("set_link d3 off")  # eth3's cable goes dark, as when the back-to-back peer is powered off
    deadline = time.monotonic() + 30
    while lab_vms.ssh(vm1, "cat /sys/class/net/eth3/carrier").stdout.strip() != "0":
        assert time.monotonic() < deadline, "eth3 kept its carrier after set_link off"
        time.sleep(1)
    quick = lab_vms.ssh(vm1, WAIT)
    assert quick.exit_status == 0, f"wait-online waited for the optional rail: {quick.stdout}{quick.stderr}"
    # The same file without `optional: true` (what the wizard wrote before): real networkd waits for the dark rail.
    lab_vms.ssh(vm1, "sed -i '/optional: true/d' /etc/netplan/60-roce-wizard.yaml && netplan generate")
    lab_vms.ssh(vm1, "networkctl reload")
    stalled = lab_vms.ssh(vm1, WAIT)
    assert stalled.exit_status != 0, "a required rail without carrier must make wait-online time out"
    assert "Timeout occurred while waiting for network connectivity" in stalled.stdout + stalled.stderr
