"""Specification of the host-fact parsers: lspci, lsmod, ofed_info, os-release and dpkg-query."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.fixture_files import real_output, real_outputs
from wizard.parsers.common import ParseError
from wizard.parsers.system import (
    parse_dpkg_query,
    parse_lsmod,
    parse_lspci,
    parse_ofed_info,
    parse_os_release,
)

# --------------------------------------------------------------------------------------------- lspci


@pytest.mark.parametrize("path", real_outputs("lspci"), ids=lambda p: p.name)
def test_every_lspci_sample_lists_mellanox_controllers(path: Path) -> None:
    devices = parse_lspci(path.read_text()).devices
    assert devices and all(d.class_name in ("Ethernet controller", "Infiniband controller") for d in devices)
    assert all((d.description or "").startswith("Mellanox Technologies MT") for d in devices)


def test_lspci_grep_paste_reads_addresses_class_and_description() -> None:
    devices = parse_lspci(real_output("lspci", "3fs-pr283-1.txt")).devices
    assert [(d.address, d.class_name, d.description) for d in devices] == [
        ("86:00.0", "Ethernet controller", "Mellanox Technologies MT2892 Family [ConnectX-6 Dx]"),
        ("86:00.1", "Ethernet controller", "Mellanox Technologies MT2892 Family [ConnectX-6 Dx]"),
    ]
    assert devices[0].vendor_id is None and devices[0].class_id is None


def test_lspci_keeps_the_pci_domain_when_printed() -> None:
    devices = parse_lspci(real_output("lspci", "nv-peer-memory-issue79-cx5-domain-3.txt")).devices
    assert [d.address for d in devices] == ["0000:b3:00.0", "0000:b3:00.1"]


def test_lspci_vpi_card_with_one_port_in_ethernet_mode() -> None:
    parsed = parse_lspci(real_output("lspci", "brev-node1-cx6-ib-10plus-eth-9.txt"))
    assert len(parsed.devices) == 11
    assert [d.address for d in parsed.devices if d.class_name == "Ethernet controller"] == ["61:00.1"]
    assert len(parsed.matching("ConnectX-6")) == 11


def test_lspci_virtual_functions_are_listed_after_their_pfs() -> None:
    parsed = parse_lspci(real_output("lspci", "sriov-cni-vf-setup-cx4-vfs-8.txt"))
    assert [d.address for d in parsed.matching("Virtual Function")] == ["02:00.2", "02:00.3", "02:00.4", "02:00.5"]


@pytest.mark.parametrize(
    ("name", "address", "class_name", "model"),
    [
        ("kaust-ibex-cx6-ib-6.txt", "5e:00.0", "Infiniband controller", "MT28908 Family [ConnectX-6]"),
        ("nv-peer-memory-issue63-cx4-ib-4.txt", "5e:00.1", "Infiniband controller", "MT27700 Family [ConnectX-4]"),
    ],
)
def test_lspci_infiniband_mode_cards(name: str, address: str, class_name: str, model: str) -> None:
    device = parse_lspci(real_output("lspci", name)).devices[-1]
    assert (device.address, device.class_name, device.description) == (
        address,
        class_name,
        f"Mellanox Technologies {model}",
    )


_LSPCI_D_NN_K = """\
$ lspci -D -nn -k -d 15b3:
0000:3b:00.0 Ethernet controller [0200]: Mellanox Technologies MT2892 Family [ConnectX-6 Dx] [15b3:101d]
\tSubsystem: Mellanox Technologies Device [15b3:0016]
\tKernel driver in use: mlx5_core
\tKernel modules: mlx5_core
0000:3b:00.1 Ethernet controller [0200]: Mellanox Technologies MT2892 Family [ConnectX-6 Dx] [15b3:101d]
0000:af:00.0 Infiniband controller [0207]: Mellanox Technologies MT27700 Family [ConnectX-4] [15b3:1013] (rev 01)
0000:00:17.0 SATA controller [0106]: Intel Corporation C620 Series Chipset [8086:a182] (rev 09) (prog-if 01 [AHCI 1.0])
"""


def test_lspci_numeric_ids_class_codes_revision_and_driver() -> None:
    parsed = parse_lspci(_LSPCI_D_NN_K)
    first = parsed.devices[0]
    assert (first.address, first.class_id, first.vendor_id, first.device_id) == ("0000:3b:00.0", "0200", "15b3", "101d")
    assert first.description == "Mellanox Technologies MT2892 Family [ConnectX-6 Dx]"
    assert (first.kernel_driver, first.kernel_modules, first.revision) == ("mlx5_core", ["mlx5_core"], None)
    cx4 = parsed.devices[2]
    assert (cx4.class_name, cx4.class_id, cx4.device_id, cx4.revision) == (
        "Infiniband controller",
        "0207",
        "1013",
        "01",
    )
    sata = parsed.devices[3]
    assert (sata.vendor_id, sata.device_id, sata.revision) == ("8086", "a182", "09")
    assert [d.address for d in parsed.with_vendor("15B3")] == ["0000:3b:00.0", "0000:3b:00.1", "0000:af:00.0"]


def test_lspci_n_numeric_only() -> None:
    (device,) = parse_lspci("3b:00.0 0200: 15b3:1015\n").devices
    assert (device.address, device.class_id, device.vendor_id, device.device_id) == ("3b:00.0", "0200", "15b3", "1015")


# --------------------------------------------------------------------------------------------- lsmod


def test_lsmod_full_listing_reads_sizes_counts_and_users() -> None:
    mods = parse_lsmod(real_output("lsmod", "versity-blog-ubuntu2604-full-5.txt"))
    assert mods.names()[:3] == ["ib_iser", "libiscsi", "rpcrdma"]
    nf_nat = mods.get("nf_nat")
    assert nf_nat is not None and (nf_nat.size, nf_nat.used_by_count, nf_nat.used_by) == (
        65536,
        3,
        ["xt_nat", "nft_chain_nat", "xt_MASQUERADE"],
    )
    assert {"mlx5_ib", "mlx5_core", "ib_core", "ib_uverbs", "rdma_cm", "irdma"} <= set(mods.names())
    assert mods.get("nvidia_peermem") is None
    assert mods.get("intel_uncore_frequency_common") is not None  # the name that overflows the column


def test_lsmod_grep_of_mofed_modules() -> None:
    mods = parse_lsmod(real_output("lsmod", "azure-hbv3-mofed-ib-3.txt"))
    assert mods.names() == [
        "libcrc32c", "ib_ipoib", "ib_cm", "ib_umad", "mlx5_ib", "ib_uverbs", "ib_core", "mlx5_core", "mlx_compat",
    ]  # fmt: skip
    ib_core = mods.get("ib_core")
    assert ib_core is not None and ib_core.used_by_count == 8 and "mlx5_ib" in ib_core.used_by


def test_lsmod_inbox_driver_modules() -> None:
    mods = parse_lsmod(real_output("lsmod", "moc-inbox-mlx-4.txt"))
    core = mods.get("mlx5_core")
    assert core is not None and (core.size, core.used_by) == (2469888, ["mlx5_ib"])
    assert mods.get("ib-uverbs") is not None  # modprobe spells it with a dash


def test_lsmod_grep_that_printed_nothing_is_an_empty_list() -> None:
    assert parse_lsmod(real_output("lsmod", "nv-peer-memory-issue46-empty-2.txt")).modules == []


@pytest.mark.parametrize("path", real_outputs("lsmod"), ids=lambda p: p.name)
def test_every_lsmod_sample_parses(path: Path) -> None:
    mods = parse_lsmod(path.read_text())
    assert all(m.size > 0 for m in mods.modules)


def test_lsmod_permanent_and_unknown_users() -> None:
    mods = parse_lsmod(
        "Module                  Size  Used by\nnvidia_peermem         16384  0\nfoo 100 - [permanent]\n"
    )
    assert [(m.name, m.used_by_count, m.used_by) for m in mods.modules] == [
        ("nvidia_peermem", 0, []),
        ("foo", None, []),
    ]


# --------------------------------------------------------------------------------------------- ofed_info


@pytest.mark.parametrize(
    ("name", "stack", "version"),
    [
        ("azure-ndh200-mofed2310-5.txt", "MLNX_OFED", "23.10-1.1.9.0"),
        ("dgxos-exa-client-doca2410-7.txt", "DOCA", "24.10-1.1.4.0.200"),
        ("doca-host-setup-doca2404-6.txt", "DOCA", "24.04-0.6.6"),
        ("nv-peer-memory-issue43-head1-3.txt", "MLNX_OFED", "4.4-1.0.0.0"),
        ("nv-peer-memory-issue63-mofed4.7-2.txt", "MLNX_OFED", "4.7-1.0.0.1"),
        ("rdma-capture-notes-54-s-and-n-10.txt", "MLNX_OFED", "5.4-3.1.0.0"),
        ("rsocket-notes-cx3-mofed40-11.txt", "MLNX_OFED", "4.0-2.0.0.1"),
        ("trex-notes-doca2510-8.txt", "DOCA", "25.10-1.7.1"),
        ("lshca-issue102-doca-inbox2407-12.txt", "DOCA", "24.07-0.3.5.0.110"),
    ],
)
def test_ofed_info_reads_stack_and_version(name: str, stack: str, version: str) -> None:
    info = parse_ofed_info(real_output("ofed_info", name))
    assert (info.stack, info.version) == (stack, version)


def test_every_ofed_info_sample_is_covered_above() -> None:
    assert len(real_outputs("ofed_info")) == 9


@pytest.mark.parametrize(
    ("text", "stack", "version"),
    [
        ("MLNX_OFED_LINUX-23.10-1.1.9.0\n", "MLNX_OFED", "23.10-1.1.9.0"),
        ("MLNX_OFED_LINUX-23.10-1.1.9.0:  \r\n", "MLNX_OFED", "23.10-1.1.9.0"),
        ("OFED-internal-25.01-0.6.0\n", "DOCA", "25.01-0.6.0"),
        ("$ ofed_info -s\nOFED-internal-25.01-0.6.0:\n", "DOCA", "25.01-0.6.0"),
        ("MLNX_OFED_LINUX-4.4-1.0.0.0 (OFED-4.4-1.0.0)\n", "MLNX_OFED", "4.4-1.0.0.0"),
    ],
)
def test_ofed_info_heading_without_the_trailing_colon_is_read_the_same(text: str, stack: str, version: str) -> None:
    info = parse_ofed_info(text)
    assert (info.stack, info.version) == (stack, version)


def test_ofed_info_long_heading_keeps_the_base_ofed_version() -> None:
    info = parse_ofed_info(real_output("ofed_info", "nv-peer-memory-issue43-head1-3.txt"))
    assert info.base_version == "4.4-1.0.0"


def test_ofed_info_n_alone_gives_a_version_without_stack() -> None:
    info = parse_ofed_info("5.4-3.1.0.0\n")
    assert (info.version, info.stack) == ("5.4-3.1.0.0", None)


def test_ofed_info_full_listing_reads_installed_packages() -> None:
    text = (
        "MLNX_OFED_LINUX-5.1-2.5.8.0 (OFED-5.1-2.5.8):\nInstalled Packages:\n-------------------\n"
        "ii  ar-mgr        1.0-0.3.MLNX20200824.g8577618.51258     amd64        Adaptive Routing Manager\n"
        "ii  dpcp          1.1.0-1.51258                           amd64        Direct Packet Control Plane\n"
        "ii  libibverbs1:amd64  51mlnx1-1.51258                    amd64        verbs library\n"
    )
    info = parse_ofed_info(text)
    assert (info.stack, info.version, info.base_version) == ("MLNX_OFED", "5.1-2.5.8.0", "5.1-2.5.8")
    assert info.packages == {
        "ar-mgr": "1.0-0.3.MLNX20200824.g8577618.51258",
        "dpcp": "1.1.0-1.51258",
        "libibverbs1": "51mlnx1-1.51258",
    }


def test_ofed_info_rpm_listing_splits_name_and_version() -> None:
    text = "MLNX_OFED_LINUX-5.8-1.0.1.1 (OFED-5.8-1.0.1):\nInstalled Packages:\n-------------------\n"
    text += "mlnx-ofa_kernel-5.8-OFED.5.8.1.0.1.1.rhel8u6.x86_64\nlibibverbs-58mlnx43-1.58101.x86_64\n"
    assert parse_ofed_info(text).packages == {
        "mlnx-ofa_kernel": "5.8-OFED.5.8.1.0.1.1.rhel8u6",
        "libibverbs": "58mlnx43-1.58101",
    }


@pytest.mark.parametrize("text", ["", "bash: ofed_info: command not found\n", "mlx5_0 port 1 ==> eth0 (Up)\n"])
def test_ofed_info_refuses_missing_tool_and_foreign_text(text: str) -> None:
    with pytest.raises(ParseError):
        parse_ofed_info(text)


# --------------------------------------------------------------------------------------------- os-release

_UBUNTU_2204 = """\
PRETTY_NAME="Ubuntu 22.04.4 LTS"
NAME="Ubuntu"
VERSION_ID="22.04"
VERSION="22.04.4 LTS (Jammy Jellyfish)"
VERSION_CODENAME=jammy
ID=ubuntu
ID_LIKE=debian
HOME_URL="https://www.ubuntu.com/"
SUPPORT_URL="https://help.ubuntu.com/"
BUG_REPORT_URL="https://bugs.launchpad.net/ubuntu/"
PRIVACY_POLICY_URL="https://www.ubuntu.com/legal/terms-and-policies/privacy-policy"
UBUNTU_CODENAME=jammy
"""
_UBUNTU_2404 = """\
PRETTY_NAME="Ubuntu 24.04.1 LTS"
NAME="Ubuntu"
VERSION_ID="24.04"
VERSION="24.04.1 LTS (Noble Numbat)"
VERSION_CODENAME=noble
ID=ubuntu
ID_LIKE=debian
HOME_URL="https://www.ubuntu.com/"
UBUNTU_CODENAME=noble
LOGO=ubuntu-logo
"""
_DEBIAN_12 = """\
PRETTY_NAME="Debian GNU/Linux 12 (bookworm)"
NAME="Debian GNU/Linux"
VERSION_ID="12"
VERSION="12 (bookworm)"
VERSION_CODENAME=bookworm
ID=debian
HOME_URL="https://www.debian.org/"
"""


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        (_UBUNTU_2204, ("ubuntu", "22.04", "jammy", "Ubuntu 22.04.4 LTS", ["debian"])),
        (_UBUNTU_2404, ("ubuntu", "24.04", "noble", "Ubuntu 24.04.1 LTS", ["debian"])),
        (_DEBIAN_12, ("debian", "12", "bookworm", "Debian GNU/Linux 12 (bookworm)", [])),
    ],
)
def test_os_release_reads_id_version_and_codename(text: str, expected: tuple[object, ...]) -> None:
    rel = parse_os_release(text)
    assert (rel.id, rel.version_id, rel.version_codename, rel.pretty_name, rel.id_like) == expected
    assert rel.variant_id is None


def test_os_release_keeps_every_field_unquoted() -> None:
    rel = parse_os_release(_UBUNTU_2204)
    assert rel.fields["VERSION"] == "22.04.4 LTS (Jammy Jellyfish)" and rel.fields["UBUNTU_CODENAME"] == "jammy"


def test_os_release_single_quotes_comments_and_variant() -> None:
    rel = parse_os_release("# generated\nID='rhel'\nVERSION_ID='9.4'\nVARIANT_ID=server\nID_LIKE=\"fedora centos\"\n")
    assert (rel.id, rel.version_id, rel.variant_id, rel.id_like) == ("rhel", "9.4", "server", ["fedora", "centos"])


@pytest.mark.parametrize("text", ["", "cat: /etc/os-release: No such file or directory\n"])
def test_os_release_refuses_missing_file(text: str) -> None:
    with pytest.raises(ParseError):
        parse_os_release(text)


# --------------------------------------------------------------------------------------------- dpkg-query


def test_dpkg_query_reads_versions_and_bare_names_of_arch_qualified_packages() -> None:
    text = (
        "rdma-core\t50.0-2ubuntu0.2\nibverbs-utils\t50.0-2ubuntu0.2\nlibibverbs1:amd64\t50.0-2ubuntu0.2\n"
        "perftest\t24.01.0-0.38.gd185c9b.2404100\ndoca-ofed\t2.9.1-0.0.4\nlibc6:amd64\t2.39-0ubuntu8.3\n"
        "linux-image-6.8.0-45-generic\t6.8.0-45.45\n"
    )
    pkgs = parse_dpkg_query(text)
    assert pkgs.version("rdma-core") == "50.0-2ubuntu0.2" and pkgs.version("doca-ofed") == "2.9.1-0.0.4"
    assert pkgs.version("libibverbs1:amd64") == pkgs.version("libibverbs1") == "50.0-2ubuntu0.2"
    assert pkgs.version("libc6") == "2.39-0ubuntu8.3" and pkgs.version("linux-image-6.8.0-45-generic") == "6.8.0-45.45"
    assert pkgs.version("mlnx-ofed-kernel-dkms") is None


def test_dpkg_query_known_but_removed_packages_and_missing_ones() -> None:
    text = "$ dpkg-query -W ntp chrony mft\nchrony\t4.2-2ubuntu2\nntp\t\ndpkg-query: no packages found matching mft\n"
    pkgs = parse_dpkg_query(text)
    assert pkgs.packages == {"chrony": "4.2-2ubuntu2"} and pkgs.not_installed == ["ntp"]


def test_dpkg_query_expanded_tabs_and_epochs() -> None:
    pkgs = parse_dpkg_query("openssh-server    1:9.6p1-3ubuntu13.5\n")
    assert pkgs.packages == {"openssh-server": "1:9.6p1-3ubuntu13.5"}


def test_dpkg_query_nothing_installed_of_what_was_asked_is_empty_not_an_error() -> None:
    assert parse_dpkg_query("dpkg-query: no packages found matching doca-ofed\n").packages == {}


@pytest.mark.parametrize(
    ("tool", "name"),
    [
        ("bonding", "lacp-25g-kernel5.15-4.txt"),
        ("ibv_devinfo", "versity-blog-cx6-v-list-8.txt"),
        ("lsmod", "moc-inbox-mlx-4.txt"),
    ],
)
def test_system_parsers_refuse_other_tools_output(tool: str, name: str) -> None:
    text = real_output(tool, name)
    for parser in (parse_dpkg_query, parse_ofed_info, parse_os_release, parse_lspci):
        with pytest.raises(ParseError):
            parser(text)


def test_lsmod_refuses_lspci_output() -> None:
    with pytest.raises(ParseError):
        parse_lsmod(real_output("lspci", "3fs-pr283-1.txt"))
