"""Stage roce, pure: the plan brings every RoCE port to DSCP trust + PFC on one priority, and nothing else."""

from __future__ import annotations

import re
import shutil
import subprocess

import pytest

from steps.discovery.facts import NicPort
from steps.roce.desired import Desired
from steps.roce.facts import RdmaCm, RoceFacts, SkippedPort, UnitState, roce_targets
from steps.roce.plan import build_plan
from steps.roce.script import script_text, template_text, udev_rule_text, unit_text
from steps.roce.stage import Roce
from tests.steps.facts_builder import answers, roce_facts, view

ANSWERS = answers()
WANT = Desired.from_answers(ANSWERS)


def commands(plan) -> list[str]:
    return [c.shell() for change in plan.changes for c in change.commands]


def test_fresh_doca_host_gets_trust_dscp_and_pfc_on_priority_3_on_every_port():
    plan = build_plan("server1", roce_facts(), WANT)
    cmds = commands(plan)
    for netdev in ("ens1f0np0", "ens1f1np1", "ens2f0np0", "ens2f1np1"):
        assert f"sudo mlnx_qos -i {netdev} --trust dscp" in cmds
        assert f"sudo mlnx_qos -i {netdev} --pfc 0,0,0,1,0,0,0,0" in cmds
    assert not plan.blockers


def test_pfc_vector_and_rdma_cm_tos_come_from_roce_tos():
    want = Desired.from_answers(answers("roce:\n  tos: 138\n"))  # DSCP 34 -> priority 4
    cmds = commands(build_plan("server1", roce_facts(), want))
    assert "sudo mlnx_qos -i ens1f0np0 --pfc 0,0,0,0,1,0,0,0" in cmds
    assert "sudo cma_roce_tos -d mlx5_0 -p 1 -t 138" in cmds
    assert any("tee /sys/class/net/ens1f0np0/ecn/roce_np/enable/4" in c for c in cmds)


def test_pfc_is_never_configured_on_a_bond_device():
    # RoCE LAG: bond0 carries mlx5_bond_0; QoS goes on both slaves, never on the bond
    ports = [
        NicPort(pci="0000:3b:00.0", model="ConnectX-4 Lx", netdev="ens1f0np0", master="bond0"),
        NicPort(pci="0000:3b:00.1", model="ConnectX-4 Lx", netdev="ens1f1np1", master="bond0"),
    ]
    targets, skipped = roce_targets(ports, {"bond0": "mlx5_bond_0"}, {"mlx5_bond_0": "Ethernet"}, "eno1", False)
    assert [(p.netdev, dev, bond) for p, dev, bond in targets] == [
        ("ens1f0np0", "mlx5_bond_0", "bond0"),
        ("ens1f1np1", "mlx5_bond_0", "bond0"),
    ]
    facts = roce_facts(names=("mlx5_bond_0",) * 4)
    for p in facts.ports:
        p.lag_bond = "bond0"
    plan = build_plan("server1", facts, WANT)
    assert not [c for c in commands(plan) if re.search(r"\bbond0\b", c)]
    assert "bond0" not in script_text("server1", facts, WANT).split("#")[0]


def test_slave_of_a_bond_without_roce_lag_is_skipped_with_reason():
    ports = [NicPort(pci="0000:3b:00.0", model="ConnectX-4 Lx", netdev="ens1f0np0", master="bond0")]
    targets, skipped = roce_targets(ports, {}, {}, "eno1", False)
    assert targets == []
    assert skipped == [
        SkippedPort(name="ens1f0np0", reason="slave of bond0 without RoCE LAG: no RDMA traffic can use this port")
    ]


def test_infiniband_ports_are_skipped_by_this_roce_only_stage():
    ports = [NicPort(pci="0000:3b:00.0", model="ConnectX-6", netdev="ibp59s0", rdma_device="mlx5_0")]
    targets, skipped = roce_targets(ports, {}, {"mlx5_0": "InfiniBand"}, "eno1", False)
    assert targets == []
    assert "InfiniBand" in skipped[0].reason


def test_the_interface_carrying_ssh_is_never_reconfigured():
    ports = [NicPort(pci="0000:3b:00.0", model="ConnectX-4 Lx", netdev="ens1f0np0", rdma_device="mlx5_0")]
    targets, skipped = roce_targets(ports, {}, {}, "ens1f0np0", False)
    assert targets == [] and "SSH" in skipped[0].reason
    targets, _ = roce_targets(ports, {}, {}, "ens1f0np0", True)
    assert [p.netdev for p, _, _ in targets] == ["ens1f0np0"]


def test_device_names_come_from_facts_inbox_names_included():
    inbox = ("rocep59s0f0", "rocep59s0f1", "rocep134s0f0", "rocep134s0f1")
    facts = roce_facts(tool="dcb", names=inbox)
    text = " ".join(commands(build_plan("server1", facts, WANT)))
    assert "rocep134s0f1" in text and "mlx5_" not in text


def test_inbox_stack_uses_iproute2_dcb_instead_of_mlnx_qos():
    cmds = commands(build_plan("server1", roce_facts(tool="dcb", names=("rocep59s0f0",) * 4), WANT))
    assert "sudo dcb pfc set dev ens1f0np0 prio-pfc 0:off 1:off 2:off 3:on 4:off 5:off 6:off 7:off" in cmds
    assert "sudo dcb app add dev ens1f0np0 dscp-prio 26:3" in cmds
    assert not any("mlnx_qos" in c for c in cmds)


def test_inbox_without_ecn_tree_skips_ecn_with_a_reason():
    plan = build_plan("server1", roce_facts(tool="dcb"), WANT)
    assert not any("/ecn/" in c for c in commands(plan))
    assert any("no /sys/class/net/IF/ecn" in n for n in plan.notes)


def test_ecn_is_written_with_tee_and_the_value_on_stdin_where_the_tree_exists():
    plan = build_plan("server1", roce_facts(), WANT)
    writes = {c.argv[1]: c.input for ch in plan.changes for c in ch.commands if c.argv[0] == "tee"}
    base = "/sys/class/net/ens2f1np1/ecn"
    assert writes[f"{base}/roce_np/enable/3"] == "1"
    assert writes[f"{base}/roce_rp/enable/3"] == "1"
    # cnp_dscp 48 / cnp_802p_prio 6 are already the adapter defaults: nothing to write
    assert f"{base}/roce_np/cnp_dscp" not in writes


def test_cma_roce_mode_is_set_only_where_it_is_not_already_roce_v2():
    facts = roce_facts()
    facts.rdma_cm[1] = RdmaCm(device="mlx5_1", mode="IB/RoCE v1", tos=0)
    cmds = commands(build_plan("server1", facts, WANT))
    assert [c for c in cmds if "cma_roce_mode" in c] == ["sudo cma_roce_mode -d mlx5_1 -p 1 -m 2"]
    assert len([c for c in cmds if "cma_roce_tos" in c]) == 4


def test_rdma_cm_on_inbox_goes_through_configfs():
    facts = roce_facts(tool="dcb", names=("rocep59s0f0", "rocep59s0f1", "rocep134s0f0", "rocep134s0f1"))
    facts.rdma_cm = [RdmaCm(device="rocep59s0f0")]  # never configured: kernel default RoCE v2, ToS 0
    plan = build_plan("server1", facts, WANT)
    cm = next(ch for ch in plan.changes if ch.summary.startswith("RDMA-CM"))
    assert [c.argv for c in cm.commands] == [
        ["mkdir", "-p", "/sys/kernel/config/rdma_cm/rocep59s0f0"],
        ["tee", "/sys/kernel/config/rdma_cm/rocep59s0f0/ports/1/default_roce_tos"],
    ]
    assert cm.commands[1].input == "106"


def test_dscp_map_is_fixed_when_the_dscp_does_not_land_in_the_pfc_priority():
    facts = roce_facts(configured=True)
    facts.ports[0].dscp2prio[26] = 0
    cmds = commands(build_plan("server1", facts, WANT))
    assert cmds == ["sudo mlnx_qos -i ens1f0np0 --dscp2prio set,26,3"]


def test_lldpad_running_refuses_by_default_naming_the_ports_and_the_fix():
    facts = roce_facts(lldpad=UnitState(active="active", enabled="enabled"))
    plan = build_plan("server2", facts, WANT)
    assert plan.changes == []
    assert plan.blockers == [
        "server2: lldpad is active/enabled and overwrites PFC on ens1f0np0, ens1f1np1, ens2f0np0, ens2f1np1; fix: "
        "sudo systemctl disable --now lldpad, or set roce.stop_lldpad: true"
    ]


def test_lldpad_is_stopped_and_disabled_before_any_qos_change_when_allowed():
    want = Desired.from_answers(answers("roce:\n  stop_lldpad: true\n"))
    facts = roce_facts(lldpad=UnitState(active="active", enabled="enabled"))
    plan = build_plan("server2", facts, want)
    first = plan.changes[0]
    assert first.commands[0].argv == ["systemctl", "disable", "--now", "lldpad.service"]
    assert first.impact == "disruptive" and "DCBX" in first.why


def test_an_enabled_lldpad_socket_is_disabled_too_so_lldptool_cannot_restart_lldpad():
    want = Desired.from_answers(answers("roce:\n  stop_lldpad: true\n"))
    facts = roce_facts(
        lldpad=UnitState(active="inactive", enabled="enabled"),
        lldpad_socket=UnitState(active="active", enabled="enabled"),
    )
    first = build_plan("server2", facts, want).changes[0]
    assert first.commands[0].argv == ["systemctl", "disable", "--now", "lldpad.service", "lldpad.socket"]


def test_lldpad_outside_systemd_is_a_blocker():
    plan = build_plan("server2", roce_facts(lldpad_running=True), WANT)
    assert "outside systemd" in plan.blockers[0]


def test_qos_changes_need_confirmation_and_persistence_is_safe():
    plan = build_plan("server1", roce_facts(), WANT)
    qos = [c for c in plan.changes if "trust DSCP" in c.summary]
    assert qos and all(c.impact == "disruptive" for c in qos)
    persist = plan.changes[-1]
    assert persist.impact == "safe"
    assert [f.path for f in persist.files] == [
        "/usr/local/sbin/roce-wizard-qos.sh",
        "/etc/systemd/system/roce-wizard-qos.service",
        "/etc/systemd/system/roce-wizard-qos@.service",
        "/etc/udev/rules.d/90-roce-wizard-qos.rules",
    ]
    assert [c.argv for c in persist.commands] == [
        ["systemctl", "daemon-reload"],
        ["udevadm", "control", "--reload"],
        ["systemctl", "enable", "roce-wizard-qos.service"],
        ["systemctl", "restart", "roce-wizard-qos.service"],
    ]
    assert persist.files[0].mode == 0o755


def test_a_configured_host_plans_nothing_and_says_why():
    plan = build_plan("server1", roce_facts(configured=True), WANT)
    assert plan.changes == []
    assert plan.noop_reason == (
        "mlnx_qos already trusts DSCP with PFC on priority 3 on all 4 port(s); DSCP 26 -> priority 3; ECN on; "
        "RDMA-CM RoCE v2, ToS 106; roce-wizard-qos.service enabled"
    )


def test_a_changed_script_on_an_active_unit_is_run_directly_so_the_serving_units_are_not_restarted():
    """Restarting roce-wizard-qos.service would restart the units that Requires= it (systemd.unit(5))."""
    facts = roce_facts(configured=True)
    facts.script_text = (facts.script_text or "") + "# an older version\n"
    plan = build_plan("server1", facts, WANT)
    assert commands(plan)[-1] == "sudo /usr/local/sbin/roce-wizard-qos.sh"
    assert not [c for c in commands(plan) if "systemctl restart" in c]


def test_a_failed_unit_is_restarted_even_when_its_files_match():
    facts = roce_facts(configured=True)
    facts.unit = UnitState(active="failed", enabled="enabled")
    plan = build_plan("server1", facts, WANT)
    assert commands(plan) == ["sudo systemctl restart roce-wizard-qos.service"]


def test_no_qos_tool_is_a_blocker_with_the_fix():
    plan = build_plan("server1", roce_facts(tool="none"), WANT)
    assert "neither mlnx_qos" in plan.blockers[0] and "stage ofed" in plan.blockers[0]


def test_a_host_without_roce_ports_plans_nothing():
    facts = RoceFacts(skipped=[SkippedPort(name="ibp59s0", reason="mlx5_0 is InfiniBand")])
    plan = build_plan("server1", facts, WANT)
    assert plan.changes == [] and plan.noop_reason and plan.notes == ["ibp59s0: skipped, mlx5_0 is InfiniBand"]


# -- the persistence unit and script --------------------------------------------------------------------------
def test_unit_waits_for_network_online_and_for_openibd_when_it_exists():
    with_openibd = unit_text(True)
    assert "Wants=network-online.target\n" in with_openibd
    assert "After=network-online.target openibd.service\n" in with_openibd
    assert "After=network-online.target\n" in unit_text(False)
    # network.target says nothing about interfaces being configured (systemd.io synchronization points)
    assert "network.target" not in with_openibd.replace("network-online.target", "")
    for line in ("Type=oneshot", "RemainAfterExit=yes", "WantedBy=multi-user.target",
                 "ExecStart=/usr/local/sbin/roce-wizard-qos.sh"):  # fmt: skip
        assert line in with_openibd.splitlines()


def test_unit_file_is_valid_unit_syntax():
    sections: dict[str, dict[str, str]] = {}
    current = None
    for line in unit_text(True).splitlines():
        if not line or line.startswith("#"):
            continue
        if line.startswith("["):
            assert line.endswith("]")
            current = line[1:-1]
            sections[current] = {}
            continue
        key, sep, value = line.partition("=")
        assert sep and current and key and value, line
        sections[current][key] = value
    assert list(sections) == ["Unit", "Service", "Install"]


@pytest.mark.skipif(shutil.which("bash") is None, reason="bash not installed")
@pytest.mark.parametrize("tool", ["mlnx_qos", "dcb"])
def test_generated_script_passes_bash_n(tool, tmp_path):
    path = tmp_path / "qos.sh"
    path.write_text(script_text("server1", roce_facts(tool=tool), WANT))
    result = subprocess.run(["bash", "-n", str(path)], capture_output=True, text=True)
    assert result.returncode == 0, result.stderr


def test_script_is_flat_strict_and_waits_boundedly_instead_of_sleeping():
    text = script_text("server1", roce_facts(), WANT)
    assert text.startswith("#!/bin/bash\n")
    assert "set -euo pipefail\n" in text
    assert "sleep 10" not in text
    for netdev in ("ens1f0np0", "ens1f1np1", "ens2f0np0", "ens2f1np1"):
        assert f"wait_for /sys/class/net/{netdev}\n" in text
        assert f"mlnx_qos -i {netdev} --trust dscp >/dev/null\n" in text
        assert f"mlnx_qos -i {netdev} --pfc 0,0,0,1,0,0,0,0 >/dev/null\n" in text
        assert f"echo 1 > /sys/class/net/{netdev}/ecn/roce_np/enable/3\n" in text
    assert "cma_roce_tos -d mlx5_3 -p 1 -t 106 >/dev/null\n" in text
    # RoCE v2 is already RDMA-CM's default: the script does not set it
    assert "cma_roce_mode" not in text
    assert "for i in $(seq 1 60)" in text


def test_inbox_script_replaces_the_dscp_app_entry_so_it_can_run_twice():
    text = script_text("server1", roce_facts(tool="dcb"), WANT)
    assert "dcb app replace dev ens1f0np0 dscp-prio 26:3\n" in text
    assert "echo 106 > /sys/kernel/config/rdma_cm/mlx5_0/ports/1/default_roce_tos\n" in text
    assert "/ecn/" not in text


# -- the step on a ClusterView -----------------------------------------------------------------------------------
def test_step_plan_reads_facts_stored_by_the_runner():
    v = view(ANSWERS, {"server1": {"roce": roce_facts(configured=True)}})
    assert Roce().plan(v, "server1").changes == []
    assert Roce().plan(view(ANSWERS, {}), "server1").blockers == ["server1: no roce facts (probe did not run)"]


# -- re-application after a driver reload (issue 13 item 2) ------------------------------------------------------
def test_qos_is_reapplied_by_a_udev_rule_on_mlx5_netdev_add_for_doca_and_inbox_alike():
    """udev(7): ENV{SYSTEMD_WANTS} on a net device "add" starts the unit each time the device appears
    (systemd.device(5)); DRIVERS matches the PCI parent bound to mlx5_core; $name is the name after renaming.
    PartOf=openibd.service would only follow `systemctl restart openibd` (systemd.unit(5)), not a direct
    `/etc/init.d/openibd restart`, and the inbox driver has no openibd.service."""
    rule = [line for line in udev_rule_text().splitlines() if not line.startswith("#")]
    assert rule == [
        'ACTION=="add", SUBSYSTEM=="net", DRIVERS=="mlx5_core", TAG+="systemd", '
        'ENV{SYSTEMD_WANTS}+="roce-wizard-qos@$name.service"'
    ]
    template = template_text().splitlines()
    for line in ("BindsTo=sys-subsystem-net-devices-%i.device", "After=sys-subsystem-net-devices-%i.device",
                 "Type=oneshot", "ExecStart=/usr/local/sbin/roce-wizard-qos.sh %I"):  # fmt: skip
        assert line in template
    assert "PartOf" not in unit_text(True) + template_text()
    plan = build_plan("server1", roce_facts(), WANT)
    assert any("PartOf=openibd.service would miss a direct /etc/init.d/openibd call" in n for n in plan.notes)


async def test_the_script_given_a_port_configures_that_port_only_and_ignores_ports_it_does_not_own():
    """What roce-wizard-qos@PORT.service runs: one port, its RDMA device's RDMA-CM ToS; an mlx5 port the wizard
    does not configure (the SSH port on a ConnectX) is left alone with exit 0 so the unit does not fail."""
    lab = pytest.importorskip("wizard.lab", reason="the simulated lab (wizard.lab) is not importable")
    from wizard.lab import packages
    from wizard.lab.profile import reference_profile

    host = lab.SimHost("server1", reference_profile(0), "10.0.0.11/24")
    for pkg in packages.DOCA:
        packages.install_files(host, pkg)
    host.power_on()
    host.fs.install("/usr/local/sbin/roce-wizard-qos.sh", script_text("server1", roce_facts(), WANT), 0o755)
    done = await host.run("/usr/local/sbin/roce-wizard-qos.sh ens2f0np0")
    assert done.status == 0, done.stderr
    trust = {name: dev.qos.trust for name, dev in host.netdevs.items() if dev.qos is not None}
    assert trust == {"ens1f0np0": "pcp", "ens1f1np1": "pcp", "ens2f0np0": "dscp", "ens2f1np1": "pcp"}
    assert host.rdma_cfg["mlx5_2"]["tos"] == 106 and "mlx5_0" not in host.rdma_cfg
    other = await host.run("/usr/local/sbin/roce-wizard-qos.sh eno1")
    assert other.status == 0 and "eno1 is not a RoCE port roce-wizard configures" in other.stdout
    assert (await host.run("/usr/local/sbin/roce-wizard-qos.sh")).status == 0
    assert {dev.qos.trust for dev in host.netdevs.values() if dev.qos is not None} == {"dscp"}
