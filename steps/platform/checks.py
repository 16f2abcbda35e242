"""Verdicts on the platform GPUDirect depends on: ACS on GPU<->NIC paths, IOMMU mode, PCIe links, NIC firmware.

Sources: NCCL troubleshooting guide, "PCI Access Control Services (ACS)",
https://docs.nvidia.com/deeplearning/nccl/user-guide/docs/troubleshooting.html#pci-access-control-services-acs
(redirect sends P2P through the root
complex: slow or hangs; disable in the BIOS or ``setpci -s <bdf> ECAP_ACS+0x6.w=0000`` at every boot) and its
IOMMU note (VT-d/IOMMU redirects P2P the same way); Linux sysfs-kernel-iommu_groups (type identity = passthrough);
mlxconfig LINK_TYPE_P<n> (1 = IB, 2 = ETH).
"""

from __future__ import annotations

from steps.platform.facts import PlatformFacts, is_ib
from wizard.engine.step import CheckItem, CheckStatus

ACS_SETPCI = "setpci -s {bdf} ECAP_ACS+0x6.w=0000"
PASSTHROUGH = {"identity"}


def platform_checks(
    facts: PlatformFacts | None,
    nics: dict[str, str],
    gpus: dict[str, str],
    *,
    gpudirect: bool = False,
    link_layer: str = "ethernet",
) -> list[CheckItem]:
    """The platform items for discovery (warnings) or gpudirect (ACS redirect fails)."""
    if facts is None:
        return []
    items = [acs_check(facts, nics, gpus, gpudirect), iommu_check(facts, gpus), link_check(facts)]
    if not gpudirect:
        items.append(firmware_check(facts, nics, link_layer))
    return items


def shared_paths(facts: PlatformFacts, nics: dict[str, str], gpus: dict[str, str]) -> list[tuple[str, str, list[str]]]:
    """(GPU, NIC, bridges between them) for every GPU and NIC behind one PCIe switch (a common bridge)."""
    out = []
    for gpu in sorted(gpus):
        for nic in sorted(nics):
            a, b = facts.chains.get(gpu, []), facts.chains.get(nic, [])
            common = [x for x, y in zip(a[:-1], b[:-1], strict=False) if x == y]
            if len(common) < 2:  # only a root port in common: P2P crosses the root complex anyway (PHB/NODE)
                continue
            between = [x for x in a[:-1] + b[:-1] if x not in common]
            out.append((gpu, nic, between + common[-1:]))
    return out


def acs_check(facts: PlatformFacts, nics: dict[str, str], gpus: dict[str, str], gpudirect: bool) -> CheckItem:
    title = "PCIe ACS on GPU <-> NIC paths"
    if not gpus:
        return CheckItem(id="pcie_acs", title=title, status="skip", evidence="no GPUs")
    if facts.caps_readable is not True:
        return CheckItem(
            id="pcie_acs",
            title=title,
            status="warn",
            evidence="ACS control not readable: lspci -vvv printed 'Capabilities: <access denied>' or did not run",
            fix="allow sudo for lspci",
        )
    paths = shared_paths(facts, nics, gpus)
    if not paths:
        return CheckItem(
            id="pcie_acs",
            title=title,
            status="skip",
            evidence="no GPU shares a PCIe switch with a NIC: peer-to-peer crosses the root complex anyway",
        )
    redirecting: dict[str, list[str]] = {}
    for gpu, nic, bridges in paths:
        for bdf in bridges:
            if facts.bridges.get(bdf) and facts.bridges[bdf].redirect:
                redirecting.setdefault(bdf, []).append(f"{gpus[gpu]}<->{nics[nic]}")
    if not redirecting:
        return CheckItem(
            id="pcie_acs",
            title=title,
            status="pass",
            evidence=f"no ACS redirect on the bridges between {len(paths)} GPU/NIC pairs behind a switch",
        )
    pairs = sorted({pair for found in redirecting.values() for pair in found})
    flags = sorted({facts.bridges[bdf].acs_ctl or "?" for bdf in redirecting})
    evidence = (
        f"{len(redirecting)} bridges redirect ({', '.join(sorted(redirecting))}), ACSCtl {' / '.join(flags)}; "
        f"{len(pairs)} GPU/NIC pairs affected: {', '.join(pairs[:6])}" + (", ..." if len(pairs) > 6 else "")
    )
    setpci = ACS_SETPCI.format(bdf="$b")
    setpci = f"for b in {' '.join(sorted(redirecting))}; do {setpci}; done"
    iommu = (
        " The IOMMU is on, and the kernel enables ACS at boot when it is: disable the IOMMU, or run the setpci "
        "lines from a boot-time unit after it."
        if facts.iommu_groups
        else ""
    )
    return CheckItem(
        id="pcie_acs",
        title=title,
        status="fail" if gpudirect else "warn",
        evidence="ACS redirects GPU<->NIC peer-to-peer through the root complex (GPUDirect RDMA slow or hanging): "
        + evidence,
        fix="disable PCIe ACS in the BIOS (often under PCIe/IIO configuration), or at every boot, as the NCCL "
        f"troubleshooting guide ('PCI Access Control Services (ACS)') documents: {setpci}.{iommu}",
    )


def iommu_check(facts: PlatformFacts, gpus: dict[str, str]) -> CheckItem:
    title = "IOMMU mode for GPUDirect"
    params = " ".join(p for p in (facts.cmdline or "").split() if "iommu" in p) or "no iommu parameters"
    if facts.iommu_groups == 0:
        return CheckItem(
            id="iommu",
            title=title,
            status="pass",
            evidence=f"IOMMU off: no IOMMU groups in /sys/kernel/iommu_groups (kernel command line: {params})",
        )
    translated = {pci: t for pci, t in facts.iommu_types.items() if t not in PASSTHROUGH}
    if facts.iommu_types and not translated:
        return CheckItem(
            id="iommu",
            title=title,
            status="pass",
            evidence=f"IOMMU in passthrough (identity domains); kernel command line: {params}",
        )
    if not facts.iommu_types:
        passthrough = "iommu=pt" in (facts.cmdline or "")
        status: CheckStatus = "pass" if passthrough else "warn"
        return CheckItem(
            id="iommu",
            title=title,
            status=status,
            evidence=f"{facts.iommu_groups} IOMMU groups, domain type not readable; kernel command line: {params}",
            fix=None if passthrough else _IOMMU_FIX,
        )
    types = ", ".join(sorted({f"{t}" for t in translated.values()}))
    gpu_hit = sorted(gpus[p] for p in translated if p in gpus)
    return CheckItem(
        id="iommu",
        title=title,
        status="warn",
        evidence=f"DMA is translated by the IOMMU (domain type {types}) for {len(translated)} GPU/NIC functions"
        + (f" incl. {', '.join(gpu_hit[:3])}" if gpu_hit else "")
        + f"; kernel command line: {params}",
        fix=_IOMMU_FIX,
    )


_IOMMU_FIX = (
    "add iommu=pt to GRUB_CMDLINE_LINUX_DEFAULT in /etc/default/grub, run update-grub and reboot (or turn VT-d/AMD-Vi "
    "off in the BIOS when no VM uses it): translated DMA slows or breaks GPUDirect RDMA"
)


def link_check(facts: PlatformFacts) -> CheckItem:
    title = "PCIe links trained at full speed and width"
    if not facts.links:
        return CheckItem(
            id="pcie_links", title=title, status="skip", evidence="link status not readable (lspci -vvv needs root)"
        )
    slow = []
    for link in facts.links:
        narrow = link.sta_width < link.cap_width
        # idle GPUs lower their link speed to save power; only a narrower link is a fault on a GPU
        slower = link.sta_speed < link.cap_speed and link.kind == "nic"
        if narrow or slower:
            slow.append(
                f"{link.name} ({link.pci}): {link.sta_speed:g}GT/s x{link.sta_width}, capable of "
                f"{link.cap_speed:g}GT/s x{link.cap_width}"
            )
    if not slow:
        return CheckItem(
            id="pcie_links",
            title=title,
            status="pass",
            evidence=f"{len(facts.links)} NIC functions and GPUs at their PCIe capability",
        )
    return CheckItem(
        id="pcie_links",
        title=title,
        status="warn",
        evidence="; ".join(slow),
        fix="reseat the card in a slot wired for its full width, check riser cabling and the BIOS lane bifurcation "
        "and PCIe speed settings; a downgraded link caps RDMA and GPUDirect bandwidth without any error",
    )


def firmware_check(facts: PlatformFacts, nics: dict[str, str], link_layer: str = "ethernet") -> CheckItem:
    title = "ConnectX firmware configuration (read only)"
    if not facts.firmware_tool:
        return CheckItem(
            id="nic_firmware",
            title=title,
            status="skip",
            evidence="mlxconfig (NVIDIA MFT) and mstconfig (mstflint) are not installed: not read",
        )
    wrong, seen = [], []
    for card in facts.firmware:
        if card.error:
            seen.append(f"{card.pci}: {card.tool} failed ({card.error})")
            continue
        for port, (current, nxt) in sorted(card.link_types.items()):
            fn = f"{card.pci.rsplit('.', 1)[0]}.{port - 1}"
            name = nics.get(fn, fn)
            # the fabric decides which mode is wrong; auto accepts either (discovery's link layer item still names
            # a port whose mode differs from its host's group)
            other = {"ethernet": is_ib, "infiniband": lambda v: not is_ib(v)}.get(link_layer)
            if other is not None and (other(current) or other(nxt)):
                mode = "InfiniBand" if link_layer == "ethernet" else "Ethernet"
                when = "now" if other(current) else f"at the next boot (now {current})"
                wrong.append(
                    (
                        card.pci,
                        port,
                        f"{name} ({fn}): LINK_TYPE_P{port}={nxt if other(nxt) else current} runs {mode} {when}",
                    )
                )
        sriov = f"SR-IOV {card.sriov_en or '?'} with {card.num_vfs or '?'} VFs"
        types = ", ".join(f"P{p}={v[1]}" for p, v in sorted(card.link_types.items()))
        seen.append(
            f"{card.pci} {card.device_type or '?'}: {sriov}, ADVANCED_PCI_SETTINGS "
            f"{card.advanced_pci_settings or '?'}" + (f", LINK_TYPE {types}" if types else "")
        )
    if wrong:
        value = "IB" if link_layer == "infiniband" else "ETH"
        fixes = "; ".join(
            f"sudo {facts.firmware_tool} -d {pci} set LINK_TYPE_P{port}={value}" for pci, port, _ in wrong
        )
        design = "InfiniBand (fabric.link_layer)" if link_layer == "infiniband" else "Ethernet (RoCE)"
        return CheckItem(
            id="nic_firmware",
            title=title,
            status="fail",
            evidence=f"this design is {design}: " + "; ".join(w for _, _, w in wrong),
            fix=f"{fixes}, then reboot (roce-wizard never writes firmware settings)",
        )
    failed = bool(facts.firmware) and all(card.error for card in facts.firmware)
    return CheckItem(
        id="nic_firmware",
        title=title,
        status="warn" if failed else "pass",
        evidence="; ".join(seen) or "no ConnectX card",
        fix=f"run sudo {facts.firmware_tool} -d <pci> -e q by hand to see why" if failed else None,
    )
