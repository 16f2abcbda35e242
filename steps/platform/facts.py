"""Platform facts GPUDirect depends on: PCIe paths and ACS, IOMMU mode, link training, NIC firmware settings.

Read-only probe shared by discovery and gpudirect; every command is an argv list, parsing happens here in Python.
"""

from __future__ import annotations

import re
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from wizard.executors.base import SudoRefused
from wizard.parsers import ParseError
from wizard.parsers.mlxconfig import config_name, parse_mlxconfig_q
from wizard.parsers.pcie import parse_lspci_vvv

BDF_RE = re.compile(r"[0-9a-f]{4}:[0-9a-f]{2}:[0-9a-f]{2}\.[0-7]")
FIRMWARE_TOOLS = ("mlxconfig", "mstconfig")  # NVIDIA MFT, or mstflint (installed by DOCA-OFED)
# Globs over every PCI device, not a list of the endpoints: they do not depend on what lspci and nvidia-smi print,
# so they go in the host's first batch (wizard/engine/prefetch.py); the probe keeps the endpoints' lines only.
PCI_PATHS = "readlink -f /sys/bus/pci/devices/*"
IOMMU_TYPES = "grep -sH . /sys/bus/pci/devices/*/iommu_group/type"
LSPCI_VVV = ["lspci", "-D", "-vvv"]
CMDLINE = ["cat", "/proc/cmdline"]
IOMMU_GROUPS = ["ls", "/sys/kernel/iommu_groups"]
# Which firmware tools are installed, read with the first batch: the per-card queries then go out together with the
# other per-port reads, instead of an mlxconfig try whose "not found" starts another round trip for mstconfig.
# (`command -v` is POSIX and built into every shell; it prints the path of each tool found, exit 1 if one is not.)
FIRMWARE_TOOLS_PROBE = "command -v mlxconfig mstconfig"


class _Model(BaseModel):
    model_config = ConfigDict(extra="forbid")


class Link(_Model):
    """PCIe link of a NIC function or GPU: capability and what it trained at."""

    pci: str
    name: str  # netdev or GPU<n>
    kind: str  # nic or gpu
    cap_speed: float
    cap_width: int
    sta_speed: float
    sta_width: int


class Bridge(_Model):
    pci: str
    port_type: str | None = None
    acs_ctl: str | None = None  # the ACSCtl flags as printed
    redirect: bool = False


class CardFirmware(_Model):
    pci: str  # the function queried
    tool: str
    device_type: str | None = None
    link_types: dict[int, list[str]] = Field(default_factory=dict)  # port -> [current, next boot]
    sriov_en: str | None = None
    num_vfs: str | None = None
    advanced_pci_settings: str | None = None
    error: str | None = None


class PlatformFacts(_Model):
    chains: dict[str, list[str]] = Field(default_factory=dict)  # endpoint -> bridges from the root port, itself last
    caps_readable: bool | None = None  # False: lspci ran without root ("Capabilities: <access denied>")
    bridges: dict[str, Bridge] = Field(default_factory=dict)
    links: list[Link] = Field(default_factory=list)
    cmdline: str | None = None
    iommu_groups: int | None = None
    iommu_types: dict[str, str] = Field(default_factory=dict)  # endpoint -> DMA, DMA-FQ, identity, ...
    firmware_tool: str | None = None
    firmware: list[CardFirmware] = Field(default_factory=list)
    notes: list[str] = Field(default_factory=list)


def named_endpoints(disc: Any) -> tuple[dict[str, str], dict[str, str]]:
    """({pci: netdev} of the ConnectX functions, {pci: "GPU<n>"}) from discovery facts."""
    nics = {p.pci: p.netdev or p.pci for p in disc.ports if BDF_RE.fullmatch(p.pci)}
    gpus = {normalize_bdf(g.bus_id): f"GPU{g.index}" for g in disc.gpus if g.bus_id}
    return nics, gpus


def normalize_bdf(bus_id: str) -> str:
    """``00000000:38:00.0`` (nvidia-smi) or ``3b:00.0`` -> ``0000:38:00.0``."""
    text = bus_id.strip().lower()
    return text[-12:] if len(text) >= 12 else f"0000:{text}"


def chains_from_paths(readlink_output: str) -> dict[str, list[str]]:
    """``readlink -f /sys/bus/pci/devices/X`` lines -> {X: [root port, ..., X]} from the nested sysfs path."""
    chains = {}
    for line in readlink_output.splitlines():
        found = BDF_RE.findall(line.strip())
        if found:
            chains[found[-1]] = found
    return chains


def iommu_types(grep_output: str) -> dict[str, str]:
    """``grep -sH . /sys/bus/pci/devices/X/iommu_group/type`` -> {X: type}."""
    out = {}
    for line in grep_output.splitlines():
        match = re.match(r"^/sys/bus/pci/devices/([^/]+)/iommu_group/type:(\S+)", line.strip())
        if match:
            out[match.group(1)] = match.group(2)
    return out


def apply_lspci(facts: PlatformFacts, text: str, names: dict[str, tuple[str, str]]) -> None:
    """Links of the named endpoints ({pci: (name, kind)}) and ACS of every bridge on their chains."""
    try:
        listing = parse_lspci_vvv(text)
    except ParseError as exc:
        facts.notes.append(f"lspci -vvv: {exc}")
        return
    facts.caps_readable = not any(d.caps_denied for d in listing.devices)
    on_paths = {b for chain in facts.chains.values() for b in chain[:-1]}
    for dev in listing.devices:
        addr = normalize_bdf(dev.address)
        if addr in on_paths:
            flags = " ".join(f"{k}{'+' if v else '-'}" for k, v in (dev.acs_ctl or {}).items()) or None
            facts.bridges[addr] = Bridge(pci=addr, port_type=dev.port_type, acs_ctl=flags, redirect=dev.acs_redirect)
        if addr in names and dev.link_cap and dev.link_sta:
            name, kind = names[addr]
            facts.links.append(
                Link(
                    pci=addr,
                    name=name,
                    kind=kind,
                    cap_speed=dev.link_cap.speed_gts,
                    cap_width=dev.link_cap.width,
                    sta_speed=dev.link_sta.speed_gts,
                    sta_width=dev.link_sta.width,
                )
            )


def card_firmware(pci: str, tool: str, text: str) -> CardFirmware:
    try:
        device = parse_mlxconfig_q(text).devices[0]
    except ParseError as exc:
        return CardFirmware(pci=pci, tool=tool, error=str(exc))
    ports = sorted(int(k.rsplit("P", 1)[1]) for k in device.values if re.fullmatch(r"LINK_TYPE_P\d+", k))
    return CardFirmware(
        pci=pci,
        tool=tool,
        device_type=device.device_type,
        link_types={
            n: [device.value(f"LINK_TYPE_P{n}") or "", device.next_boot(f"LINK_TYPE_P{n}") or ""] for n in ports
        },
        sriov_en=device.value("SRIOV_EN"),
        num_vfs=device.value("NUM_OF_VFS"),
        advanced_pci_settings=device.value("ADVANCED_PCI_SETTINGS"),
    )


def is_ib(value: str) -> bool:
    return (config_name(value) or "").upper() in ("IB", "1") or value.strip() == "1"


async def probe_platform(ex: Any, nics: dict[str, str], gpus: dict[str, str]) -> PlatformFacts:
    """Read the platform for NIC functions ({pci: netdev}) and GPUs ({pci: "GPU0"}); changes nothing."""
    facts = PlatformFacts()
    names = {p: (n, "nic") for p, n in nics.items()} | {p: (n, "gpu") for p, n in gpus.items()}
    if not names:
        return facts
    endpoints = sorted(names)
    links = await ex.run(PCI_PATHS)
    chains = chains_from_paths(links.stdout)
    facts.chains = {a: chains[a] for a in endpoints if a in chains}
    # capabilities (LnkCap/LnkSta, ACSCtl) are readable by root only: lspci prints "<access denied>" otherwise
    try:
        lspci = await ex.run(LSPCI_VVV, sudo=True)
    except SudoRefused:
        lspci = await ex.run(LSPCI_VVV)
    if lspci.ok:
        apply_lspci(facts, lspci.stdout, names)
    else:
        facts.notes.append(f"lspci -vvv: {lspci.first_error_line() or 'failed'}")
    cmdline = await ex.run(CMDLINE)
    facts.cmdline = cmdline.stdout.strip() if cmdline.ok else None
    groups = await ex.run(IOMMU_GROUPS)
    facts.iommu_groups = len(groups.stdout.split()) if groups.ok else None
    if facts.iommu_groups:
        types = iommu_types((await ex.run(IOMMU_TYPES)).stdout)
        facts.iommu_types = {a: types[a] for a in endpoints if a in types}
    await _probe_firmware(ex, facts, sorted(nics))
    return facts


def platform_prefetch() -> list[tuple[list[str] | str, bool]]:
    """What ``probe_platform`` runs on any host with a ConnectX function or a GPU, whatever they are: lspci -vvv
    with sudo (a refused sudo batch is skipped and the probe reads it plainly), the kernel command line, the PCI
    paths, the IOMMU groups and which firmware tools are installed. The IOMMU type read (only when groups exist)
    and the per-card firmware queries are not listed."""
    plain = [CMDLINE, IOMMU_GROUPS, PCI_PATHS, FIRMWARE_TOOLS_PROBE]
    return [(LSPCI_VVV, True), *((c, False) for c in plain)]


def firmware_cards(functions: list[str]) -> list[str]:
    """One PCI function per card (the first), the device a firmware tool is given."""
    return sorted({f.rsplit(".", 1)[0]: f for f in sorted(functions, reverse=True)}.values())


def firmware_argv(tool: str, pci: str) -> list[str]:
    # -e adds the Default and Current columns: Current is what runs now, Next Boot what comes after a reboot
    return [tool, "-d", pci, "-e", "q"]


def firmware_prefetch(functions: list[str], known_tool: str | None) -> list[tuple[list[str] | str, bool]]:
    """The firmware queries ``_probe_firmware`` will run, predicted from an earlier read (``known_tool``: the
    tool that answered then): every card with that tool. Unknown: none (the dry run finds them)."""
    if known_tool not in FIRMWARE_TOOLS:
        return []
    return [(firmware_argv(known_tool, pci), True) for pci in firmware_cards(functions)]  # type: ignore[arg-type]


def installed_tools(result: Any) -> tuple[str, ...]:
    """The firmware tools ``command -v`` found, in order of preference; every tool where it gave no usable answer
    (not run, or a shell that failed otherwise): then each is tried, and "not found" is learnt the slow way."""
    if result.exit_status not in (0, 1):
        return FIRMWARE_TOOLS
    found = {line.strip().rsplit("/", 1)[-1] for line in result.stdout.splitlines()}
    return tuple(tool for tool in FIRMWARE_TOOLS if tool in found)


async def _probe_firmware(ex: Any, facts: PlatformFacts, functions: list[str]) -> None:
    cards = firmware_cards(functions)
    if not cards:
        return
    for tool in installed_tools(await ex.run(FIRMWARE_TOOLS_PROBE)):
        for pci in cards:
            try:
                result = await ex.run(firmware_argv(tool, pci), sudo=True)
            except SudoRefused as exc:
                facts.notes.append(f"{tool}: {exc.detail}")
                return
            if result.exit_status == 127 or "command not found" in result.stderr:  # sudo says so with exit 1
                break
            facts.firmware_tool = tool
            text = result.stdout if result.ok else ""
            fw = (
                card_firmware(pci, tool, text)
                if text
                else CardFirmware(pci=pci, tool=tool, error=result.first_error_line() or f"exit {result.exit_status}")
            )
            facts.firmware.append(fw)
        if facts.firmware_tool:
            return
