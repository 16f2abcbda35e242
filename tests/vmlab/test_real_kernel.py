"""The wizard against two real Linux kernels (qemu VMs) over real SSH: no simulator anywhere.

What only a real kernel can show: netplan rendering through systemd-networkd, the bonding driver's own view of a
bond (/proc/net/bonding), jumbo frames across it, Soft-RoCE carrying a real ib_write_bw, and a dark rail that does
not hold a boot at network-online; and the exported Ansible project building the same network as the wizard,
commit-confirmed and idempotent. (A host that rolls a change back by itself when the change cut its SSH, whichever
engine applied it: tests/vmlab/test_cut_ssh.py.)
"""

from __future__ import annotations

import json
import shlex
import shutil
import time
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import pytest

from tests.vmlab.ansible_play import export_network_role, playbook
from tests.vmlab.conftest import LabVms
from tests.vmlab.vms import Vm
from wizard.parsers import parse

pytestmark = pytest.mark.vmlab

BOND_AND_RAIL = {
    "topology": "bond",
    "mtu": 9000,
    "bonds": [
        {
            "name": "bond0",
            "mode": "balance-xor",
            "transmit_hash_policy": "layer3+4",
            "members": ["eth1", "eth2"],
            "subnet": "10.78.0.0/24",
        }
    ],
    # The Soft-RoCE cable gets a rail of its own, as a ConnectX port would.
    "rails": [{"subnet": "10.79.0.0/24", "netdev": "eth3"}],
}


def statuses(events: list[dict[str, Any]], stage: str) -> dict[str, str]:
    return {
        e["host"]: e["status"]
        for e in events
        if e["event"] == "host_status" and e.get("stage") == stage and e["status"] != "running"
    }


def facts(lab: LabVms, host: str) -> dict[str, Any]:
    return json.loads((lab.workdir / "state" / "facts" / f"{host}.json").read_text())


@pytest.mark.skipif(shutil.which("ansible-playbook") is None, reason="ansible-core is not installed")
def test_the_wizard_and_the_exported_role_build_the_same_bond_the_kernel_agrees_with_and_rdma_crosses_it(
    lab_vms: LabVms,
) -> None:
    """One configured pair, built by both engines and read every way it can be (each used to pay for its own pair
    and network apply): the wizard configures vm1 while the exported Ansible project (commit-confirmed) configures
    vm2, side by side; then the bonding driver's view, jumbo frames between the two, a wizard re-run over both that
    plans nothing (so the role built exactly the wizard's plan), a second playbook run that changes nothing, a real
    ib_write_bw over Soft-RoCE on the rail and on the bond shown by bwtest, `roce-wizard rollback` on one host, and
    a dark rail against real systemd-networkd-wait-online on the other."""
    vm1, vm2 = lab_vms.vms
    second = {"vm2": {"host_id": 2}}  # each half gets the address it has in the whole cluster
    both = lab_vms.answers(BOND_AND_RAIL, host_extra=second)
    by_wizard = lab_vms.answers(BOND_AND_RAIL, hosts=["vm1"], file="wizard.yaml")
    by_ansible = lab_vms.answers(BOND_AND_RAIL, hosts=["vm2"], host_extra=second, file="ansible.yaml")
    project = export_network_role(by_ansible, lab_vms.workdir)
    assert sorted(p.name for p in (project / "roles").iterdir()) == ["network"]

    with ThreadPoolExecutor(1) as pool:
        play = pool.submit(playbook, project)
        code, events, stderr = lab_vms.wizard(
            "--answers", str(by_wizard), "--only", "discovery,network", "--yes", "--json"
        )
        first, recap = play.result()
    assert code == 0, stderr
    assert statuses(events, "discovery") == {"vm1": "done"}
    assert statuses(events, "network") == {"vm1": "done"}
    assert first.returncode == 0, first.stdout[-6000:] + first.stderr[-2000:]
    assert set(recap) == {"vm2"}
    assert recap["vm2"]["failed"] == 0 and recap["vm2"]["unreachable"] == 0 and recap["vm2"]["changed"] > 0, recap
    # Ansible's guard ran: a new connection confirmed the change and the timer was disarmed (no revert script left).
    assert "a NEW SSH connection proves the host is still reachable" in first.stdout
    left = lab_vms.ssh(vm2, "ls /var/lib/roce-wizard/revert/").stdout.split()
    assert left and all(name.endswith(".claimed") for name in left), left
    timers = lab_vms.ssh(vm2, "systemctl list-timers --all --no-legend 'roce-wizard-revert-*'").stdout
    assert "roce-wizard-revert" not in timers

    # The kernels agree with the plan.
    for vm in (vm1, vm2):
        bonding = parse("bonding", lab_vms.ssh(vm, "cat /proc/net/bonding/bond0").stdout)
        assert (bonding.mode, bonding.transmit_hash_policy, bonding.mii_status) == ("balance-xor", "layer3+4", "up")
        assert sorted((s.interface, s.mii_status, s.speed_mbps) for s in bonding.slaves) == [
            ("eth1", "up", 100000),
            ("eth2", "up", 100000),
        ], vm.name
        assert '"mtu":9000' in lab_vms.ssh(vm, "ip -j -d link show bond0").stdout
        # The management NIC was left alone.
        assert "10.0.2.15/24" in lab_vms.ssh(vm, "ip -br addr show eth0").stdout
    # A full 9000-byte frame crosses the bond unfragmented (-M do) and the rail answers too.
    jumbo = lab_vms.ssh(vm1, "ping -c 2 -W 5 -M do -s 8972 10.78.0.2")
    assert jumbo.exit_status == 0, jumbo.stdout + jumbo.stderr
    assert lab_vms.ssh(vm2, "ping -c 1 -W 5 10.79.0.1").exit_status == 0

    # The wizard over both hosts: nothing left to apply on the one it configured nor on the one Ansible did.
    code, events, stderr = lab_vms.wizard("--answers", str(both), "--only", "discovery,network", "--yes", "--json")
    assert code == 0, stderr
    assert not [e for e in events if e["event"] == "change_started"]
    assert statuses(events, "network") == {"vm1": "done", "vm2": "done"}
    # Discovery read the real hosts.
    for name in ("vm1", "vm2"):
        found = facts(lab_vms, name)["discovery"]
        assert (found["os_id"], found["os_version"]) == ("debian", "12")
        assert found["hostname"] == name and found["sudo_ok"]
        assert found["ssh_interface"] == "eth0", "SSH arrives on the management NIC (10.0.2.15 behind qemu)"
        assert found["ports"] == [], "no ConnectX card in a VM"
        soft = found["soft_rdma"]
        assert [(p["rdma_device"], p["netdev"], p["model"]) for p in soft] == [("rxe_eth3", "eth3", "Soft-RoCE (rxe)")]
        # The GID table, read in two steps on a real kernel: the slots in use, then the type and netdev of each
        # (a GID is attached to eth3 only through its ndev file): the rail address as a RoCE v2 GID.
        v2 = [g["ipv4"] for g in soft[0]["gids"] if g["version"] == "v2" and g["ipv4"]]
        assert v2 and v2[0].startswith("10.79.0."), soft[0]["gids"]
        assert "rdma_rxe" in found["modules"]
    assert "software RDMA only: rxe_eth3 on eth3" in stderr

    # Real reboots and a real flap: what the network stage wrote brings the rails back by itself.
    assert_the_rails_survive_a_real_reboot_and_a_flap(lab_vms, both)

    # The playbook again: idempotent.
    again, recap = playbook(project)
    assert again.returncode == 0, again.stdout[-6000:] + again.stderr[-2000:]
    assert recap["vm2"]["changed"] == 0 and recap["vm2"]["failed"] == 0, again.stdout[-4000:]

    # Real RDMA traffic: Soft-RoCE on the bond too, as the RoCE LAG device appears on a real server once its bond
    # exists, and bwtest measures the rail and the bond.
    for vm in lab_vms.vms:
        added = lab_vms.ssh(vm, "rdma link add rxe_bond0 type rxe netdev bond0")
        assert added.exit_status == 0, added.stderr
    proc = lab_vms.run_cli(
        "bwtest", "--answers", str(both), "--no-sweep", "--no-nccl", "--seconds", "3", "--json", timeout_s=900
    )
    report = json.loads(proc.stdout)
    measured = {r["client"]["device"]: r for r in report["rails"] + report["together"] if r["gbps"]}
    assert set(measured) == {"rxe_eth3", "rxe_bond0"}, proc.stderr
    for device, result in measured.items():
        assert result["gbps"] > 0 and "RDMA_Write BW Test" in result["output"], (device, result)
        assert result["client"]["ipv4"] in ("10.78.0.2", "10.79.0.2", "10.78.0.1", "10.79.0.1")
    # The per-rail numbers and the verdict are printed for the operator as well (Soft-RoCE is far below line
    # rate: the verdict may well be a fail; what matters here is that real traffic was measured and shown).
    assert "rxe_eth3" in proc.stderr or "eth3" in proc.stderr
    for vm in lab_vms.vms:  # the test's own device goes before the rollback takes the bond away
        assert lab_vms.ssh(vm, "rdma link delete rxe_bond0").exit_status == 0

    # And `roce-wizard rollback` takes the wizard's changes away again on the chosen host.
    undo = lab_vms.run_cli("rollback", "--answers", str(both), "--host", "vm1", "--stage", "network", "--yes")
    assert undo.returncode == 0, undo.stdout + undo.stderr
    assert lab_vms.ssh(vm1, "ip link show bond0").exit_status == 1, "the bond the wizard created is gone"
    assert lab_vms.ssh(vm1, "test -e /etc/netplan/60-roce-wizard.yaml").exit_status == 1
    assert "master" not in lab_vms.ssh(vm1, "ip -br link show eth1; ip link show eth1").stdout
    assert lab_vms.ssh(vm2, "test -e /proc/net/bonding/bond0").exit_status == 0, "vm2 was not chosen"

    # Boot waits: the rail's cable goes dark on vm2, whose configuration is the exported role's.
    assert_a_dark_rail_holds_network_online_only_without_optional(lab_vms, vm2)


# A ConnectX port's RDMA device comes back by itself at boot; the lab's stand-in for it, Soft-RoCE, needs a unit.
RXE_AT_BOOT = """[Unit]
Description=Soft-RoCE on eth3 (the lab's stand-in for a ConnectX port's RDMA device)
After=systemd-udev-settle.service systemd-networkd.service

[Service]
Type=oneshot
RemainAfterExit=yes
ExecStart=/bin/sh -c 'modprobe rdma_rxe && rdma link add rxe_eth3 type rxe netdev eth3'

[Install]
WantedBy=multi-user.target
"""
# What a host moved to netplan often keeps: its old hand-written file for the rail. It sorts before netplan's
# 10-netplan-eth3.network, so networkd configures eth3 with it at every boot, and at no other time.
LEFTOVER = "[Match]\nName=eth3\n\n[Link]\nMTUBytes=1500\n\n[Network]\nAddress=10.79.0.2/24\n"


def assert_the_rails_survive_a_real_reboot_and_a_flap(lab_vms: LabVms, answers: Any) -> None:
    """`verify --reboot` reboots both VMs at once for real: vm1 comes back with its bond, MTU and rail as the
    network stage left them; vm2, given a leftover .network file, comes back with its rail at MTU 1500 and the
    reason is named from what networkd itself says. Then `verify --flap` takes vm1's rail down and up for real."""
    vm1, vm2 = lab_vms.vms
    for vm in lab_vms.vms:
        unit = lab_vms.ssh(
            vm,
            f"printf %s {shlex.quote(RXE_AT_BOOT)} > /etc/systemd/system/rxe-eth3.service && "
            "systemctl daemon-reload && systemctl enable rxe-eth3.service",
        )
        assert unit.exit_status == 0, unit.stderr
    leftover = lab_vms.ssh(vm2, f"printf %s {shlex.quote(LEFTOVER)} > /etc/systemd/network/10-eth3.network")
    assert leftover.exit_status == 0, leftover.stderr

    proc = lab_vms.run_cli(
        "verify", "--answers", str(answers), "--only", "network", "--reboot", "--max-unavailable", "2",
        "--yes", "--json", timeout_s=1200,
    )  # fmt: skip
    lab_vms.close()  # the test's kept connections died with the reboot
    # Nothing was lost before the reboot (discovery is read afresh for it, once per wave, as the stage's input).
    assert "network holds on all 2 hosts" in proc.stderr, proc.stderr[-4000:]
    rows = {r["host"]: r for r in map(json.loads, proc.stdout.splitlines())}
    assert proc.returncode == 1, proc.stderr[-4000:]
    rxe = {
        vm.name: lab_vms.ssh(vm, "rdma link show; journalctl -b -u rxe-eth3 --no-pager | tail -5").stdout
        for vm in lab_vms.vms
    }
    assert rows["vm1"]["came_back"] and rows["vm1"]["lost"] == {}, (rows["vm1"], rxe)
    assert rows["vm2"]["came_back"] and list(rows["vm2"]["lost"]) == ["network"], rows["vm2"]
    why = " ".join(rows["vm2"]["causes"]["network"])
    assert "configured eth3 with /etc/systemd/network/10-eth3.network" in why, why
    assert "10-netplan-eth3.network" in why
    # The kernels agree: vm1 rebooted (a new boot id) into the bond, jumbo frames and its Soft-RoCE rail.
    assert float(lab_vms.ssh(vm1, "cut -d' ' -f1 /proc/uptime").stdout) < 900
    assert '"mtu":9000' in lab_vms.ssh(vm1, "ip -j link show bond0").stdout
    assert "rxe_eth3" in lab_vms.ssh(vm1, "rdma link show").stdout
    assert '"mtu":1500' in lab_vms.ssh(vm2, "ip -j link show eth3").stdout

    # The operator removes the leftover file; networkd gives eth3 netplan's configuration again.
    fixed = lab_vms.ssh(
        vm2, "rm /etc/systemd/network/10-eth3.network && networkctl reload && networkctl reconfigure eth3"
    )
    assert fixed.exit_status == 0, fixed.stderr
    deadline = time.monotonic() + 60
    while '"mtu":9000' not in lab_vms.ssh(vm2, "ip -j link show eth3").stdout:
        assert time.monotonic() < deadline, "eth3 did not get netplan's MTU back"
        time.sleep(2)

    flap = lab_vms.run_cli(
        "verify", "--answers", str(answers), "--only", "network", "--flap", "vm1:eth3", "--yes", timeout_s=600
    )
    assert flap.returncode == 0, flap.stderr[-4000:]
    assert "vm1:eth3 came back whole" in flap.stderr
    assert "RoCE v2 IPv4 GID unchanged" in flap.stderr


WAIT = "/lib/systemd/systemd-networkd-wait-online --timeout=8"


def assert_a_dark_rail_holds_network_online_only_without_optional(lab_vms: LabVms, vm: Vm) -> None:
    """A rail whose peer is off must never hold a real boot at network-online.target.

    systemd-networkd-wait-online(8) waits (120 s by default) for every link networkd manages that is required for
    online; netplan's `optional: true` ("not required for booting", netplan-yaml) makes netplan write
    RequiredForOnline=no for it. Real netplan and a real systemd-networkd-wait-online (Debian 12) answer for the file
    the network stage wrote, with the rail's cable dark (qemu `set_link ... off`: the guest NIC loses carrier)."""
    assert "optional: true" in lab_vms.ssh(vm, "cat /etc/netplan/60-roce-wizard.yaml").stdout
    vm.hmp("set_link d3 off")  # eth3's cable goes dark, as when the back-to-back peer is powered off
    deadline = time.monotonic() + 30
    while lab_vms.ssh(vm, "cat /sys/class/net/eth3/carrier").stdout.strip() != "0":
        assert time.monotonic() < deadline, "eth3 kept its carrier after set_link off"
        time.sleep(1)
    quick = lab_vms.ssh(vm, WAIT)
    assert quick.exit_status == 0, f"wait-online waited for the optional rail: {quick.stdout}{quick.stderr}"
    # The same file without `optional: true` (what the wizard wrote before): real networkd waits for the dark rail.
    lab_vms.ssh(vm, "sed -i '/optional: true/d' /etc/netplan/60-roce-wizard.yaml && netplan generate")
    lab_vms.ssh(vm, "networkctl reload")
    stalled = lab_vms.ssh(vm, WAIT)
    assert stalled.exit_status != 0, "a required rail without carrier must make wait-online time out"
    assert "Timeout occurred while waiting for network connectivity" in stalled.stdout + stalled.stderr
