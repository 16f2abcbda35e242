"""Specification of the GID-table parsers (show_gids, sysfs) and of cma_roce_mode."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.fixture_files import real_output, real_outputs
from wizard.parsers.common import ParseError
from wizard.parsers.rdma import parse_cma_roce_mode, parse_show_gids, parse_sysfs_gids

# --------------------------------------------------------------------------------------------- show_gids


@pytest.mark.parametrize("path", real_outputs("show_gids"), ids=lambda p: p.name)
def test_every_show_gids_sample_parses_with_versions(path: Path) -> None:
    entries = parse_show_gids(path.read_text()).entries
    assert all(e.version in ("v1", "v2") and e.port == 1 for e in entries)


def test_show_gids_raw_tabs_bond_finds_the_roce_v2_ipv4_index() -> None:
    table = parse_show_gids(real_output("show_gids", "rdma-tools-note-bond-tabs-3.txt"))
    assert [(e.index, e.version, e.ipv4, e.netdev) for e in table.entries] == [
        (0, "v1", None, "bond0"),
        (1, "v2", None, "bond0"),
        (2, "v1", "10.96.83.26", "bond0"),
        (3, "v2", "10.96.83.26", "bond0"),
    ]
    (v2,) = table.roce_v2_ipv4("mlx5_bond_0")
    assert (v2.index, v2.gid) == (3, "0000:0000:0000:0000:0000:ffff:0a60:531a")


def test_show_gids_ports_without_ipv4_have_no_roce_v2_ipv4_gid() -> None:
    table = parse_show_gids(real_output("show_gids", "rdma-tools-note-cx4lx-4port-5.txt"))
    assert len(table.entries) == 12
    assert [e.index for e in table.roce_v2_ipv4("mlx5_0")] == [3]
    assert table.roce_v2_ipv4("mlx5_0")[0].ipv4 == "10.108.164.36"
    assert table.roce_v2_ipv4("mlx5_1") == [] and table.roce_v2_ipv4("mlx5_3") == []
    assert table.roce_v2_ipv4("mlx5_2")[0].ipv4 == "192.20.28.1"
    assert [e.netdev for e in table.for_port("mlx5_1")] == ["eth02", "eth02"]


def test_show_gids_space_columns_with_shifted_version_and_empty_dev_cell() -> None:
    table = parse_show_gids(real_output("show_gids", "tcp-ecn-note-1.txt"))
    assert len(table.entries) == 19
    mlx5_3 = table.roce_v2_ipv4("mlx5_3")
    assert [(e.index, e.ipv4, e.netdev) for e in mlx5_3] == [(3, "192.168.242.56", "ens14f0")]
    assert table.roce_v2_ipv4("mlx5_2")[0].ipv4 == "172.17.242.56"
    (ib,) = table.for_port("mlx5_5")
    assert (ib.index, ib.version, ib.netdev, ib.gid) == (0, "v1", None, "fe80:0000:0000:0000:08c0:eb03:00b6:a0b4")


def test_show_gids_one_ip_on_two_netdevs_gives_two_v2_gids() -> None:
    table = parse_show_gids(real_output("show_gids", "ucx-pr9484-bond-1.txt"))
    assert [(e.index, e.netdev) for e in table.roce_v2_ipv4("mlx5_bond_0")] == [
        (3, "b3.vxlan.30100"),
        (5, "bond1"),
    ]
    assert {e.ipv4 for e in table.roce_v2_ipv4("mlx5_bond_0")} == {"30.153.10.175"}


def test_show_gids_empty_table_in_a_pod_parses_to_no_entries() -> None:
    assert parse_show_gids(real_output("show_gids", "k8s-rdma-sriov-issue30-empty-1.txt")).entries == []


# --------------------------------------------------------------------------------------------- sysfs GIDs

_SYSFS = "/sys/class/infiniband"
# What `grep -sH . .../gids/* .../gid_attrs/types/* .../gid_attrs/ndevs/*` prints on a host with two RoCE
# ports and one IB port: every gids/N (zeros included), types/ndevs only for populated GIDs. mlx5_0 lost an
# address (indexes 4-5 are empty again) and got another at 6-7; mlx5_2 is InfiniBand (no ndev).
_GREP_SH = "\n".join(
    [
        f"{_SYSFS}/mlx5_0/ports/1/gids/0:fe80:0000:0000:0000:0e42:a1ff:fe40:29a0",
        f"{_SYSFS}/mlx5_0/ports/1/gids/1:fe80:0000:0000:0000:0e42:a1ff:fe40:29a0",
        f"{_SYSFS}/mlx5_0/ports/1/gids/2:0000:0000:0000:0000:0000:ffff:c0a8:0b01",
        f"{_SYSFS}/mlx5_0/ports/1/gids/3:0000:0000:0000:0000:0000:ffff:c0a8:0b01",
        f"{_SYSFS}/mlx5_0/ports/1/gids/4:0000:0000:0000:0000:0000:0000:0000:0000",
        f"{_SYSFS}/mlx5_0/ports/1/gids/5:0000:0000:0000:0000:0000:0000:0000:0000",
        f"{_SYSFS}/mlx5_0/ports/1/gids/6:0000:0000:0000:0000:0000:ffff:0a0a:0001",
        f"{_SYSFS}/mlx5_0/ports/1/gids/7:0000:0000:0000:0000:0000:ffff:0a0a:0001",
        f"{_SYSFS}/mlx5_0/ports/1/gids/8:0000:0000:0000:0000:0000:0000:0000:0000",
        f"{_SYSFS}/mlx5_1/ports/1/gids/0:fe80:0000:0000:0000:0e42:a1ff:fe40:29a1",
        f"{_SYSFS}/mlx5_1/ports/1/gids/1:fe80:0000:0000:0000:0e42:a1ff:fe40:29a1",
        f"{_SYSFS}/mlx5_1/ports/1/gids/2:0000:0000:0000:0000:0000:0000:0000:0000",
        f"{_SYSFS}/mlx5_2/ports/1/gids/0:fe80:0000:0000:0000:0c42:a103:0075:3272",
        f"{_SYSFS}/mlx5_2/ports/1/gids/1:0000:0000:0000:0000:0000:0000:0000:0000",
        f"{_SYSFS}/mlx5_0/ports/1/gid_attrs/types/0:IB/RoCE v1",
        f"{_SYSFS}/mlx5_0/ports/1/gid_attrs/types/1:RoCE v2",
        f"{_SYSFS}/mlx5_0/ports/1/gid_attrs/types/2:IB/RoCE v1",
        f"{_SYSFS}/mlx5_0/ports/1/gid_attrs/types/3:RoCE v2",
        f"{_SYSFS}/mlx5_0/ports/1/gid_attrs/types/6:IB/RoCE v1",
        f"{_SYSFS}/mlx5_0/ports/1/gid_attrs/types/7:RoCE v2",
        f"{_SYSFS}/mlx5_1/ports/1/gid_attrs/types/0:IB/RoCE v1",
        f"{_SYSFS}/mlx5_1/ports/1/gid_attrs/types/1:RoCE v2",
        f"{_SYSFS}/mlx5_2/ports/1/gid_attrs/types/0:IB/RoCE v1",
        f"{_SYSFS}/mlx5_0/ports/1/gid_attrs/ndevs/0:ens1f0np0",
        f"{_SYSFS}/mlx5_0/ports/1/gid_attrs/ndevs/1:ens1f0np0",
        f"{_SYSFS}/mlx5_0/ports/1/gid_attrs/ndevs/2:ens1f0np0",
        f"{_SYSFS}/mlx5_0/ports/1/gid_attrs/ndevs/3:ens1f0np0",
        f"{_SYSFS}/mlx5_0/ports/1/gid_attrs/ndevs/6:ens1f0np0",
        f"{_SYSFS}/mlx5_0/ports/1/gid_attrs/ndevs/7:ens1f0np0",
        f"{_SYSFS}/mlx5_1/ports/1/gid_attrs/ndevs/0:ens1f1np1",
        f"{_SYSFS}/mlx5_1/ports/1/gid_attrs/ndevs/1:ens1f1np1",
        "",
    ]
)


def test_sysfs_grep_joins_gid_type_and_ndev_by_device_port_and_index() -> None:
    table = parse_sysfs_gids(_GREP_SH)
    assert [(e.device, e.index) for e in table.entries] == [
        ("mlx5_0", 0),
        ("mlx5_0", 1),
        ("mlx5_0", 2),
        ("mlx5_0", 3),
        ("mlx5_0", 6),
        ("mlx5_0", 7),
        ("mlx5_1", 0),
        ("mlx5_1", 1),
        ("mlx5_2", 0),
    ]
    third = table.entries[3]
    assert (third.port, third.gid, third.ipv4) == (1, "0000:0000:0000:0000:0000:ffff:c0a8:0b01", "192.168.11.1")
    assert (third.version, third.netdev) == ("v2", "ens1f0np0")


def test_sysfs_roce_v2_ipv4_indexes_are_discovered_not_assumed() -> None:
    table = parse_sysfs_gids(_GREP_SH)
    assert [(e.index, e.ipv4) for e in table.roce_v2_ipv4("mlx5_0")] == [(3, "192.168.11.1"), (7, "10.10.0.1")]
    assert table.roce_v2_ipv4("mlx5_1") == []
    assert table.roce_v2_ipv4("mlx5_0", port=2) == []


def test_sysfs_infiniband_gid_has_no_netdev() -> None:
    (ib,) = parse_sysfs_gids(_GREP_SH).for_port("mlx5_2")
    assert (ib.index, ib.version, ib.netdev, ib.ipv4) == (0, "v1", None, None)


def test_sysfs_grep_accepts_crlf_and_a_prompt_line() -> None:
    text = "root@h:~# grep -sH . /sys/class/infiniband/*/ports/*/gids/*\r\n" + _GREP_SH.replace("\n", "\r\n")
    assert [e.index for e in parse_sysfs_gids(text).roce_v2_ipv4("mlx5_0")] == [3, 7]


def test_sysfs_gid_index_loop_format_reads_gid_type_and_netdev() -> None:
    table = parse_sysfs_gids(real_output("sysfs_gids", "ocp-bond1-gid-index-loop-2.txt"))
    assert [(e.index, e.gid, e.version, e.netdev) for e in table.entries] == [
        (0, "fe80:0000:0000:0000:3eec:efff:fe5c:5830", "v1", "bond1"),
        (1, "fe80:0000:0000:0000:3eec:efff:fe5c:5830", "v2", "bond1"),
    ]
    assert table.entries[0].device is None and table.entries[0].port is None


def test_sysfs_gid_types_loop_reads_versions_only() -> None:
    table = parse_sysfs_gids(real_output("sysfs_gids", "ocp-bond1-gid-types-loop-1.txt"))
    assert [(e.index, e.version, e.gid) for e in table.entries] == [(0, "v1", None), (1, "v2", None)]


@pytest.mark.parametrize("path", real_outputs("sysfs_gids"), ids=lambda p: p.name)
def test_every_sysfs_gid_sample_parses(path: Path) -> None:
    entries = parse_sysfs_gids(path.read_text()).entries
    # Two used slots per port in every sample: the link-local GID and the IPv4 one (zero GIDs are left out).
    ports = {(e.device, e.port) for e in entries}
    assert len(entries) == 2 * len(ports) and all(e.version for e in entries)


def test_sysfs_listing_of_only_zero_gids_is_an_empty_table() -> None:
    text = f"{_SYSFS}/mlx5_0/ports/1/gids/0:0000:0000:0000:0000:0000:0000:0000:0000\n"
    assert parse_sysfs_gids(text).entries == []


@pytest.mark.parametrize(
    ("tool", "name"),
    [("ip_link", "ocp-bond1-ovs-master-4.txt"), ("rdma_link", "3fs-pr283-1.txt"), ("lspci", "3fs-pr283-1.txt")],
)
def test_gid_parsers_refuse_other_tools_output(tool: str, name: str) -> None:
    with pytest.raises(ParseError):
        parse_sysfs_gids(real_output(tool, name))
    with pytest.raises(ParseError):
        parse_show_gids(real_output(tool, name))


# --------------------------------------------------------------------------------------------- cma_roce_mode


def test_cma_roce_mode_two_queries_without_port_use_the_tool_defaults() -> None:
    parsed = parse_cma_roce_mode(real_output("cma_roce_mode", "lossless-roce-notes-no-port-3.txt"))
    assert (parsed.mode, parsed.version) == ("RoCE v2", "v2")
    assert [(e.device, e.port, e.mode) for e in parsed.entries] == [("mlx5_0", 1, "RoCE v2"), ("mlx5_1", 1, "RoCE v2")]


def test_cma_roce_mode_attributes_a_lone_answer_to_the_last_command() -> None:
    parsed = parse_cma_roce_mode(real_output("cma_roce_mode", "rocev2-notes-2.txt"))
    assert [(e.device, e.port, e.mode) for e in parsed.entries] == [("mlx5_1", 1, "RoCE v2")]


def test_cma_roce_mode_bare_outputs() -> None:
    assert parse_cma_roce_mode("RoCE v2\n").entries[0].device is None
    v1 = parse_cma_roce_mode("IB/RoCE v1\n")
    assert (v1.mode, v1.version) == ("IB/RoCE v1", "v1")


@pytest.mark.parametrize(
    "text",
    ["You must be root to run this\n", "Device mlx5_0 port 2 does not exist\n", "", "mlx5_0 port 1 ==> eth0 (Up)\n"],
)
def test_cma_roce_mode_errors_and_foreign_text_are_refused(text: str) -> None:
    with pytest.raises(ParseError):
        parse_cma_roce_mode(text)


def test_empty_slots_are_dropped_with_any_attribute_printed_for_them_and_the_rest_kept() -> None:
    zero = ":".join(["0000"] * 8)
    text = (
        f"{_SYSFS}/mlx5_0/ports/1/gids/0:fe80:0000:0000:0000:0e42:a1ff:fe00:0002\n"
        f"{_SYSFS}/mlx5_0/ports/1/gids/1:{zero}\n"
        f"{_SYSFS}/mlx5_0/ports/1/gid_attrs/types/0:IB/RoCE v1\n"
        f"{_SYSFS}/mlx5_0/ports/1/gid_attrs/types/1:RoCE v2\n"  # a kernel that printed a type for an empty slot
        f"{_SYSFS}/mlx5_1/ports/1/gids/1:{zero}\n"
        f"gids/7:{zero}\n"
    )
    table = parse_sysfs_gids(text)
    assert [(e.device, e.port, e.index, e.version) for e in table.entries] == [("mlx5_0", 1, 0, "v1")]
