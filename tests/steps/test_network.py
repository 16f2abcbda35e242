"""Network stage plans from synthetic facts: rails, RoCE LAG, refusals, netplan, routing, sysctls."""

from __future__ import annotations

from typing import Any

import pytest
import yaml

from steps.discovery.facts import DiscoveryFacts, Gpu
from steps.network.design import design
from steps.network.facts import NETPLAN_PATH, SYSCTL_PATH, RdmaPort
from steps.network.render import netplan_yaml, sysctl_conf
from steps.network.stage import Network
from tests.steps.facts_builder import answers, port, reference_host, view
from tests.steps.test_network_facts import live
from wizard.engine.step import Impact
from wizard.errors import AnswersError

STEP = Network()
RAILS = """network:
  rails:
    - subnet: 192.168.11.0/24
    - subnet: 192.168.12.0/24
    - subnet: 192.168.13.0/24
    - subnet: 192.168.14.0/24
"""
SEED_BOND = """network:
  topology: bond
  bonds:
    - name: bond0
      mode: balance-xor
      members: [ens1f0np0, ens1f1np1, ens2f0np0, ens2f1np1]
      subnet: 192.168.10.0/24
"""
LAG = """network:
  topology: roce_lag
  bonds:
    - name: bond0
      members: [ens1f0np0, ens1f1np1]
      subnet: 192.168.21.0/24
    - name: bond1
      members: [ens2f0np0, ens2f1np1]
      subnet: 192.168.22.0/24
"""


def two_hosts(body: str = RAILS, **kw: Any) -> tuple[Any, dict[str, Any]]:
    ans = answers(body)
    facts = {}
    for i, name in enumerate(("server1", "server2"), 1):
        disc = reference_host(name, ssh_address=f"10.0.0.{10 + i}", **kw)
        facts[name] = {"discovery": disc, "network": live(disc, host_index=i)}
    return ans, facts


def plan_of(ans: Any, facts: dict[str, Any], host: str = "server1") -> Any:
    return STEP.plan(view(ans, facts), host)


def configured(ans: Any, facts: dict[str, Any], host: str = "server1", **kw: Any) -> Any:
    """Live facts of ``host`` after its plan was applied (file written, addresses, MTU, GIDs, sysctls)."""
    plan = plan_of(ans, facts, host)
    files = {f.path: f.content for c in plan.changes for f in c.files}
    disc = facts[host]["discovery"]
    hid = ans.host_id(host)
    addresses = {p.netdev: f"192.168.{11 + i}.{hid}/24" for i, p in enumerate(disc.rdma_ports())}
    sysctls = {
        f"net.ipv4.conf.{n}.{k}": v
        for n in addresses
        for k, v in (("arp_ignore", "1"), ("arp_announce", "2"), ("rp_filter", "2"))
    }
    return live(
        disc,
        host_index=hid,
        addresses=addresses,
        mtu=9000,
        netplan=files.get(NETPLAN_PATH),
        sysctl=files.get(SYSCTL_PATH),
        sysctls=sysctls,
        **kw,
    )


# --------------------------------------------------------------------------------------------- rails


def test_rail_i_is_the_ith_rdma_port_in_pci_order_with_the_host_id_address() -> None:
    ans, facts = two_hosts()
    doc = yaml.safe_load(plan_of(ans, facts, "server2").changes[0].files[0].content)
    eth = doc["network"]["ethernets"]
    assert list(eth) == ["ens1f0np0", "ens1f1np1", "ens2f0np0", "ens2f1np1"]
    assert [eth[n]["addresses"] for n in eth] == [
        ["192.168.11.2/24"],
        ["192.168.12.2/24"],
        ["192.168.13.2/24"],
        ["192.168.14.2/24"],
    ]


def test_rails_netdev_overrides_the_pci_order() -> None:
    body = RAILS.replace("    - subnet: 192.168.11.0/24\n", "    - subnet: 192.168.11.0/24\n      netdev: ens2f1np1\n")
    ans, facts = two_hosts(body)
    eth = yaml.safe_load(plan_of(ans, facts).changes[0].files[0].content)["network"]["ethernets"]
    assert eth["ens2f1np1"]["addresses"] == ["192.168.11.1/24"]
    assert eth["ens1f0np0"]["addresses"] == ["192.168.12.1/24"]


def test_netplan_file_is_netplan_v2_root_only_with_mtu_static_addresses_and_no_dhcp() -> None:
    ans, facts = two_hosts()
    change = plan_of(ans, facts).changes[0]
    file = change.files[0]
    assert (file.path, file.mode, file.owner, file.group) == (NETPLAN_PATH, 0o600, "root", "root")
    doc = yaml.safe_load(file.content)
    assert doc["network"]["version"] == 2
    for conf in doc["network"]["ethernets"].values():
        assert conf["mtu"] == 9000 and conf["dhcp4"] is False and conf["dhcp6"] is False
        assert conf["accept-ra"] is False and conf["link-local"] == ["ipv6"]
        assert "routes" not in conf and "gateway4" not in conf


def test_netplan_generate_validates_before_the_disruptive_apply() -> None:
    ans, facts = two_hosts()
    change = plan_of(ans, facts).changes[0]
    assert change.impact == Impact.DISRUPTIVE
    assert [c.argv for c in change.commands] == [["netplan", "generate"], ["netplan", "apply"]]
    assert all(c.sudo for c in change.commands)


def test_the_interface_carrying_ssh_never_appears_in_the_netplan_file() -> None:
    ans, facts = two_hosts()
    plan = plan_of(ans, facts)
    assert "eno1" not in yaml.safe_load(plan.changes[0].files[0].content)["network"]["ethernets"]
    assert any("eno1 carries SSH and is not in the netplan file" in n for n in plan.notes)


def test_a_rail_on_the_ssh_interface_is_refused_unless_management_changes_are_allowed() -> None:
    ans, facts = two_hosts(ssh_interface="ens1f0np0")
    plan = plan_of(ans, facts)
    assert not plan.changes
    assert any("ens1f0np0, the interface carrying this SSH session" in b for b in plan.blockers)
    allowed = answers(RAILS + "  allow_management_changes: true\n")
    plan = plan_of(allowed, facts)
    assert not plan.blockers and plan.changes
    assert any("allow_management_changes allows it on this host" in n for n in plan.notes)


def test_management_changes_can_be_allowed_for_chosen_hosts_only() -> None:
    ans, facts = two_hosts(ssh_interface="ens1f0np0")
    only_server2 = answers(RAILS + "  allow_management_changes: [server2]\n")
    assert plan_of(only_server2, facts, "server1").blockers
    assert not plan_of(only_server2, facts, "server2").blockers


def test_allowing_management_changes_on_an_unknown_host_is_refused_naming_the_key() -> None:
    with pytest.raises(AnswersError, match=r"network.allow_management_changes.0.*'server9' is not one of the hosts"):
        answers(RAILS + "  allow_management_changes: [server9]\n")


def test_a_second_run_on_a_configured_host_plans_nothing() -> None:
    ans, facts = two_hosts()
    facts["server1"]["network"] = configured(ans, facts)
    plan = plan_of(ans, facts)
    assert plan.empty and not plan.blockers
    assert plan.noop_reason and "is current and applied" in plan.noop_reason


def test_mtu_drift_re_applies_netplan_without_rewriting_the_file() -> None:
    ans, facts = two_hosts()
    facts["server1"]["network"] = configured(ans, facts, mtus={"ens2f0np0": 1500})
    plan = plan_of(ans, facts)
    assert len(plan.changes) == 1 and not plan.changes[0].files
    assert plan.changes[0].commands[0].argv == ["netplan", "apply"]
    assert "ens2f0np0 has MTU 1500, not 9000" in plan.changes[0].summary


def test_a_root_readable_file_with_the_right_content_is_only_chmodded() -> None:
    ans, facts = two_hosts()
    facts["server1"]["network"] = configured(ans, facts)
    facts["server1"]["network"].netplan_mode = "644"
    plan = plan_of(ans, facts)
    assert [c.argv for c in plan.changes[0].commands] == [
        ["chown", "root:root", NETPLAN_PATH],
        ["chmod", "600", NETPLAN_PATH],
    ]
    assert not plan.changes[0].files


def test_more_rails_than_ports_is_refused_naming_the_ports() -> None:
    ans = answers(RAILS + "    - subnet: 192.168.15.0/24\n")
    _, facts = two_hosts()
    plan = plan_of(ans, facts)
    assert any("rail 4 (192.168.15.0/24) has no port left" in b and "ens2f1np1" in b for b in plan.blockers)


def test_rails_are_required_for_the_rails_topology() -> None:
    ans, facts = two_hosts("")
    assert any("network.rails is empty" in b for b in plan_of(ans, facts).blockers)


def test_infiniband_ports_are_skipped_with_a_reason() -> None:
    ans = answers("network:\n  rails:\n    - subnet: 192.168.11.0/24\n")
    disc = reference_host()
    disc.ports[0] = disc.ports[0].model_copy(update={"link_layer": "InfiniBand", "netdev": "ibp59s0f0"})
    facts = {"server1": {"discovery": disc, "network": live(disc)}, "server2": two_hosts()[1]["server2"]}
    plan = plan_of(ans, facts)
    assert any("ibp59s0f0" in n and "InfiniBand port: skipped" in n for n in plan.notes)
    eth = yaml.safe_load(plan.changes[0].files[0].content)["network"]["ethernets"]
    assert list(eth) == ["ens1f1np1"]


def test_soft_roce_rxe_devices_carry_rails_like_hardware_ports() -> None:
    ans = answers("network:\n  rails:\n    - subnet: 192.168.11.0/24\n    - subnet: 192.168.12.0/24\n")
    disc = DiscoveryFacts(hostname="vm1", ssh_server_address="10.0.0.11", ssh_interface="eth0")
    net = live(disc)
    for i, name in enumerate(("eth1", "eth2")):
        net.interfaces[name] = net.interfaces["eno1"].model_copy(
            update={"name": name, "ipv4": [], "parent_dev": f"0000:00:0{4 + i}.0"}
        )
        net.rdma.append(RdmaPort(device=f"rxe{i}", port=1, state="ACTIVE", netdev=name))
    facts = {"server1": {"discovery": disc, "network": net}, "server2": two_hosts()[1]["server2"]}
    plan = plan_of(ans, facts)
    eth = yaml.safe_load(plan.changes[0].files[0].content)["network"]["ethernets"]
    assert eth["eth1"]["addresses"] == ["192.168.11.1/24"] and eth["eth2"]["addresses"] == ["192.168.12.1/24"]
    assert any("Soft-RoCE (rxe)" in n for n in plan.notes)


def test_gpu_to_nic_affinity_from_discovery_is_shown_per_rail() -> None:
    ans, facts = two_hosts(ofed_names=True)
    disc = facts["server1"]["discovery"]
    disc.gpus = [Gpu(index=i, name="NVIDIA L20", nearest_nics=["mlx5_0"] if i < 2 else ["mlx5_2"]) for i in range(4)]
    notes = plan_of(ans, facts).notes
    assert "rail 0 (ens1f0np0, mlx5_0) is nearest to GPU0, GPU1" in notes
    assert "rail 2 (ens2f0np0, mlx5_2) is nearest to GPU2, GPU3" in notes


def test_another_netplan_file_making_a_rail_port_a_bond_member_blocks_with_the_fix() -> None:
    ans, facts = two_hosts()
    seed = "network:\n  ethernets:\n    ens1f0np0: {}\n  bonds:\n    bond0:\n      interfaces: [ens1f0np0]\n"
    facts["server1"]["network"].netplan_others = {"/etc/netplan/01-netcfg.yaml": seed}
    plan = plan_of(ans, facts)
    assert not plan.changes
    assert any("ens1f0np0 is part of bonds.bond0 in /etc/netplan/01-netcfg.yaml" in b for b in plan.blockers)


def test_addresses_for_a_rail_port_in_another_file_block_because_netplan_concatenates_them() -> None:
    ans, facts = two_hosts()
    other = "network:\n  ethernets:\n    ens1f1np1:\n      addresses: [10.9.9.9/24]\n"
    facts["server1"]["network"].netplan_others = {"/etc/netplan/50-cloud-init.yaml": other}
    assert any("ens1f1np1 has addresses in /etc/netplan/50-cloud-init.yaml" in b for b in plan_of(ans, facts).blockers)


def test_harmless_entries_in_an_earlier_file_are_noted_and_a_later_override_blocks() -> None:
    ans, facts = two_hosts()
    installer = "network:\n  version: 2\n  ethernets:\n    ens1f0np0:\n      dhcp4: false\n"
    facts["server1"]["network"].netplan_others = {"/etc/netplan/00-installer-config.yaml": installer}
    plan = plan_of(ans, facts)
    assert not plan.blockers and plan.changes
    assert any("00-installer-config.yaml also lists ens1f0np0 (dhcp4: false)" in n for n in plan.notes)
    later = installer.replace("dhcp4: false", "dhcp4: true")
    facts["server1"]["network"].netplan_others = {"/etc/netplan/90-local.yaml": later}
    assert any(
        "90-local.yaml is read after 60-roce-wizard.yaml and overrides dhcp4" in b for b in plan_of(ans, facts).blockers
    )


# --------------------------------------------------------------------------------------------- bonds


def test_a_bond_across_two_cards_is_never_built_for_rdma() -> None:
    ans, facts = two_hosts(SEED_BOND)
    plan = plan_of(ans, facts)
    assert not plan.changes
    (blocker,) = plan.blockers
    assert "refusing bond bond0" in blocker
    assert "4 members" in blocker and "2 different cards (0000:3b:00, 0000:86:00)" in blocker
    assert "roce-correctness.md §0" in blocker
    assert "topology: rails" in blocker and "bond0 = ens1f0np0 + ens1f1np1; bond1 = ens2f0np0 + ens2f1np1" in blocker


def test_a_bond_mode_roce_lag_cannot_use_is_refused() -> None:
    body = LAG.replace(
        "      members: [ens1f0np0, ens1f1np1]\n", "      mode: balance-rr\n      members: [ens1f0np0, ens1f1np1]\n"
    )
    ans, facts = two_hosts(body)
    assert any("mode balance-rr is not a RoCE LAG mode" in b for b in plan_of(ans, facts).blockers)


def test_two_ports_of_two_different_cards_are_refused_as_a_lag() -> None:
    body = LAG.replace("[ens1f0np0, ens1f1np1]", "[ens1f0np0, ens2f0np0]").replace(
        "[ens2f0np0, ens2f1np1]", "[ens1f1np1, ens2f1np1]"
    )
    ans, facts = two_hosts(body)
    blockers = plan_of(ans, facts).blockers
    assert len(blockers) == 2 and all("different cards" in b for b in blockers)


def test_one_lag_per_card_is_planned_with_lag_parameters_and_members() -> None:
    ans, facts = two_hosts(LAG)
    plan = plan_of(ans, facts)
    assert not plan.blockers
    doc = yaml.safe_load(plan.changes[0].files[0].content)["network"]
    bond = doc["bonds"]["bond0"]
    assert bond["interfaces"] == ["ens1f0np0", "ens1f1np1"] and bond["addresses"] == ["192.168.21.1/24"]
    assert bond["parameters"] == {
        "mode": "802.3ad",
        "mii-monitor-interval": 100,
        "lacp-rate": "fast",
        "transmit-hash-policy": "layer3+4",
    }
    assert doc["ethernets"]["ens1f0np0"] == {
        "renderer": "networkd",
        "optional": True,
        "dhcp4": False,
        "dhcp6": False,
        "link-local": [],
        "mtu": 9000,
    }
    assert bond["optional"] is True and bond["renderer"] == "networkd"
    assert any("RoCE LAG of ConnectX-4 Lx card 0000:3b:00" in n for n in plan.notes)
    # netplan apply keeps a device it no longer configures (seen on a real kernel): an undo must delete them.
    assert plan.changes[0].creates_links == ["bond0", "bond1"]


def test_lacp_rate_is_written_only_for_802_3ad() -> None:
    ans, facts = two_hosts(
        LAG.replace(
            "      members: [ens1f0np0, ens1f1np1]\n",
            "      mode: active-backup\n      members: [ens1f0np0, ens1f1np1]\n",
        )
    )
    params = yaml.safe_load(plan_of(ans, facts).changes[0].files[0].content)["network"]["bonds"]["bond0"]["parameters"]
    assert params == {"mode": "active-backup", "mii-monitor-interval": 100}


def test_bonds_listed_with_topology_rails_are_refused_not_ignored() -> None:
    ans, facts = two_hosts(RAILS + LAG.split("\n", 2)[2].replace("  topology: roce_lag\n", ""))
    assert any("but topology is rails" in b for b in plan_of(ans, facts).blockers)


def test_the_lag_device_must_appear_after_apply() -> None:
    ans, facts = two_hosts(LAG)
    plan = plan_of(ans, facts)
    files = {f.path: f.content for c in plan.changes for f in c.files}
    bonds = {"bond0": ("802.3ad", ["ens1f0np0", "ens1f1np1"]), "bond1": ("802.3ad", ["ens2f0np0", "ens2f1np1"])}
    addresses = {"bond0": "192.168.21.1/24", "bond1": "192.168.22.1/24"}
    disc = facts["server1"]["discovery"]
    facts["server1"]["network"] = live(
        disc,
        addresses=addresses,
        mtu=9000,
        netplan=files[NETPLAN_PATH],
        bonds=bonds,
        lag_devices={"bond0": "mlx5_bond_0"},
    )
    items = {i.id: i for i in STEP.checks(view(ans, facts), "server1")}
    assert items["lag:bond0"].status == "pass" and items["lag:bond0"].evidence == (
        "mlx5_bond_0 port 1 is the one RDMA device of ens1f0np0 + ens1f1np1"
    )
    assert items["lag:bond1"].status == "fail" and "mlx5_bond_N" in (items["lag:bond1"].fix or "")


# --------------------------------------------------------------------------------------------- fabric


def test_back_to_back_rails_need_no_routing_tables() -> None:
    ans, facts = two_hosts()
    plan = plan_of(ans, facts)
    eth = yaml.safe_load(plan.changes[0].files[0].content)["network"]["ethernets"]
    assert all("routing-policy" not in c and "routes" not in c for c in eth.values())
    assert any(n.startswith("fabric back-to-back (2 hosts and no rail gateway)") for n in plan.notes)


def test_switched_rails_get_a_table_and_a_source_rule_per_nic_and_no_default_route() -> None:
    body = RAILS.replace(
        "    - subnet: 192.168.11.0/24\n", "    - subnet: 192.168.11.0/24\n      gateway: 192.168.11.254\n"
    )
    ans, facts = two_hosts(body)
    eth = yaml.safe_load(plan_of(ans, facts).changes[0].files[0].content)["network"]["ethernets"]
    rail0 = eth["ens1f0np0"]
    assert rail0["routing-policy"] == [{"from": "192.168.11.1", "table": 100, "priority": 100}]
    assert rail0["routes"][0] == {"to": "192.168.11.0/24", "table": 100}
    assert {"to": "192.168.12.0/24", "via": "192.168.11.254", "table": 100} in rail0["routes"]
    assert eth["ens1f1np1"]["routing-policy"] == [{"from": "192.168.12.1", "table": 101, "priority": 101}]
    assert all(r["to"] not in ("default", "0.0.0.0/0") for c in eth.values() for r in c["routes"])


def test_more_than_two_hosts_make_the_fabric_switched() -> None:
    ans = answers(RAILS, hosts=("a", "b", "c"))
    facts = {
        h: {"discovery": (d := reference_host(h, ssh_address=f"10.0.0.{11 + i}")), "network": live(d)}
        for i, h in enumerate(("a", "b", "c"))
    }
    plan = plan_of(ans, facts, "c")
    assert any(n.startswith("fabric switched (more than two hosts") for n in plan.notes)
    assert "table: 103" in plan.changes[0].files[0].content


def test_multi_nic_sysctls_are_persisted_and_loaded_with_sysctl_p() -> None:
    ans, facts = two_hosts()
    change = next(c for c in plan_of(ans, facts).changes if any(f.path == SYSCTL_PATH for f in c.files))
    content = change.files[0].content
    for netdev in ("ens1f0np0", "ens2f1np1"):
        assert f"net.ipv4.conf.{netdev}.arp_ignore = 1" in content
        assert f"net.ipv4.conf.{netdev}.arp_announce = 2" in content
        assert f"net.ipv4.conf.{netdev}.rp_filter = 2" in content
    assert "eno1" not in content
    assert change.commands[0].argv == ["sysctl", "-p", SYSCTL_PATH] and change.impact == Impact.SAFE


def test_a_single_rail_host_gets_no_sysctl_file() -> None:
    ans, facts = two_hosts("network:\n  rails:\n    - subnet: 192.168.11.0/24\n")
    assert all(f.path != SYSCTL_PATH for c in plan_of(ans, facts).changes for f in c.files)


def test_dotted_interface_names_use_the_slash_form_in_sysctl_d() -> None:
    assert "net/ipv4/conf/ens1f0np0.100/arp_ignore = 1" in sysctl_conf(["ens1f0np0.100"])


def test_generated_netplan_parses_for_every_topology() -> None:
    for body in (RAILS, LAG, RAILS + "  fabric: switched\n"):
        ans, facts = two_hosts(body)
        plan = plan_of(ans, facts)
        content = next(f.content for c in plan.changes for f in c.files if f.path == NETPLAN_PATH)
        assert yaml.safe_load(content)["network"]["version"] == 2
        decided = design(ans, "server1", facts["server1"]["discovery"], facts["server1"]["network"])
        assert content == netplan_yaml(decided, 9000)


def test_an_eight_rail_switched_host_pairs_gpu_i_with_nic_i_and_numbers_tables_per_rail() -> None:
    # Seed 001: eight single-port NICs per host, one rail (leaf switch) each, GPU i next to NIC i.
    body = "network:\n  rails:\n" + "".join(f"    - subnet: 10.{100 + i}.0.0/24\n" for i in range(8))
    ans = answers(body, hosts=("gpu1", "gpu2", "gpu3"))
    facts = {}
    for n, host in enumerate(("gpu1", "gpu2", "gpu3")):
        nics = [
            port(f"0000:{0x18 + 0x10 * i:02x}:00.0", f"ens{i + 1}np0", f"mlx5_{i}", device_id="1021") for i in range(8)
        ]
        disc = reference_host(host, ssh_address=f"10.0.0.{11 + n}", ports=nics)
        disc.gpus = [Gpu(index=i, name="NVIDIA H100", nearest_nics=[f"mlx5_{i}"]) for i in range(8)]
        facts[host] = {"discovery": disc, "network": live(disc, host_index=n + 1)}
    plan = plan_of(ans, facts, "gpu3")
    assert [f"rail {i} (ens{i + 1}np0, mlx5_{i}) is nearest to GPU{i}" in plan.notes for i in range(8)] == [True] * 8
    eth = yaml.safe_load(plan.changes[0].files[0].content)["network"]["ethernets"]
    assert [eth[f"ens{i + 1}np0"]["addresses"] for i in (0, 7)] == [["10.100.0.3/24"], ["10.107.0.3/24"]]
    assert [eth[f"ens{i + 1}np0"]["routing-policy"][0]["table"] for i in range(8)] == list(range(100, 108))


def test_a_rail_gateway_outside_its_subnet_or_reserved_tables_are_answer_errors() -> None:
    with pytest.raises(AnswersError, match=r"gateway 192.168.12.1 is not a host address inside the rail subnet"):
        answers("network:\n  rails:\n    - {subnet: 192.168.11.0/24, gateway: 192.168.12.1}\n")
    with pytest.raises(AnswersError, match=r"collides with the kernel's default/main/local tables"):
        answers(RAILS + "  route_table_base: 250\n")
    assert answers(RAILS + "  route_table_base: 1000\n").network.route_table_base == 1000
