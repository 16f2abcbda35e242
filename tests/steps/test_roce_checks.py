"""Stage roce, verification: each port's QoS, ECN, RDMA-CM, lldpad and persistence; consistency across hosts."""

from __future__ import annotations

from steps.roce.checks import cluster_consistency, host_checks
from steps.roce.desired import Desired
from steps.roce.facts import (
    RdmaCm,
    UnitState,
    devinfo_ports,
    parse_cma_value,
    parse_dcb_app_dscp,
    parse_dcb_pfc,
    parse_dcb_pfc_delay,
    parse_grep_values,
    parse_systemctl_show,
)
from steps.roce.stage import Roce
from tests.fixture_files import real_output
from tests.steps.facts_builder import answers, roce_facts, view
from wizard.parsers import parse

WANT = Desired.from_answers(answers())


def by_id(items):
    return {i.id: i for i in items}


def test_a_configured_host_passes_every_item():
    items = host_checks("server1", roce_facts(configured=True), WANT)
    assert {i.status for i in items} == {"pass"}
    ids = set(by_id(items))
    assert {"lldpad", "persistence", "trust:ens1f0np0", "pfc:ens2f1np1", "dscp:ens1f1np1", "ecn:ens2f0np0"} <= ids
    assert {"rdma_cm:mlx5_0", "rdma_cm:mlx5_3"} <= ids


def test_pfc_reset_by_lldpad_fails_naming_host_port_and_fix():
    facts = roce_facts(configured=True, lldpad=UnitState(active="active", enabled="enabled"))
    facts.ports[0].pfc = [0] * 8
    items = by_id(host_checks("server2", facts, WANT))
    pfc = items["pfc:ens1f0np0"]
    assert pfc.status == "fail"
    assert pfc.evidence == "ens1f0np0 (mlx5_0): PFC enabled on none (lldpad is running and resets it)"
    assert pfc.fix == "sudo systemctl disable --now lldpad; mlnx_qos -i ens1f0np0 --pfc 0,0,0,1,0,0,0,0"
    assert items["lldpad"].status == "fail"
    assert items["pfc:ens1f1np1"].status == "pass"


def test_trust_pcp_fails_both_trust_and_the_dscp_mapping():
    facts = roce_facts(configured=True)
    facts.ports[2].trust = "pcp"
    items = by_id(host_checks("server1", facts, WANT))
    assert items["trust:ens2f0np0"].status == "fail"
    assert items["dscp:ens2f0np0"].evidence.endswith("but DSCP is ignored (trust pcp)")


def test_ecn_off_fails_and_ecn_absent_is_skipped_with_reason():
    facts = roce_facts(configured=True)
    facts.ports[0].ecn["roce_np/enable/3"] = 0
    assert by_id(host_checks("server1", facts, WANT))["ecn:ens1f0np0"].status == "fail"
    inbox = by_id(host_checks("server1", roce_facts(configured=True, tool="dcb"), WANT))
    assert inbox["ecn:ens1f0np0"].status == "skip" and "inbox driver" in inbox["ecn:ens1f0np0"].evidence


def test_rdma_cm_tos_lost_after_a_driver_reload_fails():
    facts = roce_facts(configured=True)
    facts.rdma_cm[3] = RdmaCm(device="mlx5_3", mode="RoCE v2", tos=0)
    item = by_id(host_checks("server1", facts, WANT))["rdma_cm:mlx5_3"]
    assert item.status == "fail" and item.evidence == "mlx5_3 port 1 (cma_roce_mode/cma_roce_tos): RoCE v2, ToS 0"


def test_persistence_fails_when_the_unit_is_not_enabled_or_the_script_differs():
    facts = roce_facts(configured=True)
    facts.unit = UnitState(active="active", enabled="disabled")
    facts.script_text = facts.script_text.replace("--pfc 0,0,0,1,0,0,0,0", "--pfc 0,0,0,0,0,0,0,0")
    item = by_id(host_checks("server1", facts, WANT))["persistence"]
    assert item.status == "fail"
    assert item.evidence == (
        "/usr/local/sbin/roce-wizard-qos.sh differs from the plan; roce-wizard-qos.service is disabled, not enabled"
    )


def test_consistency_fails_only_the_host_that_deviates():
    good, bad = roce_facts(configured=True), roce_facts(configured=True, host="server2")
    bad.ports[1].pfc = [0] * 8
    result = cluster_consistency({"server1": good, "server2": bad}, WANT)
    (mine,), (theirs,) = result["server2"], result["server1"]
    assert mine.status == "fail" and mine.evidence == "rail 1 ens1f1np1 PFC on none"
    assert theirs.status == "warn"
    assert theirs.evidence == "server2 differs (PFC) on ens1f1np1: see server2's roce checks"


def test_consistency_warns_on_gid_index_and_mtu_differences_per_rail():
    other = roce_facts(configured=True, gid_index=5, host="server2")
    other.ports[0].mtu = 1500
    result = cluster_consistency({"server1": roce_facts(configured=True), "server2": other}, WANT)
    item = result["server1"][0]
    assert item.status == "warn"
    assert "rail 0 RoCE v2 IPv4 GID index: server1 ens1f0np0=3, server2 ens1f0np0=5" in item.evidence
    assert "rail 0 MTU: server1 ens1f0np0=9000, server2 ens1f0np0=1500" in item.evidence


def test_consistent_hosts_pass_and_a_single_host_has_nothing_to_compare():
    result = cluster_consistency({"a": roce_facts(configured=True), "b": roce_facts(configured=True, host="b")}, WANT)
    assert result["a"][0].status == "pass"
    assert cluster_consistency({"a": roce_facts(configured=True)}, WANT) == {"a": []}


def test_step_cluster_checks_use_every_host_with_facts():
    ans = answers()
    v = view(ans, {"server1": {"roce": roce_facts(configured=True)},
                   "server2": {"roce": roce_facts(configured=True, host="server2")}})  # fmt: skip
    assert {h: [i.status for i in items] for h, items in Roce().cluster_checks(v).items()} == {
        "server1": ["pass"],
        "server2": ["pass"],
    }


# -- the small parsers the probe uses ---------------------------------------------------------------------------
def test_dcb_pfc_and_app_outputs_parse_with_symbolic_dscp_names():
    assert parse_dcb_pfc("prio-pfc 0:off 1:off 2:off 3:on 4:off 5:off 6:off 7:off \n") == [0, 0, 0, 1, 0, 0, 0, 0]
    assert parse_dcb_pfc("pfc-cap 8 macsec-bypass off delay 0 \n") is None
    assert parse_dcb_app_dscp("dscp-prio AF31:3 CS6:6 \n") == {26: 3, 48: 6}
    assert parse_dcb_app_dscp("dscp-prio 26:3 \n") == {26: 3}
    assert parse_dcb_app_dscp("") == {}


def test_grep_and_cma_outputs_parse():
    text = "/sys/class/net/ens1f0np0/ecn/roce_np/enable/3:1\n/sys/class/net/ens1f0np0/ecn/roce_np/cnp_dscp:48\n"
    assert parse_grep_values(text) == {
        "/sys/class/net/ens1f0np0/ecn/roce_np/enable/3": "1",
        "/sys/class/net/ens1f0np0/ecn/roce_np/cnp_dscp": "48",
    }
    assert parse_cma_value(real_output("cma_roce_mode", "rocev2-notes-2.txt")) == "RoCE v2"
    assert parse_cma_value("106\n") == "106"
    assert parse_cma_value("Module rdma_cm is not loaded or does not support configfs\n") is None


def test_real_mlnx_qos_output_gives_trust_pfc_and_the_default_dscp_map():
    qos = parse("mlnx_qos", real_output("mlnx_qos", "tcp-ecn-note-dscp-2.txt"))
    assert qos.trust == "dscp" and qos.pfc_enabled == [0] * 8
    assert qos.priority_of_dscp(26) == 3


def test_roce_v2_ipv4_gid_index_is_discovered_from_real_ibv_devinfo():
    devinfo = parse("ibv_devinfo", real_output("ibv_devinfo", "versity-blog-cx6-v-full-9.txt"))
    assert devinfo_ports(devinfo) == {"mlx5_0": ("Ethernet", 3)}
    # MLNX_OFED 4 prints no GID types: the index stays unknown rather than assumed
    old = parse("ibv_devinfo", real_output("ibv_devinfo", "rdma-notes-v-mofed4-cx4lx-6.txt"))
    assert devinfo_ports(old) == {"mlx5_0": ("Ethernet", None)}
    ib = parse("ibv_devinfo", real_output("ibv_devinfo", "azure-hbv3-cx6vf-5.txt"))
    assert devinfo_ports(ib) == {"mlx5_ib0": ("InfiniBand", None)}


def test_systemctl_show_gives_each_units_state_and_not_found_for_a_missing_one():
    text = (
        "Id=lldpad.service\nActiveState=active\nUnitFileState=enabled\n\n"
        "Id=lldpad.socket\nActiveState=inactive\nUnitFileState=\n\n"
        "Id=roce-wizard-qos.service\nActiveState=failed\nUnitFileState=enabled\n"
    )
    states = parse_systemctl_show(text)
    assert states["lldpad.service"] == UnitState(active="active", enabled="enabled")
    assert states["lldpad.socket"] == UnitState(active="inactive", enabled="not-found")
    assert states["roce-wizard-qos.service"].active == "failed"


def test_persistence_fails_when_the_udev_rule_that_survives_driver_reloads_is_missing():
    facts = roce_facts(configured=True)
    facts.udev_rule_text = None
    item = by_id(host_checks("server1", facts, WANT))["persistence"]
    assert item.status == "fail" and item.evidence == "/etc/udev/rules.d/90-roce-wizard-qos.rules missing"


def test_headroom_sized_for_shorter_cables_than_the_fabric_has_fails_naming_port_and_fix():
    """ConnectX sizes the lossless headroom for 7 m of cable unless told (mlx5 MLX5E_DEFAULT_CABLE_LEN)."""
    want = Desired.from_answers(answers("roce:\n  cable_length_m: 30\n"))
    facts = roce_facts(configured=True)
    for port in facts.ports:
        port.cable_len = 7
    facts.ports[1].cable_len = 30
    items = by_id(host_checks("server1", facts, want))
    short = items[f"headroom:{facts.ports[0].netdev}"]
    nd = facts.ports[0].netdev
    assert short.status == "fail" and short.title == f"{nd} PFC headroom for 30 m cables"
    assert "headroom sized for 7 m of cable; roce.cable_length_m is 30 m" in short.evidence
    assert short.fix == f"mlnx_qos -i {nd} --cable_len=30; then re-run roce-wizard --from roce"
    assert items[f"headroom:{facts.ports[1].netdev}"].status == "pass"
    assert not any(i.startswith("headroom:") for i in by_id(host_checks("server1", facts, WANT))), "unasked: unchecked"


def test_dcb_reports_mlx5s_cable_length_as_the_pfc_delay():
    assert parse_dcb_pfc_delay("pfc-cap 8 macsec-bypass off delay 7\nprio-pfc 0:off 1:off 2:off 3:on") == 7
    assert parse_dcb_pfc_delay("prio-pfc 0:off 1:off 2:off 3:on 4:off 5:off 6:off 7:off delay 30") == 30
    assert parse_dcb_pfc_delay("prio-pfc 0:off 1:off") is None
