"""lspci -vvv and mlxconfig/mstconfig query parsers on real outputs (tests/fixtures/real-outputs/SOURCES.md)."""

from __future__ import annotations

from pathlib import Path

import pytest

from wizard.parsers import ParseError
from wizard.parsers.mlxconfig import config_code, config_name, parse_mlxconfig_q
from wizard.parsers.pcie import parse_lspci_vvv

REAL = Path(__file__).resolve().parents[1] / "fixtures" / "real-outputs"


def real(tool: str, name: str) -> str:
    return (REAL / tool / name).read_text()


def test_switch_downstream_port_with_acs_redirect_is_found_in_a_pp_path_listing():
    listing = parse_lspci_vvv(real("lspci_vvv", "lkml-titan-ridge-switch-pp-1.txt"))
    port, gpu = listing.get("02:00.0"), listing.get("03:00.0")
    assert port is not None and gpu is not None
    assert port.path == ["00:01.0", "01:00.0", "02:00.0"] and port.is_bridge
    assert port.port_type == "Downstream Port" and port.acs_redirect
    assert port.acs_ctl["ReqRedir"] and port.acs_ctl["CmpltRedir"] and not port.acs_ctl["EgressCtrl"]
    assert (gpu.vendor_id, gpu.device_id, gpu.port_type) == ("1002", "7340", "Legacy Endpoint")
    assert not gpu.acs_redirect and gpu.iommu_group == 1 and not gpu.downgraded


def test_root_port_link_status_below_capability_is_a_downgrade():
    port = parse_lspci_vvv(real("lspci_vvv", "lkml-cometlake-rootport-1.txt")).devices[0]
    assert port.port_type == "Root Port" and port.driver == "pcieport" and port.iommu_group == 6
    assert (port.link_cap.speed_gts, port.link_cap.width) == (5.0, 1)
    assert (port.link_sta.speed_gts, port.link_sta.width) == (2.5, 1)
    assert port.downgraded and port.acs_redirect


def test_connectx_block_with_a_truncated_tail_keeps_its_capability():
    dev = parse_lspci_vvv(real("lspci_vvv", "l2fwd-nv-issue6-cx6dx-1.txt")).devices[0]
    assert dev.address == "b3:00.0" and "ConnectX-6 Dx" in dev.description and dev.port_type == "Endpoint"
    assert (dev.link_cap.speed_gts, dev.link_cap.width) == (16.0, 16) and dev.link_sta is None
    assert not dev.downgraded


def test_lspci_without_root_reports_capabilities_denied():
    text = "0000:3b:00.0 Ethernet controller: Mellanox Technologies MT27710 Family [ConnectX-4 Lx]\n" \
        "\tCapabilities: <access denied>\n\tKernel driver in use: mlx5_core\n"  # fmt: skip
    dev = parse_lspci_vvv("$ lspci -vvv -s 3b:00.0\r\n" + text.replace("\n", "\r\n")).devices[0]
    assert dev.caps_denied and dev.link_cap is None and dev.driver == "mlx5_core"


@pytest.mark.parametrize("text", ["", "   \n", "mlx5_0 port 1 ==> ens1f0np0 (Up)\n"])
def test_lspci_vvv_refuses_text_that_is_not_lspci(text):
    with pytest.raises(ParseError):
        parse_lspci_vvv(text)


def test_mstconfig_query_of_an_ethernet_only_card_has_no_link_type():
    dev = parse_mlxconfig_q(real("mlxconfig", "mstconfig-roce-disable-note-cx6dx-1.txt")).devices[0]
    assert (dev.device_type, dev.device, dev.columns) == ("ConnectX6DX", "4b:00.0", ["Next Boot"])
    assert dev.value("SRIOV_EN") == "False(0)" and dev.value("NUM_OF_VFS") == "0"
    assert dev.value("ADVANCED_PCI_SETTINGS") == "False(0)" and dev.value("LINK_TYPE_P1") is None
    assert dev.value("PCI_ATOMIC_MODE") == "PCI_ATOMIC_DISABLED_EXT_ATOMIC_ENABLED(0)"


def test_mlxconfig_query_of_a_vpi_card_names_its_link_type_with_a_prompt_and_ellipsis():
    dev = parse_mlxconfig_q(real("mlxconfig", "terrencemiao-blog-cx4-vpi-1.txt")).devices[0]
    assert dev.device == "/dev/mst/mt4115_pciconf0" and dev.value("LINK_TYPE_P1") == "ETH(2)"
    assert config_code(dev.value("NUM_OF_VFS")) == 8 and config_code(dev.value("SRIOV_EN")) == 1


def test_extended_query_separates_current_from_next_boot_and_marks_changes():
    dev = parse_mlxconfig_q(real("mlxconfig", "extended-q-test-fixture-1.txt")).devices[0]
    assert dev.columns == ["Default", "Current", "Next Boot"]
    assert dev.value("MEMIC_SIZE_LIMIT") == "_256KB(1)" and dev.next_boot("MEMIC_SIZE_LIMIT") == "DISABLED(0)"
    assert dev.changed == ["KEEP_IB_LINK_UP_P2", "MEMIC_SIZE_LIMIT"]


def test_body_pasted_without_header_still_reads_infiniband_ports():
    dev = parse_mlxconfig_q(real("mlxconfig", "cx7-ib-sm-note-body-only-1.txt")).devices[0]
    assert config_name(dev.value("LINK_TYPE_P1")) == "IB" and config_code(dev.value("LINK_TYPE_P2")) == 1


@pytest.mark.parametrize("text", ["", "Device #1:\n----------\n", "0000:3b:00.0 Ethernet controller: x\n"])
def test_mlxconfig_refuses_text_without_configuration(text):
    with pytest.raises(ParseError):
        parse_mlxconfig_q(text)
