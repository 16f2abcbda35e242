"""Adapter firmware against the firmware line the chosen release supports (its "General Support" table)."""

from __future__ import annotations

from dataclasses import dataclass, field

from steps.discovery.facts import DiscoveryFacts, NicPort
from steps.ofed import support as sup
from steps.ofed.facts import OfedFacts


@dataclass
class FirmwareReport:
    """Ports grouped by verdict; ``old`` groups ports that share family, firmware and the supported version."""

    old: dict[tuple[str, str, str], list[NicPort]] = field(default_factory=dict)
    good: list[str] = field(default_factory=list)
    unknown: list[str] = field(default_factory=list)


def device_of(port: NicPort, facts: OfedFacts) -> str | None:
    """The port's RDMA device as the stage saw it now (by PCI address, else by netdev)."""
    return facts.rdma_by_pci.get(port.pci) or (facts.rdma_by_netdev.get(port.netdev) if port.netdev else None)


def assess_firmware(disc: DiscoveryFacts, facts: OfedFacts | None, release: sup.Release) -> FirmwareReport:
    report = FirmwareReport()
    for port in disc.ports:
        family = sup.FAMILY.get(port.device_id or "")
        device = device_of(port, facts) if facts else None
        firmware = (facts.firmware_by_device.get(device or "") if facts else None) or port.firmware
        bundled = release.firmware.get(family or "")
        name = f"{port.netdev or port.pci} ({port.pci}, {family or port.model})"
        if not firmware or not family or not bundled:
            report.unknown.append(f"{name}: firmware {firmware or 'unknown'}")
        elif sup.firmware_line(firmware) < sup.firmware_line(bundled):
            report.old.setdefault((family, firmware, bundled), []).append(port)
        else:
            report.good.append(f"{name} {firmware}")
    return report


def describe_old(host: str, report: FirmwareReport, release: sup.Release) -> str:
    """One sentence per (family, firmware) group, naming host, netdevs, PCI addresses and what is supported."""
    parts = []
    for (family, firmware, bundled), ports in report.old.items():
        where = ", ".join(f"{p.netdev or 'no netdev'} ({p.pci})" for p in ports)
        line = ".".join(map(str, sup.firmware_line(bundled)))
        parts.append(
            f"{family} firmware {firmware} on {where} is older than the {line} line {release.label} supports"
            f" (bundled: {bundled})"
        )
    return f"{host}: " + "; ".join(parts)


def update_fix(report: FirmwareReport) -> str:
    """How to update: one command per card (firmware belongs to the card, not to each function)."""
    cards: dict[str, str] = {}
    for (_, _, bundled), ports in report.old.items():
        for port in ports:
            cards.setdefault(port.card, f"mlxup --online -u -d {port.pci} (to {bundled})")
    return (
        "update each card's firmware: "
        + "; ".join(cards.values())
        + " - or offline: mstflint -d <pci> -i <image for the card's PSID> burn; then mstfwreset -d <pci> reset"
        " (or reboot) and re-run: roce-wizard --only ofed"
    )
