"""Specification of the ethtool parsers (link settings, pause, driver info, statistics) on real output."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.fixture_files import real_output, real_outputs
from wizard.parsers.common import ParseError
from wizard.parsers.ethtool import parse_ethtool, parse_ethtool_i, parse_ethtool_S

_CX4LX_MODES = ["1000baseKX/Full", "10000baseKR/Full", "25000baseCR/Full", "25000baseKR/Full", "25000baseSR/Full"]

# --------------------------------------------------------------------------------------------- ethtool IFACE


@pytest.mark.parametrize("path", real_outputs("ethtool"), ids=lambda p: p.name)
def test_every_ethtool_sample_names_its_interface(path: Path) -> None:
    assert parse_ethtool(path.read_text()).interface


def test_ethtool_link_up_at_10g_on_a_25g_port() -> None:
    link = parse_ethtool(real_output("ethtool", "proxmox-cx4lx-10g-up-2.txt"))
    assert (link.interface, link.speed_mbps, link.duplex, link.lanes) == ("nic_pve02_stor", 10000, "Full", 1)
    assert (link.port, link.auto_negotiation, link.link_detected) == ("Direct Attach Copper", True, True)
    assert link.supported_link_modes == _CX4LX_MODES and link.advertised_link_modes == _CX4LX_MODES
    assert link.supported_fec_modes == ["None", "RS", "BASER"] and link.advertised_fec_modes == ["None"]
    assert link.supported_ports == ["Backplane"]


def test_ethtool_link_down_has_no_speed_and_keeps_the_reason() -> None:
    link = parse_ethtool(real_output("ethtool", "proxmox-cx4lx-25g-linkdown-1.txt"))
    assert (link.speed_mbps, link.duplex, link.link_detected) == (None, None, False)
    assert link.link_detected_reason == "Link training failure, Remote side is not ready yet"
    assert link.advertised_fec_modes == [] and link.fields["Speed"] == "Unknown!"


def test_ethtool_old_output_with_message_level_continuation() -> None:
    link = parse_ethtool(real_output("ethtool", "bond-notes-cx4lx-p4p2-4.txt"))
    assert (link.interface, link.speed_mbps, link.port, link.transceiver) == ("p4p2", 10000, "FIBRE", "internal")
    assert link.supported_fec_modes == ["None", "BaseR"] and link.supported_ports == ["FIBRE"]
    assert link.fields["Current message level"] == "0x00000004 (4) link"
    assert link.supports_auto_negotiation is True and link.lanes is None


def test_ethtool_on_a_veth_reports_nothing_supported_and_keeps_the_warning() -> None:
    link = parse_ethtool(real_output("ethtool", "k8s-rdma-sriov-issue30-veth-1.txt"))
    assert (link.interface, link.speed_mbps, link.port, link.auto_negotiation) == ("eth0", 10000, "Twisted Pair", False)
    assert link.supported_ports == [] and link.supported_link_modes == [] and link.supported_fec_modes == []
    assert link.warnings == ["Cannot get wake-on-lan settings: Operation not permitted"]
    assert link.link_detected is True


def test_ethtool_pause_parameters_read_global_pause_off() -> None:
    link = parse_ethtool(real_output("ethtool", "lossless-roce-notes-pause-a-7.txt"))
    assert (link.interface, link.pause_autonegotiate, link.pause_rx, link.pause_tx) == ("mlxen1", False, False, False)
    assert link.speed_mbps is None and link.link_detected is None


def test_ethtool_pause_on_is_read_as_true() -> None:
    link = parse_ethtool("Pause parameters for ens1f0np0:\nAutonegotiate:\toff\nRX:\t\ton\nTX:\t\ton\n")
    assert (link.pause_rx, link.pause_tx) == (True, True)


# --------------------------------------------------------------------------------------------- ethtool -i


@pytest.mark.parametrize("path", real_outputs("ethtool_i"), ids=lambda p: p.name)
def test_every_ethtool_i_sample_reads_its_driver_and_pci_bus(path: Path) -> None:
    info = parse_ethtool_i(path.read_text())
    assert info.driver in ("mlx5_core", "mlx4_en", "virtio_net")
    assert info.bus_info is not None and info.bus_info.startswith("0000:")


@pytest.mark.parametrize(
    ("name", "version", "firmware", "psid", "bus"),
    [
        ("ethq-issue21-mlx4-3.txt", "4.0-0", "2.42.5000", None, "0000:83:00.0"),
        ("ethq-issue8-cx4lx-inbox-ubuntu18-2.txt", "5.0-0", "14.23.1020", "MT_2420110034", "0000:af:00.0"),
        ("k8s-operator-notes-cx6-mofed-4.txt", "23.10-3.2.2", "28.39.3560", "MT_0000000838", "0000:4d:00.0"),
        ("lg-cmc-cx7-mofed2310-9.txt", "23.10-1.1.9", "28.39.3560", "MT_0000000838", "0000:e6:00.0"),
        ("rdma-notes-cx4lx-doca2407-8.txt", "24.07-0.6.1", "14.28.2006", "MT_2420110034", "0000:3b:00.0"),
        ("rdma-tools-note-mofed5.0-5.txt", "5.0-2.1.8", "14.28.2006", "MT_2420110034", "0000:2f:00.0"),
    ],
)
def test_ethtool_i_reads_driver_version_firmware_psid_and_bus(
    name: str, version: str, firmware: str, psid: str | None, bus: str
) -> None:
    info = parse_ethtool_i(real_output("ethtool_i", name))
    assert (info.version, info.firmware_version, info.psid, info.bus_info) == (version, firmware, psid, bus)
    assert info.expansion_rom_version is None
    assert (info.supports_statistics, info.supports_eeprom_access, info.supports_priv_flags) == (True, False, True)


def test_ethtool_i_takes_the_interface_from_the_command_and_keeps_the_first_of_two_outputs() -> None:
    info = parse_ethtool_i(real_output("ethtool_i", "rdma-tools-note-mofed5.0-5.txt"))
    assert (info.interface, info.bus_info, info.firmware_version) == ("eth01", "0000:2f:00.0", "14.28.2006")


def test_ethtool_i_drops_an_authors_trailing_comment() -> None:
    info = parse_ethtool_i(real_output("ethtool_i", "k8s-operator-notes-cx6-mofed-4.txt"))
    assert (info.interface, info.bus_info) == ("enp77s0np0", "0000:4d:00.0")


def test_ethtool_i_trailing_spaces_after_version_are_dropped() -> None:
    assert parse_ethtool_i(real_output("ethtool_i", "ethq-issue21-mlx4-3.txt")).version == "4.0-0"


# --------------------------------------------------------------------------------------------- ethtool -S


@pytest.mark.parametrize("path", real_outputs("ethtool_S"), ids=lambda p: p.name)
def test_every_ethtool_s_sample_has_integer_counters(path: Path) -> None:
    counters = parse_ethtool_S(path.read_text()).counters
    assert len(counters) >= 14 and all(isinstance(v, int) for v in counters.values())


def test_ethtool_s_reads_phy_discards_and_global_pause() -> None:
    stats = parse_ethtool_S(real_output("ethtool_S", "bpf-xdp-regression-mlx5-k5.15-1.txt"))
    assert stats.get("rx_discards_phy") == 58591428329
    assert stats.get("tx_global_pause") == 5745042 and stats.get("tx_pause_ctrl_phy") == 5745055
    assert stats.prio("rx_discards", 0) == 58591314012
    assert stats.prio("rx_pause", 3) is None  # the mail removed the zero per-priority pause counters
    assert stats.get("rx0_packets") == 70812690


def test_ethtool_s_grep_paste_without_header_reads_per_priority_discards() -> None:
    stats = parse_ethtool_S(real_output("ethtool_S", "nic-stats-notes-cx4lx-discards-4.txt"))
    assert [stats.prio("rx_discards", p) for p in range(8)] == [0] * 8
    assert stats.get("rx_steer_missed_packets") == 24627 and stats.interface is None


def test_ethtool_s_per_ring_counters_are_selectable_by_pattern() -> None:
    stats = parse_ethtool_S(real_output("ethtool_S", "nic-stats-notes-per-ring-rx-packets-6.txt"))
    rings = stats.matching(r"^rx\d+_packets$")
    assert len(rings) == 63 and rings["rx29_packets"] == 2889641
    assert stats.get("rx_packets_phy") == 2572965292


def test_ethtool_s_truncated_dump_keeps_what_was_printed() -> None:
    stats = parse_ethtool_S(real_output("ethtool_S", "ethq-issue8-cx4lx-ubuntu18-partial-3.txt"))
    assert stats.get("tx_tso_bytes") == 1822751919330 and stats.get("tx_queue_stopped") == 0


def test_ethtool_s_reads_the_interface_from_the_command_and_rx_prio_pause() -> None:
    text = "$ ethtool -S ens1f0np0 | grep prio3\n     rx_prio3_pause: 12\n     tx_prio3_pause: 7\n"
    stats = parse_ethtool_S(text)
    assert (stats.interface, stats.prio("rx_pause", 3), stats.prio("tx_pause", 3)) == ("ens1f0np0", 12, 7)


# --------------------------------------------------------------------------------------------- refusals


@pytest.mark.parametrize(
    ("tool", "name"),
    [
        ("bonding", "lacp-25g-kernel5.15-4.txt"),
        ("ibv_devinfo", "k8s-sriov-cx5-1.txt"),
        ("mlnx_qos", "tcp-ecn-note-pcp-1.txt"),
        ("ibstat", "k8s-sriov-cx5-1.txt"),
        ("lsmod", "moc-inbox-mlx-4.txt"),
    ],
)
def test_ethtool_parsers_refuse_other_tools_output(tool: str, name: str) -> None:
    text = real_output(tool, name)
    for parser in (parse_ethtool, parse_ethtool_i, parse_ethtool_S):
        with pytest.raises(ParseError):
            parser(text)


def test_ethtool_parsers_refuse_each_others_output() -> None:
    with pytest.raises(ParseError):
        parse_ethtool(real_output("ethtool_i", "lg-cmc-cx7-mofed2310-9.txt"))
    with pytest.raises(ParseError):
        parse_ethtool_i(real_output("ethtool", "proxmox-cx4lx-10g-up-2.txt"))
    with pytest.raises(ParseError):
        parse_ethtool_S(real_output("ethtool", "proxmox-cx4lx-10g-up-2.txt"))


def test_ethtool_i_error_message_is_refused() -> None:
    with pytest.raises(ParseError):
        parse_ethtool_i("Cannot get driver information: No such device\n")
