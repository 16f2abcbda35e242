"""Pure platform verdicts (steps/platform/checks.py) from synthetic facts: what an expert would flag and how."""

from __future__ import annotations

from steps.platform.checks import platform_checks
from steps.platform.facts import Bridge, CardFirmware, Link, PlatformFacts, chains_from_paths, iommu_types

NICS = {"0000:3b:00.0": "ens1f0np0", "0000:3b:00.1": "ens1f1np1"}
GPUS = {"0000:38:00.0": "GPU0"}
PATHS = (
    "/sys/devices/pci0000:35/0000:35:01.0/0000:36:00.0/0000:37:00.0/0000:38:00.0\n"
    "/sys/devices/pci0000:35/0000:35:01.0/0000:36:00.0/0000:37:02.0/0000:3b:00.0\n"
    "/sys/devices/pci0000:35/0000:35:01.0/0000:36:00.0/0000:37:02.0/0000:3b:00.1\n"
)


def facts(**kw) -> PlatformFacts:
    base = PlatformFacts(chains=chains_from_paths(PATHS), caps_readable=True, iommu_groups=0, firmware_tool=None)
    bridges = {b: Bridge(pci=b, acs_ctl="SrcValid- ReqRedir- CmpltRedir-") for b in ("0000:37:00.0", "0000:37:02.0")}
    base.bridges = bridges
    return base.model_copy(update=kw)


def by_id(items, gpudirect=False):
    return {i.id: i for i in items}


def test_acs_redirect_on_a_switch_port_between_gpu_and_nic_warns_in_discovery_and_fails_gpudirect():
    f = facts()
    f.bridges["0000:37:02.0"] = Bridge(pci="0000:37:02.0", acs_ctl="SrcValid+ ReqRedir+ CmpltRedir+", redirect=True)
    disc = by_id(platform_checks(f, NICS, GPUS))["pcie_acs"]
    gdr = by_id(platform_checks(f, NICS, GPUS, gpudirect=True))["pcie_acs"]
    assert (disc.status, gdr.status) == ("warn", "fail")
    assert "0000:37:02.0" in gdr.evidence and "GPU0<->ens1f0np0" in gdr.evidence
    assert "for b in 0000:37:02.0; do setpci -s $b ECAP_ACS+0x6.w=0000; done" in gdr.fix
    assert "0000:37:00.0" not in gdr.fix and "BIOS" in gdr.fix


def test_gpu_and_nic_under_different_root_ports_are_not_judged_on_acs():
    f = facts(
        chains=chains_from_paths(
            PATHS.replace(
                "pci0000:35/0000:35:01.0/0000:36:00.0/0000:37:00.0", "pci0000:80/0000:80:01.0/0000:81:00.0/0000:82:00.0"
            )
        )
    )
    assert by_id(platform_checks(f, NICS, {"0000:82:00.0": "GPU0"}))["pcie_acs"].status == "skip"


def test_unreadable_capabilities_warn_instead_of_passing():
    assert by_id(platform_checks(facts(caps_readable=False), NICS, GPUS))["pcie_acs"].status == "warn"


def test_translated_iommu_warns_with_iommu_pt_and_passthrough_passes():
    grep = "/sys/bus/pci/devices/0000:38:00.0/iommu_group/type:DMA-FQ\n"
    f = facts(iommu_groups=40, iommu_types=iommu_types(grep), cmdline="BOOT_IMAGE=/vmlinuz ro intel_iommu=on")
    item = by_id(platform_checks(f, NICS, GPUS, gpudirect=True))["iommu"]
    assert item.status == "warn" and "DMA-FQ" in item.evidence and "GPU0" in item.evidence and "iommu=pt" in item.fix
    f = facts(iommu_groups=40, iommu_types={"0000:38:00.0": "identity"}, cmdline="ro intel_iommu=on iommu=pt")
    assert by_id(platform_checks(f, NICS, GPUS))["iommu"].status == "pass"


def test_nic_link_narrower_or_slower_warns_but_an_idle_gpu_at_lower_speed_does_not():
    links = [
        Link(pci="0000:3b:00.0", name="ens1f0np0", kind="nic", cap_speed=8, cap_width=8, sta_speed=8, sta_width=4),
        Link(pci="0000:38:00.0", name="GPU0", kind="gpu", cap_speed=16, cap_width=16, sta_speed=2.5, sta_width=16),
    ]
    item = by_id(platform_checks(facts(links=links), NICS, GPUS))["pcie_links"]
    assert item.status == "warn" and "ens1f0np0 (0000:3b:00.0): 8GT/s x4, capable of 8GT/s x8" in item.evidence
    assert "GPU0" not in item.evidence


def test_vpi_port_set_to_infiniband_fails_discovery_and_is_not_a_gpudirect_item():
    fw = CardFirmware(
        pci="0000:3b:00.0",
        tool="mlxconfig",
        device_type="ConnectX6",
        link_types={1: ["ETH(2)", "ETH(2)"], 2: ["IB(1)", "IB(1)"]},
    )
    item = by_id(platform_checks(facts(firmware_tool="mlxconfig", firmware=[fw]), NICS, GPUS))["nic_firmware"]
    assert item.status == "fail" and "ens1f1np1 (0000:3b:00.1): LINK_TYPE_P2=IB(1) runs InfiniBand now" in item.evidence
    assert "mlxconfig -d 0000:3b:00.0 set LINK_TYPE_P2=ETH" in item.fix
    assert "nic_firmware" not in by_id(platform_checks(facts(firmware=[fw]), NICS, GPUS, gpudirect=True))


def test_missing_firmware_tools_skip_with_the_reason():
    item = by_id(platform_checks(facts(), NICS, GPUS))["nic_firmware"]
    assert item.status == "skip" and "mstconfig" in item.evidence


def test_the_firmware_tools_command_v_finds_are_the_ones_queried() -> None:
    from steps.platform.facts import installed_tools
    from wizard.executors.base import CommandResult

    def found(status: int, out: str) -> tuple[str, ...]:
        return installed_tools(CommandResult("command -v mlxconfig mstconfig", status, out, "", 0.0))

    assert found(0, "/usr/bin/mlxconfig\n/usr/bin/mstconfig") == ("mlxconfig", "mstconfig")
    assert found(1, "/usr/bin/mstconfig") == ("mstconfig",), "DOCA-OFED's mstflint only: no mlxconfig try first"
    assert found(1, "") == (), "neither installed: nothing to query"
    assert found(255, "") == ("mlxconfig", "mstconfig"), "no usable answer: try each, as before"
