"""Specification of the InfiniBand fabric parsers against real sminfo, iblinkinfo, ibnetdiscover and sysfs output."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

from tests.fixture_files import real_output, real_outputs
from wizard.parsers import TOOLS, parse
from wizard.parsers.common import Parsed, ParseError
from wizard.parsers.infiniband import (
    link_rate_gbps,
    normalize_guid,
    parse_iblinkinfo,
    parse_ibnetdiscover,
    parse_sminfo,
    parse_sysfs_ib_ports,
    parse_sysfs_pkeys,
)

IB_TOOLS = ("sminfo", "iblinkinfo", "ibnetdiscover", "sysfs_ib_ports", "sysfs_pkeys")
SAMPLES = [(tool, path) for tool in IB_TOOLS for path in real_outputs(tool)]


# --------------------------------------------------------------------------------------------- every tool


@pytest.mark.parametrize(("tool", "path"), SAMPLES, ids=lambda v: v if isinstance(v, str) else v.name)
def test_every_infiniband_sample_parses_through_the_registry_and_serialises(tool: str, path: Path) -> None:
    assert TOOLS[tool] == f"wizard.parsers.infiniband:parse_{tool}"
    result = parse(tool, path.read_text())
    result.model_dump_json()


@pytest.mark.parametrize(("tool", "path"), SAMPLES, ids=lambda v: v if isinstance(v, str) else v.name)
def test_results_ignore_crlf_and_trailing_blanks(tool: str, path: Path) -> None:
    text = path.read_text()
    expected = parse(tool, text)
    assert parse(tool, text.replace("\n", "\r\n")) == expected
    assert parse(tool, text.replace("\n", " \t \n")) == expected


@pytest.mark.parametrize(
    "parser", [parse_sminfo, parse_iblinkinfo, parse_ibnetdiscover, parse_sysfs_ib_ports, parse_sysfs_pkeys]
)
@pytest.mark.parametrize(
    "garbage",
    ["", "   \n", "hello world\n", "mlx5_0 port 1 ==> ib0 (Up)\n", "CA 'mlx5_0'\n\tCA type: MT4123\n", "$ sminfo\n"],
)
def test_text_that_is_not_the_tool_output_is_refused(parser: Callable[[str], Parsed], garbage: str) -> None:
    with pytest.raises(ParseError):
        parser(garbage)


@pytest.mark.parametrize(
    ("tool", "other"),
    [("sminfo", "iblinkinfo"), ("iblinkinfo", "ibnetdiscover"), ("ibnetdiscover", "iblinkinfo"),
     ("sysfs_ib_ports", "sysfs_pkeys"), ("sysfs_pkeys", "sysfs_ib_ports")],
)  # fmt: skip
def test_another_tools_real_output_is_refused(tool: str, other: str) -> None:
    for path in real_outputs(other):
        if getattr(parse(other, path.read_text()), "error", None):
            continue  # the MAD tools fail alike on a host without a MAD port; each accepts that failure
        with pytest.raises(ParseError):
            parse(tool, path.read_text())


def test_guids_compare_however_the_tools_spelled_them() -> None:
    assert normalize_guid("0x2c9030037a2f1") == "0x0002c9030037a2f1"  # sminfo drops leading zeros
    assert normalize_guid("8f10403960985") == "0x0008f10403960985"  # ibnetdiscover port GUID in parentheses
    assert normalize_guid("S-005442ba00003080") == "0x005442ba00003080"  # ibnetdiscover node id
    assert normalize_guid("9c05<REDACTED>") == "9c05<redacted>"


def test_link_rate_is_lanes_times_the_data_rate_of_the_generation() -> None:
    assert link_rate_gbps("4X", "HDR") == 200.0
    assert link_rate_gbps("1x", "EDR") == 25.0
    assert link_rate_gbps("2X", "NDR") == 200.0
    assert link_rate_gbps(None, "EDR") is None


# --------------------------------------------------------------------------------------------------- sminfo


@pytest.mark.parametrize(
    ("name", "lid", "guid", "priority"),
    [
        ("hpc-notes-b1nstcx02-master-1.txt", 37, "0x7cfe90030016aef1", 14),
        ("oracle-bda-hca-replacement-master-2.txt", 15, "0x0010e0406d5aa0a0", 14),
        ("fn91-mlx4-notes-master-3.txt", 64, "0x0002c9030037a2f1", 14),
        ("ibsim-debian12-master.txt", 2, "0x0000000000100001", 14),
    ],
)
def test_sminfo_reads_the_master_sm_lid_guid_and_priority(name: str, lid: int, guid: str, priority: int) -> None:
    sm = parse_sminfo(real_output("sminfo", name))
    assert (sm.sm_lid, sm.sm_guid, sm.priority) == (lid, guid, priority)
    assert (sm.state, sm.state_name) == (3, "SMINFO_MASTER")
    assert sm.reachable and sm.is_master and sm.error is None


def test_sminfo_keeps_the_activity_count_the_sm_reported() -> None:
    assert parse_sminfo(real_output("sminfo", "fn91-mlx4-notes-master-3.txt")).activity_count == 524649304


def test_sminfo_of_old_ofed_reads_a_hex_lid_and_no_state() -> None:
    sm = parse_sminfo(real_output("sminfo", "mlnx-ofed-readme-old-format-example-6.txt"))
    assert (sm.sm_lid, sm.sm_guid, sm.priority, sm.state) == (1, "0x0002c9010b7c2ae1", 1, None)
    assert sm.reachable and not sm.is_master


def test_sminfo_line_wrapped_by_a_mail_client_still_parses() -> None:
    wrapped = "sminfo: sm lid 2 sm guid 0x2c90200259201, activity count 6881 priority 0 \nstate 3 SMINFO_MASTER\n"
    sm = parse_sminfo(wrapped)
    assert (sm.sm_lid, sm.state_name, sm.priority) == (2, "SMINFO_MASTER", 0)


def test_sminfo_with_no_sm_answering_is_a_finding_not_an_error() -> None:
    sm = parse_sminfo(real_output("sminfo", "ibsim-debian12-no-sm-query-failed.txt"))
    assert not sm.reachable
    assert (sm.error, sm.failure) == ("failed: query", "no_sm_response")
    assert any("_do_madrpc failed" in warning for warning in sm.warnings)


def test_sminfo_no_sm_message_of_the_ofed_readme_is_no_sm_response() -> None:
    sm = parse_sminfo(real_output("sminfo", "mlnx-ofed-readme-no-sm-quote-5.txt"))
    assert (sm.error, sm.failure) == ("query failed", "no_sm_response")


@pytest.mark.parametrize("name", ["slimfly-cscs-no-umad-port-4.txt", "container-debian12-no-ib-devices.txt"])
def test_sminfo_without_a_mad_port_says_so(name: str) -> None:
    sm = parse_sminfo(real_output("sminfo", name))
    assert sm.error == "failed: Failed to open '(null)' port '0'"
    assert sm.failure == "no_mad_port" and not sm.reachable


# ----------------------------------------------------------------------------------------------- iblinkinfo


def test_iblinkinfo_reads_switch_ports_with_the_switch_guid_and_peer() -> None:
    info = parse_iblinkinfo(real_output("iblinkinfo", "centos-qdr-infiniscale-4-hosts-1.txt"))
    port3 = next(link for link in info.links if link.node_type == "Switch" and link.port == 3)
    assert (port3.guid, port3.node_name, port3.lid) == (
        "0x0002c9020046c588", "Infiniscale-IV Mellanox Technologies", 2,
    )  # fmt: skip
    assert (port3.state, port3.phys_state, port3.width, port3.speed_gbps_per_lane) == ("Active", "LinkUp", "4X", 10.0)
    assert (port3.speed_label, port3.rate_gbps) == ("QDR", 40.0)
    assert (port3.peer_lid, port3.peer_port, port3.peer_name) == (4, 1, "centos-data-200 HCA-1")


def test_iblinkinfo_lists_unplugged_switch_ports_as_down_polling_without_a_peer() -> None:
    info = parse_iblinkinfo(real_output("iblinkinfo", "centos-qdr-infiniscale-4-hosts-1.txt"))
    down = info.down_ports()
    assert [link.port for link in down] == list(range(5, 37))
    assert all(link.phys_state == "Polling" and link.peer_lid is None and link.width is None for link in down)


def test_iblinkinfo_ca_lines_carry_the_ca_port_guid() -> None:
    info = parse_iblinkinfo(real_output("iblinkinfo", "sharp-notes-quantum-hdr-cu-nodes-3.txt"))
    cu02 = next(link for link in info.links if link.node_name == "cu02 HCA-1")
    assert (cu02.node_type, cu02.guid, cu02.lid, cu02.speed_label, cu02.rate_gbps) == (
        "CA", "0xb8cef60300025b90", 17, "HDR", 200.0,
    )  # fmt: skip


def test_iblinkinfo_flags_a_1x_link_as_degraded() -> None:
    info = parse_iblinkinfo(real_output("iblinkinfo", "ibsim-debian12-active-1x-and-edr.txt"))
    leaf3 = next(link for link in info.links if link.node_name == "leaf01" and link.port == 3)
    assert (leaf3.width, leaf3.lanes, leaf3.speed_label, leaf3.rate_gbps) == ("1X", 1, "HDR", 50.0)
    assert leaf3.degraded and leaf3.peer_name == "gpu-02 mlx5_0"


def test_iblinkinfo_flags_an_edr_hca_on_an_hdr_switch_as_degraded() -> None:
    info = parse_iblinkinfo(real_output("iblinkinfo", "ubuntu-quantum-hdr-switch-edr-hcas-2.txt"))
    slow = info.degraded_links()
    assert [link.port for link in slow] == [21, 22, 23, 24]
    assert {link.speed_label for link in slow} == {"EDR"} and slow[0].could_be == "Could be 53.125 Gbps"
    uplink = next(link for link in info.links if link.port == 40)
    assert (uplink.speed_label, uplink.degraded, uplink.peer_name) == ("HDR", False, "MF0;d32-03-1:MQM8700/U1")


def test_iblinkinfo_before_the_sm_runs_shows_ports_in_initialize() -> None:
    info = parse_iblinkinfo(real_output("iblinkinfo", "ibsim-debian12-before-sm-initialize.txt"))
    up = [link for link in info.links if link.state != "Down"]
    assert up and {(link.state, link.phys_state) for link in up} == {("Initialize", "LinkUp")}
    assert {link.lid for link in up if link.node_type == "Switch"} == {0}  # no SM, no switch LIDs yet


def test_iblinkinfo_line_mode_names_each_node_and_the_peer_guid() -> None:
    info = parse_iblinkinfo(real_output("iblinkinfo", "ibsim-debian12-line-mode.txt"))
    line = next(link for link in info.links if link.node_name == "leaf01" and link.port == 35)
    assert (line.guid, line.node_type, line.peer_guid, line.peer_lid, line.peer_name) == (
        "0x0000000000200000", "Switch", "0x0000000000200001", 6, "spine01",
    )  # fmt: skip
    assert all(link.node_name == link.node_name.strip() for link in info.links)  # %30s padding dropped


def test_iblinkinfo_grepd_lines_without_headers_still_parse() -> None:
    info = parse_iblinkinfo(real_output("iblinkinfo", "n01-sb7700-edr-grep-up-5.txt"))
    assert [link.node_type for link in info.links] == ["CA", "CA", "Switch", "Switch", "Switch", "CA"]
    assert info.links[-1].guid == "0xec0d9a03003d677a"


def test_iblinkinfo_without_a_mad_port_reports_the_failure() -> None:
    info = parse_iblinkinfo(real_output("iblinkinfo", "container-debian12-no-ib-devices.txt"))
    assert info.links == []
    assert (info.error, info.failure) == ("Failed to open (null) port 0", "no_mad_port")


# ---------------------------------------------------------------------------------------- iblinkinfo uplink


def test_uplink_of_a_host_ca_by_name_from_its_own_line() -> None:
    info = parse_iblinkinfo(real_output("iblinkinfo", "sharp-notes-quantum-hdr-cu-nodes-3.txt"))
    up = info.find_ca_uplink("cu02", "HCA-1")
    assert up is not None
    assert (up.switch_guid, up.switch_name, up.switch_lid, up.switch_port) == (
        "0x0c42a103008982a4", "Quantum Mellanox Technologies", 3, 39,
    )  # fmt: skip
    assert (up.ca_port_guid, up.ca_lid, up.peer_type, up.state, up.width, up.speed_label) == (
        "0xb8cef60300025b90", 17, "Switch", "Active", "4X", "HDR",
    )  # fmt: skip


def test_uplink_host_name_is_matched_on_the_short_hostname() -> None:
    info = parse_iblinkinfo(real_output("iblinkinfo", "ibsim-debian12-active-1x-and-edr.txt"))
    up = info.find_ca_uplink("gpu-02.cluster.example", "mlx5_0")
    assert up is not None and (up.switch_name, up.switch_port, up.width) == ("leaf01", 3, "1X")
    assert info.find_ca_uplink("gpu-02", "mlx5_7") is None
    assert info.find_ca_uplink("gpu-03") is None


def test_uplink_by_port_guid_in_line_mode_gives_the_switch_guid() -> None:
    info = parse_iblinkinfo(real_output("iblinkinfo", "ibsim-debian12-line-mode.txt"))
    up = info.find_ca_uplink(port_guid="0x100007")
    assert up is not None
    assert (up.ca_name, up.switch_guid, up.switch_name, up.switch_port, up.speed_label) == (
        "gpu-02 mlx5_1", "0x0000000000200000", "leaf01", 4, "EDR",
    )  # fmt: skip


def test_uplink_from_the_switch_line_when_the_ca_header_was_grepped_away() -> None:
    info = parse_iblinkinfo(real_output("iblinkinfo", "n01-sb7700-edr-grep-up-5.txt"))
    up = info.find_ca_uplink("n01")
    assert up is not None
    assert (up.switch_lid, up.switch_port, up.switch_name, up.ca_lid) == (2, 18, "MF0;SB7700:MSB7700/U1", 1)
    by_guid = info.find_ca_uplink(port_guid="0xec0d9a03003d677a")
    assert by_guid is not None and (by_guid.switch_lid, by_guid.switch_port) == (2, 18)


def test_uplink_of_a_back_to_back_cable_is_the_other_ca() -> None:
    info = parse_iblinkinfo(real_output("iblinkinfo", "m01-m02-edr-back-to-back-4.txt"))
    up = info.find_ca_uplink("m01")
    assert up is not None and (up.switch_name, up.peer_type, up.switch_guid) == (
        "m02 HCA-1",
        "CA",
        "0x0002c90300212111",
    )


# -------------------------------------------------------------------------------------------- ibnetdiscover


def test_ibnetdiscover_reads_switch_and_ca_nodes() -> None:
    fabric = parse_ibnetdiscover(real_output("ibnetdiscover", "ibsim-debian12-leaf-spine-1x.txt"))
    leaf = fabric.node("S-0000000000200000")
    assert leaf is not None and (leaf.node_type, leaf.name, leaf.ports, leaf.lid) == ("Switch", "leaf01", 36, 1)
    assert [node.name for node in fabric.switches()] == ["spine01", "leaf01"]
    ca = fabric.node("0x100004")
    assert ca is not None and (ca.node_type, ca.name, ca.lid, ca.port_guids) == (
        "CA", "gpu-02 mlx5_0", 4, {1: "0x0000000000100005"},
    )  # fmt: skip


def test_ibnetdiscover_reads_links_with_width_and_speed() -> None:
    fabric = parse_ibnetdiscover(real_output("ibnetdiscover", "ibsim-debian12-leaf-spine-1x.txt"))
    leaf = [link for link in fabric.links if link.from_guid == "0x0000000000200000"]
    assert [(link.from_port, link.to_name, link.width, link.speed_label) for link in leaf] == [
        (1, "gpu-01 mlx5_0", "4x", "HDR"),
        (2, "gpu-01 mlx5_1", "4x", "HDR"),
        (3, "gpu-02 mlx5_0", "1x", "HDR"),
        (4, "gpu-02 mlx5_1", "4x", "EDR"),
        (35, "spine01", "4x", "HDR"),
    ]
    assert leaf[2].to_port_guid == "0x0000000000100005" and leaf[2].rate_gbps == 50.0


def test_ibnetdiscover_man_page_example_has_two_1x_sdr_links() -> None:
    fabric = parse_ibnetdiscover(real_output("ibnetdiscover", "rdma-core-man-topology-example-1.txt"))
    assert len(fabric.nodes) == 6 and len(fabric.switches()) == 2
    narrow = [(link.from_guid, link.from_port, link.to_port) for link in fabric.links if link.lanes == 1]
    assert narrow == [("0x0008f10400410015", 1, 10), ("0x0008f10403960558", 1, 12)]
    dual = fabric.node("H-0008f10403960558")
    assert dual is not None and dual.port_lids == {2: 14, 1: 10}


def test_ibnetdiscover_shows_a_link_that_trained_at_ddr_in_an_edr_fabric() -> None:
    fabric = parse_ibnetdiscover(real_output("ibnetdiscover", "switchib-edr-fattree-first-two-switches-2.txt"))
    slow = [link for link in fabric.links if link.speed_label != "EDR"]
    assert [(link.from_guid, link.from_port, link.to_guid, link.speed_label) for link in slow] == [
        ("0xec0d9a0300ec8480", 11, "0xec0d9a0300ec8200", "DDR"),
    ]
    assert fabric.node("S-ec0d9a0300ec8240") is not None and fabric.nodes[0].enhanced_port0 is False


def test_ibnetdiscover_mf0_switch_with_enhanced_port0_and_2x_ndr_ports() -> None:
    fabric = parse_ibnetdiscover(real_output("ibnetdiscover", "h20-qm9700-2xndr-redacted-5.txt"))
    switch = fabric.nodes[0]
    assert (switch.name, switch.ports, switch.lid, switch.enhanced_port0) == (
        "MF0;CNTSN-POD229-QM97-IB-02:MQM9700/U1", 129, 1, True,
    )  # fmt: skip
    assert switch.guid == "9c05<redacted>"  # the paste hid the GUID; it is kept as printed
    assert {link.width for link in fabric.links} == {"2x"} and fabric.links[0].rate_gbps == 200.0


def test_ibnetdiscover_ca_blocks_carry_the_ca_lid_and_the_switch_peer() -> None:
    fabric = parse_ibnetdiscover(real_output("ibnetdiscover", "ai-notes-hdr-aggregation-node-ca-blocks-3.txt"))
    hca = fabric.node("H-0002c90000017dfd")
    assert hca is not None and (hca.name, hca.ports, hca.lid) == ("H_32000 HCA-1 (Mellanox HCA)", 2, 36214)
    up = fabric.find_ca_uplink("H_32000")
    assert up is not None and (up.switch_name, up.switch_port, up.switch_lid) == (
        "MF0;L0_R05_B16_I20:MQM8700/U1", 20, 35908,
    )  # fmt: skip


def test_ibnetdiscover_grepd_switch_line_is_one_node_without_links() -> None:
    fabric = parse_ibnetdiscover(real_output("ibnetdiscover", "oracle-bda-grep-sm-switch-4.txt"))
    assert fabric.links == []
    assert [(n.guid, n.lid, n.enhanced_port0) for n in fabric.nodes] == [("0x0010e0406d5aa0a0", 15, True)]


def test_ibnetdiscover_uplink_by_host_from_the_switch_block() -> None:
    fabric = parse_ibnetdiscover(real_output("ibnetdiscover", "switchib-edr-fattree-first-two-switches-2.txt"))
    up = fabric.find_ca_uplink("gpu001", "HCA-1")
    assert up is not None
    assert (up.switch_guid, up.switch_lid, up.switch_port, up.ca_lid, up.ca_port_guid) == (
        "0xec0d9a0300ec8240", 48, 11, 2, "0x506b4b030043f9f6",
    )  # fmt: skip


def test_ibnetdiscover_uplink_by_port_guid_from_the_ca_block() -> None:
    fabric = parse_ibnetdiscover(real_output("ibnetdiscover", "rdma-core-man-topology-example-1.txt"))
    up = fabric.find_ca_uplink(port_guid="8f10403960559")
    assert up is not None
    assert (up.switch_guid, up.switch_port, up.ca_port, up.ca_lid, up.width, up.speed_gbps_per_lane) == (
        "0x005442ba00003080", 12, 1, 10, "1x", 2.5,
    )  # fmt: skip


@pytest.mark.parametrize(
    "name", ["treydock-exporter-issue26-client-register-failed-7.txt", "container-debian12-no-ib-devices.txt"]
)
def test_ibnetdiscover_that_could_not_open_a_mad_port_reports_why(name: str) -> None:
    fabric = parse_ibnetdiscover(real_output("ibnetdiscover", name))
    assert (fabric.nodes, fabric.error, fabric.failure) == ([], "failed: discover failed", "no_mad_port")


# --------------------------------------------------------------------------------------------------- sysfs


def test_sysfs_ports_read_states_rate_lids_and_link_layer() -> None:
    ports = parse_sysfs_ib_ports(real_output("sysfs_ib_ports", "kernel-format-ib-active-init-polling-1x.txt"))
    active = ports.get("mlx5_0")
    assert active is not None
    assert (active.state, active.state_name, active.phys_state, active.phys_state_name) == (4, "ACTIVE", 5, "LinkUp")
    assert (active.rate_gbps, active.width, active.lanes, active.speed_label) == (100.0, "4X", 4, "EDR")
    assert (active.lid, active.sm_lid, active.sm_sl, active.link_layer) == (1, 1, 0, "InfiniBand")
    assert active.active and active.lid_assigned


def test_sysfs_port_waiting_for_the_sm_is_init_without_a_lid() -> None:
    ports = parse_sysfs_ib_ports(real_output("sysfs_ib_ports", "kernel-format-ib-active-init-polling-1x.txt"))
    init, polling = ports.get("mlx5_1"), ports.get("mlx5_2")
    assert init is not None and (init.state_name, init.phys_state_name, init.lid) == ("INIT", "LinkUp", 0xFFFF)
    assert not init.active and not init.lid_assigned and init.sm_lid == 0
    assert polling is not None and (polling.state, polling.phys_state, polling.phys_state_name) == (1, 2, "Polling")


def test_sysfs_rate_shows_a_degraded_1x_port_and_2x_ndr() -> None:
    ports = parse_sysfs_ib_ports(real_output("sysfs_ib_ports", "kernel-format-ib-active-init-polling-1x.txt"))
    narrow, ndr = ports.get("mlx5_3"), ports.get("mlx5_4")
    assert narrow is not None and (narrow.rate_gbps, narrow.lanes, narrow.speed_label) == (25.0, 1, "EDR")
    assert ndr is not None and (ndr.rate_gbps, ndr.width, ndr.speed_label, ndr.lid) == (200.0, "2X", "NDR", 0x6C)


def test_sysfs_rate_with_a_half_gigabit() -> None:
    ports = parse_sysfs_ib_ports("/sys/class/infiniband/mlx4_0/ports/2/rate:2.5 Gb/sec (1X SDR)\n")
    port = ports.get("mlx4_0", 2)
    assert port is not None and (port.rate_gbps, port.width, port.speed_label) == (2.5, "1X", "SDR")


def test_sysfs_soft_roce_ports_are_ethernet_without_lids() -> None:
    ports = parse_sysfs_ib_ports(real_output("sysfs_ib_ports", "vmlab-debian12-rxe-active-and-down.txt"))
    assert [(p.device, p.port, p.state_name, p.phys_state_name) for p in ports.ports] == [
        ("rxe_eth2", 1, "DOWN", "Disabled"),
        ("rxe_eth3", 1, "ACTIVE", "LinkUp"),
    ]
    assert {(p.link_layer, p.lid, p.sm_lid, p.rate_gbps) for p in ports.ports} == {("Ethernet", 0, 0, 100.0)}


def test_sysfs_pkeys_keep_non_empty_slots_with_their_membership() -> None:
    tables = parse_sysfs_pkeys(real_output("sysfs_pkeys", "kernel-format-ib-full-and-limited-members.txt"))
    full, limited = tables.get("mlx5_0"), tables.get("mlx5_1")
    assert full is not None and [(k.index, k.hex, k.full_member) for k in full.pkeys] == [
        (0, "0xffff", True),
        (1, "0x8001", True),
    ]
    assert limited is not None and [(k.hex, k.partition, k.full_member) for k in limited.pkeys] == [
        ("0x7fff", 0x7FFF, False),
        ("0x8002", 0x0002, True),
    ]


def test_sysfs_pkey_membership_lookup_ignores_the_membership_bit() -> None:
    tables = parse_sysfs_pkeys(real_output("sysfs_pkeys", "kernel-format-ib-full-and-limited-members.txt"))
    limited = tables.get("mlx5_1")
    assert limited is not None
    default = limited.member_of(0xFFFF)
    assert default is not None and not default.full_member  # a limited member of the default partition
    assert limited.member_of(0x8001) is None


def test_sysfs_pkeys_of_soft_roce_hold_only_the_default_key() -> None:
    tables = parse_sysfs_pkeys(real_output("sysfs_pkeys", "vmlab-debian12-rxe-default-pkey-only.txt"))
    assert [(t.device, [k.hex for k in t.pkeys]) for t in tables.ports] == [
        ("rxe_eth2", ["0xffff"]),
        ("rxe_eth3", ["0xffff"]),
    ]


def test_sysfs_port_with_only_empty_pkey_slots_is_listed_with_no_keys() -> None:
    tables = parse_sysfs_pkeys("/sys/class/infiniband/mlx5_2/ports/1/pkeys/0:0x0000\n")
    port = tables.get("mlx5_2")
    assert port is not None and port.pkeys == []
