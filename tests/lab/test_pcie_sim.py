"""The simulated hosts' PCIe platform: nested sysfs paths, lspci -vvv capabilities, IOMMU groups, mstconfig.

Sources: pciutils lspci(8)/ls-caps.c (LnkCap/LnkSta, "(downgraded)", "Capabilities: <access denied>" without root);
NCCL troubleshooting guide "PCI Access Control Services (ACS)"; Linux drivers/pci/pci.c pci_std_enable_acs (an
IOMMU turns ACS on); Documentation/ABI/testing/sysfs-kernel-iommu_groups; mstflint mlxconfig query table.
"""

from __future__ import annotations

from tests.lab.conftest import make_lab, root, ssh
from wizard.lab import packages
from wizard.parsers.mlxconfig import parse_mlxconfig_q
from wizard.parsers.pcie import parse_lspci_vvv


async def test_nic_and_gpu_sit_behind_one_switch_in_the_sysfs_path_and_acs_is_off_by_default():
    lab = await make_lab()
    try:
        r = await ssh(lab, "server1", "readlink -f /sys/bus/pci/devices/0000:3b:00.1 /sys/bus/pci/devices/0000:38:00.0")
        assert r.stdout.split() == [
            "/sys/devices/pci0000:35/0000:35:01.0/0000:36:00.0/0000:37:02.0/0000:3b:00.1",
            "/sys/devices/pci0000:35/0000:35:01.0/0000:36:00.0/0000:37:00.0/0000:38:00.0",
        ]
        listing = parse_lspci_vvv((await root(lab, "server1", "lspci -D -vvv")).stdout)
        assert listing.get("0000:37:02.0").port_type == "Downstream Port"
        assert not any(d.acs_redirect for d in listing.devices)
        # a switch port facing an x8 card trains at x8 below its x16 capability: only endpoints count
        assert not any(d.downgraded for d in listing.devices if not d.is_bridge)
        assert (await ssh(lab, "server1", "ls /sys/kernel/iommu_groups")).stdout == ""
        user = parse_lspci_vvv((await ssh(lab, "server1", "lspci -vvv -s 3b:00.0")).stdout).devices[0]
        assert user.caps_denied and user.link_cap is None
    finally:
        await lab.stop()


async def test_acs_enabled_turns_redirect_on_the_switch_ports():
    lab = await make_lab("server1:acs_enabled")
    try:
        listing = parse_lspci_vvv((await root(lab, "server1", "lspci -D -vvv")).stdout)
        assert listing.get("0000:37:02.0").acs_redirect and listing.get("0000:82:02.0").acs_redirect
        assert not listing.get("0000:3b:00.0").acs_redirect
    finally:
        await lab.stop()


async def test_iommu_translated_puts_intel_iommu_on_the_command_line_and_dma_fq_groups():
    lab = await make_lab("server1:iommu_translated")
    try:
        assert "intel_iommu=on" in (await ssh(lab, "server1", "cat /proc/cmdline")).stdout
        r = await ssh(lab, "server1", "grep -sH . /sys/bus/pci/devices/0000:38:00.0/iommu_group/type")
        assert r.stdout.strip() == "/sys/bus/pci/devices/0000:38:00.0/iommu_group/type:DMA-FQ"
        listing = parse_lspci_vvv((await root(lab, "server1", "lspci -D -vvv")).stdout)
        assert listing.get("0000:37:00.0").acs_redirect and listing.get("0000:38:00.0").iommu_group is not None
    finally:
        await lab.stop()


async def test_pcie_downgrade_halves_the_named_gpu_width_only():
    lab = await make_lab("server1:pcie_downgrade=GPU5")
    try:
        listing = parse_lspci_vvv((await root(lab, "server1", "lspci -D -vvv")).stdout)
        gpu = listing.get("0000:84:00.0")
        assert (gpu.link_cap.width, gpu.link_sta.width) == (16, 8) and gpu.downgraded
        assert not listing.get("0000:3b:00.0").downgraded and not listing.get("0000:38:00.0").downgraded
    finally:
        await lab.stop()


async def test_vpi_ib_mode_shows_link_type_ib_at_next_boot_in_mstconfig_once_doca_is_installed():
    lab = await make_lab("server1:vpi_ib_mode")
    try:
        assert (await root(lab, "server1", "mstconfig -d 0000:3b:00.0 q")).exit_status == 127
        packages.install_files(lab.host("server1"), packages.catalog("doca")["mstflint"])
        dev = parse_mlxconfig_q((await root(lab, "server1", "mstconfig -d 0000:3b:00.0 -e q")).stdout).devices[0]
        assert (dev.value("LINK_TYPE_P2"), dev.next_boot("LINK_TYPE_P2")) == ("ETH(2)", "IB(1)")
        assert dev.next_boot("LINK_TYPE_P1") == "ETH(2)" and "LINK_TYPE_P2" in dev.changed
        denied = await ssh(lab, "server1", "mstconfig -d 0000:3b:00.0 q")
        assert denied.exit_status != 0 and "Permission denied" in denied.stderr
    finally:
        await lab.stop()
