"""Specification of the RDMA device parsers against real rdma link, ibdev2netdev, ibv_* and ibstat output."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

from tests.fixture_files import real_output, real_outputs
from wizard.parsers.common import Parsed, ParseError
from wizard.parsers.rdma import (
    parse_ibdev2netdev,
    parse_ibstat,
    parse_ibv_devices,
    parse_ibv_devinfo,
    parse_rdma_link,
)

# --------------------------------------------------------------------------------------------- rdma link


@pytest.mark.parametrize("path", real_outputs("rdma_link"), ids=lambda p: p.name)
def test_every_rdma_link_sample_parses_to_port_1_links(path: Path) -> None:
    links = parse_rdma_link(path.read_text()).links
    assert links and all(link.port == 1 for link in links)
    assert {link.state for link in links} <= {"ACTIVE", "DOWN"}


def test_rdma_link_reads_device_port_states_and_netdev_despite_trailing_spaces() -> None:
    links = parse_rdma_link(real_output("rdma_link", "3fs-pr283-1.txt")).links
    assert [(ln.device, ln.port, ln.state, ln.physical_state, ln.netdev) for ln in links] == [
        ("mlx5_0", 1, "ACTIVE", "LINK_UP", "p1p1"),
        ("mlx5_1", 1, "ACTIVE", "LINK_UP", "p1p2"),
    ]


def test_rdma_link_in_a_pod_leaves_netdev_empty_for_devices_of_other_namespaces() -> None:
    parsed = parse_rdma_link(real_output("rdma_link", "dranet-gke-1.txt"))
    assert len(parsed.links) == 8
    assert [ln.device for ln in parsed.links if ln.netdev] == ["mlx5_3"]
    link = parsed.get("mlx5_3")
    assert link is not None and link.netdev == "gpu3rdma0"
    other = parsed.get("mlx5_0")
    assert other is not None and other.netdev is None


def test_rdma_link_reports_disabled_ports_as_down() -> None:
    links = parse_rdma_link(real_output("rdma_link", "moc-6port-down-disabled-3.txt")).links
    down = [(ln.device, ln.netdev) for ln in links if ln.state == "DOWN"]
    assert down == [("mlx5_0", "eno2np0"), ("mlx5_1", "eno3np1")]
    assert all(ln.physical_state == "DISABLED" for ln in links if ln.state == "DOWN")
    assert links[5].device == "mlx5_5" and links[5].netdev == "eno7np0"


def test_rdma_link_roce_lag_device_shows_first_pf_as_netdev() -> None:
    parsed = parse_rdma_link(real_output("rdma_link", "ocp-roce-lag-bond1-down-disabled-4.txt"))
    bond0, bond1 = parsed.links
    assert (bond0.device, bond0.state, bond0.netdev) == ("mlx5_bond_0", "ACTIVE", "enp193s0f0np0")
    assert (bond1.device, bond1.state, bond1.physical_state) == ("mlx5_bond_1", "DOWN", "DISABLED")
    assert bond1.netdev == "enp1s0f0np0"


def test_rdma_link_mixes_eth_names_and_a_lag_device() -> None:
    parsed = parse_rdma_link(real_output("rdma_link", "ppu-node-eth-names-bond-7.txt"))
    assert [(ln.device, ln.netdev) for ln in parsed.links] == [
        ("mlx5_2", "eth10"),
        ("mlx5_3", "eth12"),
        ("mlx5_4", "eth14"),
        ("mlx5_5", "eth16"),
        ("mlx5_bond_0", "ens5f0np0"),
    ]


def test_rdma_link_keeps_infiniband_port_attributes() -> None:
    text = "link mlx5_0/1 subnet_prefix fe80:0000:0000:0000 lid 3 sm_lid 1 lmc 0 state ACTIVE physical_state LINK_UP\n"
    link = parse_rdma_link(text).links[0]
    assert link.state == "ACTIVE" and link.netdev is None
    assert link.attributes == {"subnet_prefix": "fe80:0000:0000:0000", "lid": "3", "sm_lid": "1", "lmc": "0"}


def test_rdma_link_reads_the_older_iproute2_layouts() -> None:
    text = (
        "8/1: mlx5_bond_0/1: state ACTIVE physical_state LINK_UP netdev reth0\n"
        "link mlx5_1/1: state DOWN physical_state DISABLED netdev ens21f1\n"
    )
    assert [(ln.device, ln.port, ln.state, ln.netdev) for ln in parse_rdma_link(text).links] == [
        ("mlx5_bond_0", 1, "ACTIVE", "reth0"),
        ("mlx5_1", 1, "DOWN", "ens21f1"),
    ]


# --------------------------------------------------------------------------------------------- ibdev2netdev


@pytest.mark.parametrize("path", real_outputs("ibdev2netdev"), ids=lambda p: p.name)
def test_every_ibdev2netdev_sample_maps_port_1_to_a_netdev(path: Path) -> None:
    entries = parse_ibdev2netdev(path.read_text()).entries
    assert entries and all(e.port == 1 and e.netdev for e in entries)
    assert {e.state for e in entries} <= {"Up", "Down"}


def test_ibdev2netdev_plain_form_maps_devices_to_netdevs_and_link_states() -> None:
    parsed = parse_ibdev2netdev(real_output("ibdev2netdev", "k8s-operator-notes-2.txt"))
    assert [(e.device, e.netdev, e.state) for e in parsed.entries] == [
        ("mlx5_0", "ens3np0", "Down"),
        ("mlx5_1", "enp77s0np0", "Down"),
        ("mlx5_2", "ens9f0np0", "Up"),
        ("mlx5_3", "ens9f1np1", "Up"),
    ]
    assert parsed.netdev_of("mlx5_2") == "ens9f0np0"
    assert parsed.entries[0].pci is None and parsed.entries[0].fw_ver is None


def test_ibdev2netdev_keeps_inbox_style_roce_device_names() -> None:
    parsed = parse_ibdev2netdev(real_output("ibdev2netdev", "spark-vllm-docker-dgx-spark-1.txt"))
    assert [e.device for e in parsed.entries] == ["rocep1s0f0", "rocep1s0f1", "roceP2p1s0f0", "roceP2p1s0f1"]
    assert parsed.netdev_of("roceP2p1s0f1") == "enP2p1s0f1np1"


def test_ibdev2netdev_reports_every_device_behind_a_plain_bond() -> None:
    parsed = parse_ibdev2netdev(real_output("ibdev2netdev", "sglang-pd-notes-bond0-twice-7.txt"))
    assert len(parsed.entries) == 12
    assert [e.device for e in parsed.device_of("bond0")] == ["mlx5_3", "mlx5_9"]
    assert parsed.entries[2].device == "mlx5_10" and parsed.entries[2].netdev == "enp210s0f1np1"


def test_ibdev2netdev_roce_lag_devices_map_to_bonds() -> None:
    parsed = parse_ibdev2netdev(real_output("ibdev2netdev", "nvmeof-blog-client-2bonds-18.txt"))
    assert [(e.device, e.netdev, e.state) for e in parsed.entries] == [
        ("mlx5_bond_0", "bond0", "Up"),
        ("mlx5_bond_1", "bond1", "Up"),
    ]


def test_ibdev2netdev_column_t_paste_with_comments_still_parses() -> None:
    parsed = parse_ibdev2netdev(real_output("ibdev2netdev", "imbue-cluster-health-issue4-annotated-9.txt"))
    assert len(parsed.entries) == 12
    assert [e.device for e in parsed.entries if e.state == "Up"] == ["mlx5_1", "mlx5_7"]
    assert parsed.netdev_of("mlx5_8") == "enp157s0f1np1"


def test_ibdev2netdev_keeps_both_hosts_of_a_two_host_paste() -> None:
    parsed = parse_ibdev2netdev(real_output("ibdev2netdev", "roce-notes-mlx4-mlx5-mixed-5.txt"))
    assert [(e.device, e.netdev) for e in parsed.entries] == [
        ("mlx4_0", "enp1s0"),
        ("mlx5_0", "ens2f0"),
        ("mlx5_1", "ens2f1"),
        ("mlx5_0", "p5p1"),
        ("mlx5_1", "p5p2"),
        ("mlx5_2", "p4p1"),
        ("mlx5_3", "p4p2"),
    ]


@pytest.mark.parametrize(
    ("name", "netdevs"),
    [
        ("azure-hbv3-mlx5_ib0-6.txt", [("mlx5_ib0", "ib0", "Up")]),
        ("lossless-roce-notes-mlxen-16.txt", [("mlx5_0", "mlxen0", "Up"), ("mlx5_1", "mlxen1", "Up")]),
        (
            "mvapich-rocev2-blog-4.txt",
            [("mlx5_0", "eth4", "Up"), ("mlx5_1", "eth5", "Down"), ("mlx5_2", "ib2", "Up")],
        ),
        (
            "rdma-notes-eth01-04-one-up-20.txt",
            [("mlx5_0", "eth01", "Up"), ("mlx5_1", "eth02", "Down"), ("mlx5_2", "eth03", "Down"),
             ("mlx5_3", "eth04", "Down")],
        ),
    ],
)  # fmt: skip
def test_ibdev2netdev_plain_samples_map_exactly(name: str, netdevs: list[tuple[str, str, str]]) -> None:
    parsed = parse_ibdev2netdev(real_output("ibdev2netdev", name))
    assert [(e.device, e.netdev, e.state) for e in parsed.entries] == netdevs


def test_ibdev2netdev_verbose_form_reads_pci_part_description_firmware_and_port_state() -> None:
    entries = parse_ibdev2netdev(real_output("ibdev2netdev", "rdma-notes-mixed-cx4lx-cx5-cx6-v-11.txt")).entries
    assert len(entries) == 8
    first = entries[0]
    assert (first.pci, first.device, first.hca_type, first.part_number) == (
        "0000:31:00.0",
        "mlx5_0",
        "MT4117",
        "MT2138K10121",
    )
    assert first.description == "CX4121A - ConnectX-4 LX SFP28"
    assert (first.fw_ver, first.port_state, first.netdev, first.state) == ("14.27.1016", "DOWN", "ens4f0", "Down")
    cx6 = entries[5]
    assert cx6.description == (
        "ConnectX-6 VPI adapter card, HDR IB (200Gb/s) and 200GbE, single-port QSFP56, Socket Direct"
    )
    assert (cx6.pci, cx6.fw_ver, cx6.port_state, cx6.netdev) == ("0000:b1:00.0", "20.30.1004", "ACTIVE", "ib0")
    vf = entries[6]
    assert (vf.pci, vf.hca_type, vf.part_number, vf.description) == ("0000:4b:00.1", "MT4120", None, None)


def test_ibdev2netdev_verbose_vfs_have_no_description_and_padded_port_state() -> None:
    entries = parse_ibdev2netdev(real_output("ibdev2netdev", "sriov-cni-vf-setup-v-10.txt")).entries
    assert [(e.pci, e.device, e.netdev) for e in entries][:3] == [
        ("0000:02:00.0", "mlx5_0", "enp2s0f0"),
        ("0000:02:00.1", "mlx5_1", "enp2s0f1"),
        ("0000:02:00.5", "mlx5_2", "enp2s0f2"),
    ]
    assert entries[0].description == "CX456A - ConnectX-4 QSFP" and entries[0].fw_ver == "12.23.1020"
    assert [e.port_state for e in entries] == ["ACTIVE", "ACTIVE", "DOWN", "DOWN", "DOWN", "DOWN"]
    assert all(e.hca_type == "MT4116" and e.description is None for e in entries[2:])


def test_ibdev2netdev_old_mlx4_verbose_form_without_pci_address() -> None:
    entries = parse_ibdev2netdev(real_output("ibdev2netdev", "ib-notes-mlx4-qdr-v-13.txt")).entries
    plain, verbose = entries
    assert (plain.device, plain.netdev, plain.pci) == ("mlx4_0", "ib0", None)
    assert (verbose.hca_type, verbose.part_number, verbose.description) == ("mt26428", "MT1037X01146", "KESTREL QDR")
    assert (verbose.fw_ver, verbose.port_state, verbose.state) == ("2.9.1000", "ACTIVE", "Up")


def test_ibdev2netdev_verbose_part_numbers_may_contain_dashes() -> None:
    line = (
        "0000:0d:00.0 mlx5_0 (MT41692 - 900-9D3B4-00EN-EA0) BlueField-3 E-series SuperNIC 400GbE/NDR single port"
        " QSFP112, PCIe Gen5.0 x16 FHHL, Crypto Enabled, 16GB DDR5, BMC, Tall Bracket         fw 32.41.1000"
        " port 1 (ACTIVE) ==> ens1f0np0 (Up)\n"
    )
    entry = parse_ibdev2netdev(line).entries[0]
    assert (entry.hca_type, entry.part_number, entry.fw_ver) == ("MT41692", "900-9D3B4-00EN-EA0", "32.41.1000")
    assert entry.description is not None and entry.description.endswith("Tall Bracket")


# --------------------------------------------------------------------------------------------- ibv_devices


def test_ibv_devices_reads_names_and_guids_with_tabs() -> None:
    parsed = parse_ibv_devices(real_output("ibv_devices", "rdma-tools-note-cx4lx-3.txt"))
    assert [(d.device, d.node_guid) for d in parsed.devices] == [
        ("mlx5_0", "0c42a103004029a0"),
        ("mlx5_1", "0c42a103004029a1"),
        ("mlx5_2", "0c42a10300753272"),
        ("mlx5_3", "0c42a10300753273"),
    ]


def test_ibv_devices_single_azure_vf() -> None:
    parsed = parse_ibv_devices(real_output("ibv_devices", "azure-hbv3-4.txt"))
    assert parsed.names() == ["mlx5_ib0"]
    assert parsed.devices[0].node_guid == "00155dfffe33ff56"


def test_ibv_devices_keeps_unsorted_vf_list_and_ignores_the_elision() -> None:
    parsed = parse_ibv_devices(real_output("ibv_devices", "k8s-sriov-cx5-vfs-1.txt"))
    assert len(parsed.devices) == 14
    assert parsed.names()[:3] == ["mlx5_1", "mlx5_65", "mlx5_37"]
    assert parsed.devices[-1].device == "mlx5_111" and parsed.devices[-1].node_guid == "1ac437fffebe9dc2"


def test_ibv_devices_with_no_device_is_an_empty_list() -> None:
    assert (
        parse_ibv_devices("    device                 node GUID\n    ------              ----------------\n").devices
        == []
    )


# --------------------------------------------------------------------------------------------- ibv_devinfo


@pytest.mark.parametrize("path", real_outputs("ibv_devinfo"), ids=lambda p: p.name)
def test_every_ibv_devinfo_sample_names_its_devices(path: Path) -> None:
    devices = parse_ibv_devinfo(path.read_text()).devices
    assert devices and all(d.hca_id for d in devices)


def test_ibv_devinfo_reads_device_and_roce_port_with_mtu_codes_stripped() -> None:
    device = parse_ibv_devinfo(real_output("ibv_devinfo", "k8s-sriov-cx5-1.txt")).devices[0]
    assert (device.hca_id, device.transport, device.fw_ver) == ("mlx5_0", "InfiniBand", "16.23.1020")
    assert (device.node_guid, device.vendor_id, device.vendor_part_id) == ("506b:4b03:0028:4ddc", "0x02c9", 4119)
    assert (device.board_id, device.phys_port_cnt) == ("MT_0000000011", 1)
    port = device.port(1)
    assert port is not None
    assert (port.state, port.state_code, port.max_mtu, port.active_mtu) == ("PORT_ACTIVE", 4, 4096, 1024)
    assert (port.link_layer, port.sm_lid, port.port_lid, port.port_lmc) == ("Ethernet", 0, 0, "0x00")


def test_ibv_devinfo_accepts_a_tab_after_port() -> None:
    device = parse_ibv_devinfo(real_output("ibv_devinfo", "k8s-hca-cx5-2.txt")).devices[0]
    assert device.node_guid == "506b:4b03:0028:4df4"
    assert [(p.port, p.state, p.active_mtu) for p in device.ports] == [(1, "PORT_ACTIVE", 1024)]


def test_ibv_devinfo_raw_tabs_four_devices_with_one_port_down() -> None:
    parsed = parse_ibv_devinfo(real_output("ibv_devinfo", "rdma-tools-note-cx4lx-4dev-3.txt"))
    assert [d.hca_id for d in parsed.devices] == ["mlx5_0", "mlx5_1", "mlx5_2", "mlx5_3"]
    assert [d.fw_ver for d in parsed.devices] == ["14.28.2006", "14.28.2006", "14.32.1010", "14.32.1010"]
    assert [d.ports[0].state for d in parsed.devices] == ["PORT_ACTIVE", "PORT_DOWN", "PORT_ACTIVE", "PORT_ACTIVE"]
    mlx5_1 = parsed.get("mlx5_1")
    assert mlx5_1 is not None and mlx5_1.sys_image_guid == "0c42:a103:0040:29a0" and mlx5_1.vendor_part_id == 4117


def test_ibv_devinfo_infiniband_vf_has_lids() -> None:
    device = parse_ibv_devinfo(real_output("ibv_devinfo", "azure-hbv3-cx6vf-5.txt")).devices[0]
    assert (device.hca_id, device.vendor_part_id, device.fw_ver) == ("mlx5_ib0", 4124, "20.31.1014")
    port = device.ports[0]
    assert (port.link_layer, port.sm_lid, port.port_lid, port.active_mtu) == ("InfiniBand", 549, 958, 4096)


def test_ibv_devinfo_verbose_reads_port_speed_state_and_typed_gids() -> None:
    device = parse_ibv_devinfo(real_output("ibv_devinfo", "versity-blog-cx6-v-full-9.txt")).devices[0]
    assert (device.vendor_part_id, device.fw_ver, device.board_id) == (4123, "20.24.4702", "MT_0000000225")
    assert device.extra["max_qp"] == "262144" and device.extra["num_comp_vectors"] == "32"
    port = device.ports[0]
    assert (port.active_width, port.active_speed, port.active_speed_gbps) == ("4X", "25.0 Gbps", 25.0)
    assert (port.phys_state, port.gid_tbl_len, port.extra["max_msg_sz"]) == ("LINK_UP", 256, "0x40000000")
    assert [(g.index, g.gid, g.gid_type) for g in port.gids] == [
        (0, "fe80:0000:0000:0000:ba59:9fff:fe37:8268", "RoCE v1"),
        (1, "fe80::ba59:9fff:fe37:8268", "RoCE v2"),
        (2, "0000:0000:0000:0000:0000:ffff:c0a8:010b", "RoCE v1"),
        (3, "::ffff:192.168.1.11", "RoCE v2"),
    ]


def test_ibv_devinfo_verbose_mofed4_reads_disabled_port_and_untyped_gids() -> None:
    device = parse_ibv_devinfo(real_output("ibv_devinfo", "rdma-notes-v-mofed4-cx4lx-6.txt")).devices[0]
    assert (device.hca_id, device.fw_ver, device.vendor_part_id) == ("mlx5_0", "14.27.1016", 4117)
    port = device.ports[0]
    assert (port.state, port.phys_state, port.active_speed_gbps) == ("PORT_DOWN", "DISABLED", 10.0)
    assert [(g.index, g.gid_type) for g in port.gids] == [(0, None), (1, None)]


def test_ibv_devinfo_list_form_gives_names_only() -> None:
    parsed = parse_ibv_devinfo(real_output("ibv_devinfo", "versity-blog-cx6-v-list-8.txt"))
    assert [d.hca_id for d in parsed.devices] == ["mlx5_0", "mlx5_1", "irdma0", "irdma1"]
    assert all(d.ports == [] and d.fw_ver is None for d in parsed.devices)


def test_ibv_devinfo_no_devices_found_is_an_empty_result() -> None:
    assert parse_ibv_devinfo("No IB devices found\n").devices == []


# --------------------------------------------------------------------------------------------- ibstat


@pytest.mark.parametrize("path", real_outputs("ibstat"), ids=lambda p: p.name)
def test_every_ibstat_sample_has_ports_with_states(path: Path) -> None:
    cas = parse_ibstat(path.read_text()).cas
    assert cas and all(ca.ports for ca in cas)
    assert all(p.state in {"Active", "Down", "Polling", "Initializing"} for ca in cas for p in ca.ports)


def test_ibstat_roce_port_reads_rate_and_ethernet_link_layer() -> None:
    ca = parse_ibstat(real_output("ibstat", "k8s-sriov-cx5-1.txt")).cas[0]
    assert (ca.name, ca.ca_type, ca.number_of_ports, ca.firmware_version) == ("mlx5_0", "MT4119", 1, "16.23.1020")
    assert (ca.hardware_version, ca.node_guid) == ("0", "0x506b4b0300284ddc")
    port = ca.ports[0]
    assert (port.port, port.state, port.physical_state, port.rate) == (1, "Active", "LinkUp", 100)
    assert (port.base_lid, port.sm_lid, port.link_layer, port.port_guid) == (0, 0, "Ethernet", "0x0000000000000000")


def test_ibstat_raw_tabs_cx4lx_rate_25() -> None:
    ca = parse_ibstat(real_output("ibstat", "mvapich-rocev2-blog-cx4lx-4.txt")).cas[0]
    assert (ca.ca_type, ca.firmware_version) == ("MT4117", "14.23.1020")
    assert (ca.ports[0].rate, ca.ports[0].port_guid) == (25, "0xee0d9afffe9e9fae")


def test_ibstat_infiniband_ports_read_lids_and_rates() -> None:
    azure = parse_ibstat(real_output("ibstat", "azure-hbv3-cx6vf-hdr-6.txt")).cas[0]
    assert (azure.name, azure.ports[0].rate, azure.ports[0].base_lid, azure.ports[0].sm_lid) == (
        "mlx5_ib0",
        200,
        958,
        549,
    )
    kaust = parse_ibstat(real_output("ibstat", "kaust-ibex-cx6-hdr100-5.txt")).cas[0]
    assert (kaust.name, kaust.firmware_version, kaust.ports[0].rate, kaust.ports[0].base_lid) == (
        "mlx5_0",
        "20.35.1012",
        100,
        762,
    )
    assert kaust.ports[0].capability_mask == "0xa651e848"


def test_ibstat_renamed_ib_device_without_cable() -> None:
    ca = parse_ibstat(real_output("ibstat", "ib-link-testing-doc-1.txt")).cas[0]
    assert (ca.name, ca.ca_type, ca.firmware_version) == ("ibp3s0", "MT4115", "12.28.2040")
    assert (ca.ports[0].state, ca.ports[0].physical_state, ca.ports[0].base_lid) == ("Down", "Disabled", 65535)


def test_ibstat_port_blocks_without_ca_header_are_kept_under_an_unnamed_ca() -> None:
    parsed = parse_ibstat(real_output("ibstat", "ib-link-testing-doc-2-partial.txt"))
    (ca,) = parsed.cas
    assert ca.name is None
    assert [(p.state, p.physical_state, p.rate) for p in ca.ports] == [
        ("Down", "Polling", 10),
        ("Initializing", "LinkUp", 100),
        ("Active", "LinkUp", 100),
    ]
    assert ca.ports[2].sm_lid == 1 and ca.ports[2].base_lid == 1


def test_ibstat_tmux_pane_border_and_two_ports() -> None:
    ca = parse_ibstat(real_output("ibstat", "teaker-cx3-2port-tmux-border-7.txt")).get("mlx4_0")
    assert ca is not None and (ca.ca_type, ca.number_of_ports, ca.firmware_version) == ("MT4099", 2, "2.42.5000")
    assert [(p.port, p.state, p.rate, p.link_layer) for p in ca.ports] == [
        (1, "Active", 40, "InfiniBand"),
        (2, "Down", 10, "Ethernet"),
    ]
    assert ca.system_image_guid == "0xf45214030091ba13"


def test_ibstat_fractional_sdr_rate_is_kept() -> None:
    ca = parse_ibstat("CA 'mthca0'\n\tCA type: MT25204\n\tPort 1:\n\t\tState: Active\n\t\tRate: 2.5\n").cas[0]
    assert ca.ports[0].rate == 2.5


# --------------------------------------------------------------------------------------------- refusals

_FOREIGN = [
    ("ib_write_bw", "perftest-issue273-1.txt"),
    ("lsmod", "moc-inbox-mlx-4.txt"),
    ("mlnx_qos", "tcp-ecn-note-pcp-1.txt"),
    ("ethtool_i", "lg-cmc-cx7-mofed2310-9.txt"),
]


@pytest.mark.parametrize(
    "parser", [parse_rdma_link, parse_ibdev2netdev, parse_ibv_devices, parse_ibv_devinfo, parse_ibstat]
)
@pytest.mark.parametrize(("tool", "name"), _FOREIGN)
def test_rdma_parsers_refuse_other_tools_output(parser: Callable[[str], Parsed], tool: str, name: str) -> None:
    with pytest.raises(ParseError):
        parser(real_output(tool, name))


@pytest.mark.parametrize(
    "parser", [parse_rdma_link, parse_ibdev2netdev, parse_ibv_devices, parse_ibv_devinfo, parse_ibstat]
)
def test_rdma_parsers_refuse_empty_input(parser: Callable[[str], Parsed]) -> None:
    with pytest.raises(ParseError, match="empty"):
        parser("  \n")


def test_rdma_parsers_cross_refuse_each_other() -> None:
    with pytest.raises(ParseError):
        parse_rdma_link(real_output("ibdev2netdev", "k8s-operator-notes-2.txt"))
    with pytest.raises(ParseError):
        parse_ibdev2netdev(real_output("rdma_link", "3fs-pr283-1.txt"))
    with pytest.raises(ParseError):
        parse_ibv_devinfo(real_output("ibstat", "k8s-sriov-cx5-1.txt"))
    with pytest.raises(ParseError):
        parse_ibstat(real_output("ibv_devinfo", "k8s-sriov-cx5-1.txt"))
    with pytest.raises(ParseError):
        parse_ibv_devices(real_output("ibv_devinfo", "azure-hbv3-cx6vf-5.txt"))
