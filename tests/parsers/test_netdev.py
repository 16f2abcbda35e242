"""Specification of the netdev parsers: /proc/net/bonding, `ip link`/`ip addr` text and `ip -j` JSON."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.fixture_files import real_output, real_outputs
from wizard.parsers.common import ParseError
from wizard.parsers.netdev import parse_bonding, parse_ip_json, parse_ip_link

# --------------------------------------------------------------------------------------------- bonding


@pytest.mark.parametrize("path", real_outputs("bonding"), ids=lambda p: p.name)
def test_every_bonding_sample_has_a_known_mode(path: Path) -> None:
    bond = parse_bonding(path.read_text())
    assert bond.mode in ("802.3ad", "active-backup", "balance-xor")
    assert bond.mii_status in ("up", "down")


def test_bonding_lacp_bond_reads_policy_aggregator_and_slave_port_states() -> None:
    bond = parse_bonding(real_output("bonding", "lacp-25g-kernel5.15-4.txt"))
    assert (bond.name, bond.driver_version, bond.mode) == ("bond0", "v5.15.0-70-generic", "802.3ad")
    assert (bond.transmit_hash_policy, bond.lacp_rate, bond.lacp_active) == ("layer3+4", "fast", "on")
    assert (bond.mii_polling_interval, bond.up_delay, bond.down_delay, bond.min_links) == (100, 200, 200, 0)
    assert bond.aggregator is not None
    assert (bond.aggregator.aggregator_id, bond.aggregator.number_of_ports) == (1, 2)
    assert (bond.aggregator.actor_key, bond.aggregator.partner_key) == (21, 37)
    assert bond.aggregator.partner_mac == "c2:d6:82:fb:f0:12" and bond.system_mac == "40:a6:b7:20:2f:e0"
    assert [s.interface for s in bond.slaves] == ["enp65s0f0", "enp65s0f1"]
    slave = bond.slave("enp65s0f1")
    assert slave is not None
    assert (slave.speed_mbps, slave.duplex, slave.aggregator_id) == (25000, "full", 1)
    assert (slave.permanent_hw_addr, slave.actor_port_state, slave.partner_port_state) == (
        "40:a6:b7:20:2f:e1",
        63,
        61,
    )
    assert slave.partner_system_mac == "c2:d6:82:fb:f0:12"


def test_bonding_roce_lag_400g_truncated_after_second_slave() -> None:
    bond = parse_bonding(real_output("bonding", "nccl-pr2150-roce-lag-400g-9-partial.txt"))
    assert bond.driver_version == "va6.6.102-5.200.al8.x86_64" and bond.lacp_rate == "slow"
    reth0, reth1 = bond.slaves
    assert (reth0.interface, reth0.speed_mbps, reth0.actor_port_state) == ("reth0", 400000, 61)
    assert (reth1.interface, reth1.mii_status, reth1.speed_mbps) == ("reth1", "up", None)


def test_bonding_active_backup_reads_active_slave_and_no_primary() -> None:
    bond = parse_bonding(real_output("bonding", "insights-core-mode1-active-backup-2.txt"))
    assert (bond.mode, bond.mode_description) == ("active-backup", "fault-tolerance (active-backup)")
    assert (bond.currently_active_slave, bond.primary_slave, bond.transmit_hash_policy) == ("enp17s0f0", None, None)
    assert [(s.interface, s.speed_mbps, s.queue_id) for s in bond.slaves] == [
        ("enp17s0f0", 10000, 0),
        ("enp17s0f1", 10000, 0),
    ]


def test_bonding_old_driver_with_mismatched_aggregators_and_no_speed_lines() -> None:
    bond = parse_bonding(real_output("bonding", "insights-core-mode4-old-3.txt"))
    assert (bond.driver_version, bond.mii_polling_interval, bond.lacp_rate) == (
        "v3.2.4 (January 28, 2008)",
        500,
        "slow",
    )
    assert bond.aggregator is not None and bond.aggregator.aggregator_id == 3
    assert bond.aggregator.partner_mac == "00:00:00:00:00:00"
    assert [(s.interface, s.aggregator_id, s.speed_mbps) for s in bond.slaves] == [("eth1", 3, None), ("eth2", 2, None)]


def test_bonding_without_active_aggregator_is_flagged() -> None:
    bond = parse_bonding(real_output("bonding", "accelerated-text-issue387-noaggregator-8.txt"))
    assert bond.no_active_aggregator is True and bond.aggregator is None
    assert [(s.interface, s.aggregator_id) for s in bond.slaves] == [("eth1", None), ("eth2", None)]
    assert bond.slaves[1].permanent_hw_addr == "00:0c:29:f5:b7:1b"


def test_bonding_xor_layer34_on_a_switch_without_blank_after_driver_line() -> None:
    bond = parse_bonding(real_output("bonding", "cumulus-docs-xor-l34-6.txt"))
    assert (bond.name, bond.mode, bond.transmit_hash_policy) == ("bond01", "balance-xor", "layer3+4")
    (swp1,) = bond.slaves
    assert (swp1.interface, swp1.speed_mbps, swp1.duplex, swp1.link_failure_count) == ("swp1", 1000, "full", 0)


def test_bonding_without_slaves_and_patched_hash_policy() -> None:
    bond = parse_bonding(real_output("bonding", "netdev-vlansrc-xor-noslaves-7.txt"))
    assert (bond.mode, bond.transmit_hash_policy, bond.mii_status, bond.slaves) == (
        "balance-xor",
        "vlansrc",
        "down",
        [],
    )


# --------------------------------------------------------------------------------------------- ip link / addr


@pytest.mark.parametrize("path", real_outputs("ip_link"), ids=lambda p: p.name)
def test_every_ip_link_sample_reads_interfaces_with_mtu_and_mac(path: Path) -> None:
    interfaces = parse_ip_link(path.read_text()).interfaces
    assert interfaces and all(i.mtu and i.mac and i.link_type == "ether" for i in interfaces)


def test_ip_addr_reads_slaves_master_and_addresses() -> None:
    links = parse_ip_link(real_output("ip_link", "rdma-notes-ip-a-bond0-slaves-6.txt"))
    assert [(i.ifindex, i.ifname, i.mtu, i.master) for i in links.interfaces] == [
        (8, "eth01", 1518, "bond0"),
        (9, "eth02", 1500, "bond0"),
        (10, "bond0", 1500, None),
    ]
    assert [i.ifname for i in links.slaves_of("bond0")] == ["eth01", "eth02"]
    bond0 = links.get("bond0")
    assert bond0 is not None and bond0.up and "MASTER" in bond0.flags
    assert (bond0.ipv4, bond0.ipv6, bond0.operstate) == (["10.16.87.224/26"], ["fe80::e42:a1ff:fee8:878c/64"], "UP")


def test_ip_link_bond_enslaved_to_ovs() -> None:
    (bond1,) = parse_ip_link(real_output("ip_link", "ocp-bond1-ovs-master-4.txt")).interfaces
    assert (bond1.ifindex, bond1.ifname, bond1.mtu, bond1.master, bond1.mac) == (
        14,
        "bond1",
        9100,
        "ovs-system",
        "3c:ec:ef:5c:58:30",
    )
    assert bond1.flags == ["BROADCAST", "MULTICAST", "MASTER", "UP", "LOWER_UP"] and bond1.kind is None


def test_ip_details_of_a_mail_quoted_bond_read_its_mode_and_hash_policy() -> None:
    (bond0,) = parse_ip_link(real_output("ip_link", "netdev-jarod-bond-xor-vlansrc-3.txt")).interfaces
    assert (bond0.ifindex, bond0.kind, bond0.operstate, bond0.up) == (11, "bond", "DOWN", False)
    assert (bond0.info["mode"], bond0.info["xmit_hash_policy"], bond0.info["lacp_rate"]) == (
        "balance-xor",
        "vlansrc",
        "slow",
    )


def test_ip_details_of_an_lacp_slave_read_slave_state_and_stats() -> None:
    links = parse_ip_link(real_output("ip_link", "insights-core-ip-s-d-link-lacp-slaves-2.txt"))
    eth0_2 = links.get("eth0_2")
    assert eth0_2 is not None
    assert (eth0_2.kind, eth0_2.slave_kind, eth0_2.master, eth0_2.mtu) == ("bond_slave", "bond", "bond0", 9000)
    assert eth0_2.slave_info["perm_hwaddr"] == "00:90:fa:8d:36:22"
    assert eth0_2.slave_info["ad_aggregator_id"] == "1" and eth0_2.slave_info["state"] == "ACTIVE"
    assert (eth0_2.stats["rx_bytes"], eth0_2.stats["rx_dropped"], eth0_2.stats["tx_packets"]) == (
        15566486160064,
        117902,
        12260064477,
    )


def test_ip_details_of_an_sriov_pf_slave_read_its_vfs() -> None:
    (eth4,) = parse_ip_link(real_output("ip_link", "sriov-bond-notes-slave-vfs-1.txt")).interfaces
    assert (eth4.slave_kind, eth4.slave_info["ad_aggregator_id"], eth4.master) == ("bond", "2", "bond0")
    assert [(vf.vf, vf.mac, vf.spoof_checking, vf.link_state, vf.trust) for vf in eth4.vfs] == [
        (0, "00:00:00:00:00:00", False, "auto", False),
        (1, "00:00:00:00:00:00", False, "auto", False),
    ]


_IP_ADDR_D = """\
2: ens1f0np0: <BROADCAST,MULTICAST,UP,LOWER_UP> mtu 9000 qdisc mq state UP group default qlen 1000
    link/ether 0c:42:a1:40:29:a0 brd ff:ff:ff:ff:ff:ff promiscuity 0 minmtu 68 maxmtu 9978
    addrgenmode none numtxqueues 256 numrxqueues 32 gso_max_size 65536 parentbus pci parentdev 0000:3b:00.0
    altname enp59s0f0np0
    inet 192.168.11.1/24 brd 192.168.11.255 scope global ens1f0np0
       valid_lft forever preferred_lft forever
5: bond0.100@bond0: <BROADCAST,MULTICAST,UP,LOWER_UP> mtu 9000 qdisc noqueue state UP group default qlen 1000
    link/ether 0c:42:a1:40:29:a1 brd ff:ff:ff:ff:ff:ff promiscuity 0 minmtu 0 maxmtu 65535
    vlan protocol 802.1Q id 100 <REORDER_HDR> addrgenmode eui64 numtxqueues 1 numrxqueues 1
    inet 10.0.100.2/24 scope global bond0.100
       valid_lft forever preferred_lft forever
"""  # fmt: skip


def test_ip_addr_details_read_pci_parent_altname_and_vlan_link() -> None:
    links = parse_ip_link(_IP_ADDR_D)
    rail = links.get("ens1f0np0")
    assert rail is not None and rail.kind is None
    assert (rail.parent_bus, rail.parent_dev, rail.altnames, rail.ipv4) == (
        "pci",
        "0000:3b:00.0",
        ["enp59s0f0np0"],
        ["192.168.11.1/24"],
    )
    vlan = links.get("bond0.100")
    assert vlan is not None and (vlan.link, vlan.kind, vlan.info["id"], vlan.info["protocol"]) == (
        "bond0",
        "vlan",
        "100",
        "802.1Q",
    )


def test_ip_oneline_forms_are_read() -> None:
    text = (
        "2: ens1f0np0: <BROADCAST,MULTICAST,UP,LOWER_UP> mtu 9000 qdisc mq state UP mode DEFAULT group default"
        " qlen 1000\\    link/ether 0c:42:a1:40:29:a0 brd ff:ff:ff:ff:ff:ff\n"
        "2: ens1f0np0    inet 192.168.11.1/24 brd 192.168.11.255 scope global ens1f0np0\\"
        "       valid_lft forever preferred_lft forever\n"
        "2: ens1f0np0    inet6 fe80::e42:a1ff:fe40:29a0/64 scope link \\       valid_lft forever\n"
    )
    (rail,) = parse_ip_link(text).interfaces
    assert (rail.mac, rail.ipv4, rail.ipv6) == (
        "0c:42:a1:40:29:a0",
        ["192.168.11.1/24"],
        ["fe80::e42:a1ff:fe40:29a0/64"],
    )


# --------------------------------------------------------------------------------------------- ip -j

# `ip -j -d addr show` on an Ubuntu 22.04 GPU node (hand-written in iproute2 6.1's key layout): a 802.3ad
# RoCE-LAG bond of two CX-6 Dx ports, a VLAN on it, a stand-alone rail, and the `{}` an address filter leaves.
_IP_JSON = [
    {"ifindex": 1, "ifname": "lo", "flags": ["LOOPBACK", "UP", "LOWER_UP"], "mtu": 65536, "qdisc": "noqueue",
     "operstate": "UNKNOWN", "group": "default", "txqlen": 1000, "link_type": "loopback",
     "address": "00:00:00:00:00:00", "broadcast": "00:00:00:00:00:00", "promiscuity": 0, "min_mtu": 0,
     "max_mtu": 0, "inet6_addr_gen_mode": "eui64", "num_tx_queues": 1, "num_rx_queues": 1,
     "addr_info": [{"family": "inet", "local": "127.0.0.1", "prefixlen": 8, "scope": "host", "label": "lo",
                    "valid_life_time": 4294967295, "preferred_life_time": 4294967295},
                   {"family": "inet6", "local": "::1", "prefixlen": 128, "scope": "host",
                    "valid_life_time": 4294967295, "preferred_life_time": 4294967295}]},
    {"ifindex": 4, "ifname": "ens1f0np0", "flags": ["BROADCAST", "MULTICAST", "SLAVE", "UP", "LOWER_UP"],
     "mtu": 9000, "qdisc": "mq", "master": "bond0", "operstate": "UP", "group": "default", "txqlen": 1000,
     "link_type": "ether", "address": "0c:42:a1:40:29:a0", "broadcast": "ff:ff:ff:ff:ff:ff", "promiscuity": 0,
     "min_mtu": 68, "max_mtu": 9978,
     "linkinfo": {"info_slave_kind": "bond",
                  "info_slave_data": {"state": "ACTIVE", "mii_status": "UP", "link_failure_count": 0,
                                      "perm_hwaddr": "0c:42:a1:40:29:a0", "queue_id": 0,
                                      "ad_aggregator_id": 1, "ad_actor_oper_port_state": 63,
                                      "ad_partner_oper_port_state": 61}},
     "inet6_addr_gen_mode": "none", "num_tx_queues": 256, "num_rx_queues": 32, "parentbus": "pci",
     "parentdev": "0000:3b:00.0", "altnames": ["enp59s0f0np0"], "addr_info": []},
    {"ifindex": 5, "ifname": "ens1f1np1", "flags": ["BROADCAST", "MULTICAST", "SLAVE", "UP", "LOWER_UP"],
     "mtu": 9000, "master": "bond0", "operstate": "UP", "link_type": "ether", "address": "0c:42:a1:40:29:a0",
     "permaddr": "0c:42:a1:40:29:a1",
     "linkinfo": {"info_slave_kind": "bond", "info_slave_data": {"state": "ACTIVE", "mii_status": "UP"}},
     "parentbus": "pci", "parentdev": "0000:3b:00.1", "altnames": ["enp59s0f1np1"], "addr_info": []},
    {"ifindex": 6, "ifname": "bond0", "flags": ["BROADCAST", "MULTICAST", "MASTER", "UP", "LOWER_UP"],
     "mtu": 9000, "qdisc": "noqueue", "operstate": "UP", "link_type": "ether", "address": "0c:42:a1:40:29:a0",
     "linkinfo": {"info_kind": "bond",
                  "info_data": {"mode": "802.3ad", "miimon": 100, "updelay": 0, "downdelay": 0,
                                "xmit_hash_policy": "layer3+4", "ad_lacp_active": "on", "ad_lacp_rate": "fast",
                                "ad_select": "stable",
                                "ad_info": {"aggregator": 1, "num_ports": 2, "actor_key": 21,
                                            "partner_key": 37, "partner_mac": "c2:d6:82:fb:f0:12"}}},
     "addr_info": [{"family": "inet", "local": "192.168.11.1", "prefixlen": 24, "broadcast": "192.168.11.255",
                    "scope": "global", "label": "bond0"},
                   {"family": "inet6", "local": "fe80::e42:a1ff:fe40:29a0", "prefixlen": 64, "scope": "link"}]},
    {"ifindex": 7, "ifname": "bond0.100", "link": "bond0", "flags": ["BROADCAST", "MULTICAST", "UP", "LOWER_UP"],
     "mtu": 9000, "operstate": "UP", "link_type": "ether", "address": "0c:42:a1:40:29:a0",
     "linkinfo": {"info_kind": "vlan", "info_data": {"protocol": "802.1Q", "id": 100, "flags": ["REORDER_HDR"]}},
     "addr_info": [{"family": "inet", "local": "10.0.100.1", "prefixlen": 24, "scope": "global"}]},
    {},
]  # fmt: skip


def test_ip_json_reads_bond_slaves_vlan_and_cidr_addresses() -> None:
    parsed = parse_ip_json(json.dumps(_IP_JSON))
    assert [i.ifname for i in parsed.interfaces] == ["lo", "ens1f0np0", "ens1f1np1", "bond0", "bond0.100"]
    bond0 = parsed.get("bond0")
    assert bond0 is not None and (bond0.kind, bond0.slave_kind, bond0.ipv4) == ("bond", None, ["192.168.11.1/24"])
    assert bond0.info_data["mode"] == "802.3ad" and bond0.info_data["xmit_hash_policy"] == "layer3+4"
    assert bond0.ipv6 == ["fe80::e42:a1ff:fe40:29a0/64"] and bond0.up
    slaves = parsed.slaves_of("bond0")
    assert [(s.ifname, s.kind, s.slave_kind, s.parent_dev) for s in slaves] == [
        ("ens1f0np0", None, "bond", "0000:3b:00.0"),
        ("ens1f1np1", None, "bond", "0000:3b:00.1"),
    ]
    assert slaves[0].slave_data["ad_aggregator_id"] == 1 and slaves[0].altnames == ["enp59s0f0np0"]
    assert slaves[1].permaddr == "0c:42:a1:40:29:a1" and slaves[1].mac == "0c:42:a1:40:29:a0"
    vlan = parsed.get("bond0.100")
    assert vlan is not None and (vlan.link, vlan.kind, vlan.info_data["id"], vlan.ipv4) == (
        "bond0",
        "vlan",
        100,
        ["10.0.100.1/24"],
    )
    lo = parsed.get("lo")
    assert lo is not None and (lo.link_type, lo.ipv4, lo.ipv6, lo.mtu) == (
        "loopback",
        ["127.0.0.1/8"],
        ["::1/128"],
        65536,
    )


def test_ip_json_after_a_prompt_line_and_pretty_printed() -> None:
    text = "$ ip -j -p -d addr show dev bond0\n" + json.dumps([_IP_JSON[3]], indent=4)
    (bond0,) = parse_ip_json(text).interfaces
    assert (bond0.ifindex, bond0.operstate) == (6, "UP")


@pytest.mark.parametrize(
    "text",
    ["", 'Device "bond9" does not exist.\n', '[{"ifname": "eth0", ', '{"ifname": "eth0"}', "[1, 2]"],
)
def test_ip_json_refuses_errors_truncation_and_non_arrays(text: str) -> None:
    with pytest.raises(ParseError):
        parse_ip_json(text)


def test_ip_json_refuses_text_output() -> None:
    with pytest.raises(ParseError):
        parse_ip_json(real_output("ip_link", "ocp-bond1-ovs-master-4.txt"))


# --------------------------------------------------------------------------------------------- refusals


@pytest.mark.parametrize(
    ("tool", "name"),
    [
        ("ethtool", "proxmox-cx4lx-10g-up-2.txt"),
        ("rdma_link", "3fs-pr283-1.txt"),
        ("ibdev2netdev", "k8s-operator-notes-2.txt"),
        ("mlnx_qos", "lg-cmc-cx7-dscp-ets-prio5-4.txt"),
    ],
)
def test_bonding_and_ip_link_refuse_other_tools_output(tool: str, name: str) -> None:
    with pytest.raises(ParseError):
        parse_bonding(real_output(tool, name))
    with pytest.raises(ParseError):
        parse_ip_link(real_output(tool, name))


def test_bonding_and_ip_link_refuse_each_other() -> None:
    with pytest.raises(ParseError):
        parse_bonding(real_output("ip_link", "netdev-jarod-bond-xor-vlansrc-3.txt"))
    with pytest.raises(ParseError):
        parse_ip_link(real_output("bonding", "lacp-25g-kernel5.15-4.txt"))
    with pytest.raises(ParseError):
        parse_bonding("cat: /proc/net/bonding/bond0: No such file or directory\n")
