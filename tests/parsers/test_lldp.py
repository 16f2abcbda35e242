"""Specification of the LLDP parsers: lldpd's `lldpctl -f json` and lldpad's `lldptool -t -n -i IF` on real samples."""

from __future__ import annotations

import pytest

from tests.fixture_files import real_output, real_outputs
from wizard.parsers import TOOLS, parse
from wizard.parsers.common import ParseError
from wizard.parsers.lldp import parse_lldpctl_json, parse_lldptool

# file -> (local port, switch/port, port id type, MFS, management IP) of each neighbour, in lldpd's order
LLDPCTL_EXPECTED = {
    "lldpd-integration-neighbors-dot3-1.json": [
        ("eth0", "ns-2.example.com/00:00:00:00:00:02", "mac", None, "fe80::200:ff:fe00:2")
    ],
    "picos-tor-single-line-1.json": [("eth0", "B2-Tor/ge-1/1/28", "ifname", None, "0.0.0.0")],
    "puppet-lldpd-issue129-unnamed-chassis-1.json": [
        ("enp3s0", "44:94:fc:9d:55:0a/g17", "local", None, "192.168.178.21")
    ],
    "puppet-lldpd-list-mfs-vlan-med-1.json": [("eno1", "router/ge-1/0/1", "ifname", 9192, "192.0.2.1")],
    "puppet-lldpd-no-neighbors-1.json": [],
    "lldpd-1.0.16-sonic-alias-pfc-app.json": [
        ("enp24s0np0", "leaf-r0/etp5", "local", None, "fe80::e41a:71ff:fedc:dfea")
    ],
    "sonic-juniper-unknown-tlv-mfs-1.json": [("Ethernet96", "spine4.9.test/et-0/0/11", "ifname", 9114, "192.0.2.1")],
    "lldpd-test-lldpcli-json-neighbors-1.txt": [
        ("eth0", "ns-2.example.com/00:00:00:00:00:02", "mac", None, "fe80::200:ff:fe00:2")
    ],
    "sonic-two-interfaces-list-1.json": [
        ("eth0", "tor5.0.mgmt/Ethernet32", "ifname", 2044, "192.0.2.1"),
        ("Ethernet124", "spine1.test/Ethernet1/1", "ifname", 9236, "192.0.2.45"),
    ],
}


def test_both_lldp_tools_are_registered() -> None:
    assert TOOLS["lldpctl_json"] == "wizard.parsers.lldp:parse_lldpctl_json"
    assert TOOLS["lldptool"] == "wizard.parsers.lldp:parse_lldptool"


# Captures cut off at the source (kept for their structure: the lab's lldpctl writer is checked against them).
LLDPCTL_TRUNCATED = {"suzieq-issue259-sonic-multi-interface-partial-1.txt"}


def test_every_lldpctl_sample_has_an_expectation() -> None:
    assert sorted(p.name for p in real_outputs("lldpctl")) == sorted({*LLDPCTL_EXPECTED, *LLDPCTL_TRUNCATED})


@pytest.mark.parametrize("name", sorted(LLDPCTL_TRUNCATED))
def test_a_truncated_lldpctl_capture_is_refused_saying_it_looks_truncated(name: str) -> None:
    with pytest.raises(ParseError, match="truncated"):
        parse("lldpctl_json", real_output("lldpctl", name))


@pytest.mark.parametrize("name", sorted(LLDPCTL_EXPECTED))
def test_lldpctl_json_reads_port_switch_and_switch_port_of_every_neighbour(name: str) -> None:
    found = parse("lldpctl_json", real_output("lldpctl", name))
    got = [(n.local_port, n.switch_port, n.port_id_type, n.mtu, n.mgmt_ip) for n in found.neighbors]
    assert got == LLDPCTL_EXPECTED[name]


def test_lldpctl_json_of_one_interface_is_an_object_keyed_by_name_with_chassis_keyed_by_sysname() -> None:
    n = parse_lldpctl_json(real_output("lldpctl", "picos-tor-single-line-1.json")).neighbors[0]
    assert (n.chassis_name, n.chassis_id, n.chassis_id_type) == ("B2-Tor", "cc:37:ab:60:cd:c1", "mac")
    assert (n.port_descr, n.ttl, n.vlan_id) == ("ge-1/1/28", 120, 61)
    assert n.pfc_enabled is None and n.pfc_willing is None and n.app_dscp == {}


def test_lldpctl_json_neighbour_without_sysname_keeps_the_chassis_id() -> None:
    n = parse_lldpctl_json(real_output("lldpctl", "puppet-lldpd-issue129-unnamed-chassis-1.json")).neighbors[0]
    assert (n.chassis_name, n.chassis_id, n.port_id, n.port_descr) == (None, "44:94:fc:9d:55:0a", "g17", None)


def test_real_lldpd_shows_a_sonic_alias_port_id_and_802_1qaz_tlvs_as_unknown_tlvs() -> None:
    """Captured from Debian's lldpd 1.0.16 in this project's namespace lab (tests/nslab/test_real_lldpd.py)."""
    n = parse_lldpctl_json(real_output("lldpctl", "lldpd-1.0.16-sonic-alias-pfc-app.json")).neighbors[0]
    assert (n.port_id, n.port_id_type, n.port_descr) == ("etp5", "local", "gpu-005 enp24s0np0")
    assert (n.pfc_enabled, n.pfc_capable, n.pfc_willing) == ([3], 8, False)
    assert n.app_dscp == {}, "its APP entry is UDP 4791 (selector 3), not a DSCP"


def test_lldpctl_json_keeps_unknown_tlvs_without_inventing_pfc() -> None:
    n = parse_lldpctl_json(real_output("lldpctl", "sonic-juniper-unknown-tlv-mfs-1.json")).neighbors[0]
    assert [(t.oui, t.subtype, len(t.payload())) for t in n.unknown_tlvs] == [("00,90,69", 1, 12)]
    assert n.pfc_enabled is None and n.dcbx is None


def test_lldpctl_json_decodes_the_802_1qaz_pfc_and_app_tlvs_lldpd_lists_as_unknown() -> None:
    """lldpd keeps 802.1Qaz TLVs as custom TLVs (lldp.c "Unknown Dot1 TLV"), shown as hex bytes by display.c.

    PFC (subtype 11): willing bit 0x80 and PFC capability in byte 0, the enable bitmap in byte 1; APP
    (subtype 12): a reserved byte, then priority(3)|reserved(2)|selector(3) and a 16-bit protocol id, selector
    5 = DSCP (IEEE 802.1Q-2018 D.2.10, D.2.11).
    """
    text = (
        '{"lldp": {"interface": {"enp12s0np0": {"via": "LLDP", "chassis": {"leaf-r0": {"id": {"type": "mac", '
        '"value": "1c:34:da:00:00:01"}}}, "port": {"id": {"type": "ifname", "value": "swp1"}, "mfs": "9216"}, '
        '"unknown-tlvs": {"unknown-tlv": [{"oui": "00,80,C2", "subtype": "11", "len": "2", "value": "08,08"}, '
        '{"oui": "00,80,C2", "subtype": "12", "len": "4", "value": "00,65,00,1A"}]}}}}}'
    )
    n = parse_lldpctl_json(text).neighbors[0]
    assert (n.switch_port, n.mtu) == ("leaf-r0/swp1", 9216)
    assert (n.pfc_enabled, n.pfc_willing, n.pfc_capable, n.dcbx) == ([3], False, 8, "ieee")
    assert n.app_dscp == {26: 3}


def test_lldpctl_json_after_a_prompt_line_and_with_crlf_still_parses() -> None:
    text = "root@gpu-001:~# lldpctl -f json\r\n" + real_output("lldpctl", "picos-tor-single-line-1.json")
    assert parse_lldpctl_json(text).neighbors[0].port_id == "ge-1/1/28"


@pytest.mark.parametrize(
    ("text", "reason"),
    [
        ("", "empty input"),
        ("Interface:    eth0, via: LLDP", "no JSON object"),
        ('{"lldp": {"interface": {"eth0": {"via"', "does not parse"),
        ('{"interfaces": []}', 'no "lldp" key'),
        ('{"lldp": [{"interface": []}]}', "json0"),
    ],
)
def test_lldpctl_json_refuses_what_is_not_its_output(text: str, reason: str) -> None:
    with pytest.raises(ParseError, match=reason):
        parse_lldpctl_json(text)


# file -> (chassis id, port id, system name, PFC enabled, willing, PFC-capable TCs, DCBX flavour)
LLDPTOOL_EXPECTED = {
    "netdev-dpaa2-pfc-only-1.txt": (None, None, None, [1, 3, 7], True, 8, "ieee"),
    "taf-cee-brocade-switch-1.txt": ("10.0.0.150", "Te 0/13", "broc150_jack", [2, 3, 4, 6], False, 8, "cee"),
    "taf-cee-powerconnect-switch-1.txt": ("5c:26:0a:f1:c5:73", "Te1/0/2", "powerconnect-155", [3, 4], False, 2, "cee"),
    "taf-ieee-ets-pfc-app-1.txt": ("a0:36:9f:0b:3f:9c", "a0:36:9f:0b:3f:9c", None, [1, 2, 5, 7], False, 4, "ieee"),
    "taf-ieee-willing-none-evb-med-1.txt": ("90:e2:ba:75:27:08", "90:e2:ba:75:27:08", None, [], True, 8, "ieee"),
}


def test_every_lldptool_sample_has_an_expectation() -> None:
    assert sorted(p.name for p in real_outputs("lldptool")) == sorted(LLDPTOOL_EXPECTED)


@pytest.mark.parametrize("name", sorted(LLDPTOOL_EXPECTED))
def test_lldptool_reads_the_neighbour_and_its_pfc_tlv(name: str) -> None:
    t = parse("lldptool", real_output("lldptool", name))
    got = (t.chassis_id, t.port_id, t.system_name, t.pfc_enabled, t.pfc_willing, t.pfc_capable, t.dcbx)
    assert got == LLDPTOOL_EXPECTED[name]


def test_lldptool_neighbour_converts_to_the_discovery_model() -> None:
    t = parse_lldptool(real_output("lldptool", "taf-cee-brocade-switch-1.txt"))
    n = t.neighbor("enp12s0np0")
    assert (n.local_port, n.switch_port, n.mgmt_ip, n.ttl) == ("enp12s0np0", "broc150_jack/Te 0/13", "10.0.0.150", 120)
    assert n.pfc_enabled == [2, 3, 4, 6] and n.pfc_willing is False


def test_lldptool_app_tlv_with_selector_5_maps_dscp_to_priority() -> None:
    """lldp_8021qaz_clif.c prints selector 5 (DSCP, 802.1Q-2018) under its default 'Reserved Port' label."""
    text = "IEEE 8021QAZ APP TLV\n\tApp#0:\n\t Priority: 3\n\t Sel: 5\n\t Reserved Port: 26\n\nEnd of LLDPDU TLV\n"
    t = parse_lldptool(text)
    assert t.app_dscp == {26: 3} and t.pfc_enabled is None


def test_lldptool_ieee_app_tlv_without_dscp_entries_maps_nothing() -> None:
    assert parse_lldptool(real_output("lldptool", "taf-ieee-ets-pfc-app-1.txt")).app_dscp == {}


@pytest.mark.parametrize("text", ["", "Agent instance for device not found\n", "# lldptool -t -n -i eth0\n"])
def test_lldptool_refuses_text_without_any_tlv(text: str) -> None:
    with pytest.raises(ParseError):
        parse_lldptool(text)
