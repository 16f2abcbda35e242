"""Platform checks GPUDirect depends on, against the lab: ACS redirect, translated IOMMU, PCIe link downgrades and a
VPI port set to InfiniBand are each named by discovery (and by gpudirect where they matter), on the faulted host
only, with the evidence and the fix.

Real behaviours simulated (wizard/lab/pcie.py, cmd_pcie.py): NCCL troubleshooting guide, "PCI Access Control
Services (ACS)" (ACSCtl SrcValid+/ReqRedir+ on a bridge redirects P2P to the root complex; fix setpci
ECAP_ACS+0x6.w=0000 or BIOS); Linux drivers/pci/pci.c pci_std_enable_acs (an enabled IOMMU turns ACS on);
Documentation/ABI/testing/sysfs-kernel-iommu_groups (type DMA/DMA-FQ/identity); pciutils ls-caps.c LnkCap/LnkSta;
mstflint mlxconfig query table (Default/Current/Next Boot, LINK_TYPE_Pn IB(1)/ETH(2)).
"""

from __future__ import annotations

import pytest

from tests.steps.test_roce_demo import EXAMPLE, lab_runner, run
from wizard.answers.model import load_answers

pytest.importorskip("wizard.lab", reason="the simulated lab (wizard.lab) is not importable")


def checks_of(runner, host: str, stage: str) -> dict[str, tuple[str, str, str]]:
    items = runner.store.host(host).stage(stage).checks
    return {c.id: (c.status, c.evidence, c.fix or "") for c in items}


async def discover(tmp_path, *faults: str):
    async with lab_runner(tmp_path, load_answers(EXAMPLE), faults) as (lab, runner):
        await run(runner, ["discovery"])
        return checks_of(runner, "server1", "discovery"), checks_of(runner, "server2", "discovery")


async def test_acs_redirect_on_the_gpu_nic_switch_is_named_by_discovery_with_the_setpci_fix(tmp_path):
    good, bad = await discover(tmp_path, "server2:acs_enabled")
    assert good["pcie_acs"][0] == "pass"
    status, evidence, fix = bad["pcie_acs"]
    assert status == "warn"
    assert "0000:37:02.0" in evidence and "ReqRedir+" in evidence and "GPU0" in evidence
    assert "setpci" in fix and "ECAP_ACS+0x6.w=0000" in fix and "BIOS" in fix


async def test_translated_iommu_is_named_with_iommu_pt_as_the_fix(tmp_path):
    good, bad = await discover(tmp_path, "server2:iommu_translated")
    assert good["iommu"][0] == "pass" and "no IOMMU groups" in good["iommu"][1]
    status, evidence, fix = bad["iommu"]
    assert status == "warn" and "DMA-FQ" in evidence and "intel_iommu=on" in evidence
    assert "iommu=pt" in fix
    assert bad["pcie_acs"][0] == "warn"  # the kernel enables ACS on every port once the IOMMU is on


async def test_a_nic_trained_at_half_width_is_named_with_its_netdev(tmp_path):
    good, bad = await discover(tmp_path, "server2:pcie_downgrade=ens2f0np0")
    assert good["pcie_links"][0] == "pass"
    status, evidence, _ = bad["pcie_links"]
    assert status == "warn" and "ens2f0np0" in evidence and "x4" in evidence and "x8" in evidence
    assert "ens1f0np0" not in evidence


async def test_a_vpi_port_set_to_infiniband_fails_discovery_naming_port_and_parameter(tmp_path):
    good, bad = await discover(tmp_path, "server2:vpi_ib_mode=ens1f1np1")
    assert good["nic_firmware"][0] == "pass"
    status, evidence, fix = bad["nic_firmware"]
    assert status == "fail" and "ens1f1np1" in evidence and "LINK_TYPE_P2" in evidence and "IB(1)" in evidence
    assert "LINK_TYPE_P2=ETH" in fix


async def test_gpudirect_fails_on_acs_redirect_and_keeps_the_other_host_verified(tmp_path):
    """GPUDirect with ACS redirect between GPU and NIC goes through the root complex (NCCL troubleshooting, ACS):
    stage gpudirect fails that host naming the bridge and the setpci fix; the clean host passes the item."""
    async with lab_runner(tmp_path, load_answers(EXAMPLE), ("server2:acs_enabled",)) as (lab, runner):
        await run(runner, ["discovery", "gpudirect"])
        good, bad = checks_of(runner, "server1", "gpudirect"), checks_of(runner, "server2", "gpudirect")
        assert good["pcie_acs"][0] == "pass" and good["iommu"][0] == "pass"
        status, evidence, fix = bad["pcie_acs"]
        assert status == "fail" and "0000:82:02.0" in evidence and "ECAP_ACS+0x6.w=0000" in fix
        assert runner.store.host("server2").stage("gpudirect").status == "failed"
