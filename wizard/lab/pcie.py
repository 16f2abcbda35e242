"""PCIe topology of a simulated host: root ports and switches above the NICs and GPUs, links, ACS and IOMMU.

Devices that share a ``pcie_switch`` label in the profile sit behind one PCIe switch (upstream port plus one
downstream port per endpoint bus) under one root port, as on GPU servers where a NIC shares a switch with GPUs.
Faults: ``acs_enabled`` (BIOS left ACS redirect on), ``iommu_translated`` (intel_iommu=on without iommu=pt: the
kernel then enables ACS on every port, drivers/pci/pci.c pci_std_enable_acs sets SV|RR|CR|UF, and DMA is
translated, sysfs-kernel-iommu_groups "type" DMA-FQ), ``pcie_downgrade[=NETDEV|GPUn]`` (a card in a narrower
slot: LnkSta x4 below LnkCap x8).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from wizard.lab.host import SimHost
    from wizard.lab.profile import HostProfile

# PCIe generation and width of each NIC model (NVIDIA adapter user manuals: ConnectX-4 Lx PCIe 3.0 x8, ...).
NIC_LINKS = {"1015": (8.0, 8), "1017": (8.0, 16), "1019": (16.0, 16), "101b": (16.0, 16), "101d": (16.0, 16),
             "101f": (16.0, 8), "1021": (32.0, 16), "1023": (32.0, 16)}  # fmt: skip
GPU_LINK = (16.0, 16)  # L20: PCIe 4.0 x16
SWITCH_LINK = (16.0, 16)  # a PCIe Gen4 switch
BRIDGE_IDS = {"root": ("8086", "352a"), "upstream": ("1000", "c010"), "downstream": ("1000", "c010")}


@dataclass
class Port:
    """A bridge: root port, switch upstream or downstream port."""

    addr: str
    kind: str  # root, upstream, downstream
    parent: str | None
    secondary: int
    children: list[str] = field(default_factory=list)


@dataclass
class Topology:
    roots: dict[str, list[str]]  # "pci0000:35" -> root ports on that root bus
    ports: dict[str, Port]
    parent: dict[str, str]  # every device (endpoints and bridges) -> its parent bridge

    def chain(self, addr: str) -> list[str]:
        """Root port first, ``addr`` last."""
        out = [addr]
        while out[-1] in self.parent:
            out.append(self.parent[out[-1]])
        return out[::-1]

    def sysfs_path(self, addr: str) -> str:
        chain = self.chain(addr)
        return f"/sys/devices/pci{chain[0][:4]}:{chain[0][5:7]}/" + "/".join(chain)


_CACHE: dict[int, tuple[HostProfile, Topology]] = {}


def topology(profile: HostProfile) -> Topology:
    """The bridges above every device of ``profile`` (computed once per profile)."""
    cached = _CACHE.get(id(profile))
    if cached is not None and cached[0] is profile:
        return cached[1]
    topo = _build(profile)
    _CACHE[id(profile)] = (profile, topo)
    return topo


def _build(profile: HostProfile) -> Topology:
    groups: dict[str, list[str]] = {}
    for card in profile.cards:
        groups.setdefault(card.pcie_switch or f"card{card.label}", []).extend(p.pci for p in card.ports)
    for gpu in profile.gpus:
        groups.setdefault(gpu.pcie_switch or f"gpu{gpu.index}", []).append(gpu.pci)
    groups.setdefault("mgmt", []).append(profile.mgmt.pci)
    topo = Topology(roots={}, ports={}, parent={})
    for label, addrs in sorted(groups.items()):
        dom = addrs[0][:4]
        buses = sorted({int(a[5:7], 16) for a in addrs})
        if label == "mgmt" or len(buses) == 1 and not label.startswith("sw"):
            rb = buses[0] - 1
            root = _add(topo, f"{dom}:{rb:02x}:02.0", "root", None, buses[0])
            for a in addrs:
                topo.parent[a] = root
            continue
        rb = buses[0] - 3
        root = _add(topo, f"{dom}:{rb:02x}:01.0", "root", None, rb + 1)
        up = _add(topo, f"{dom}:{rb + 1:02x}:00.0", "upstream", root, rb + 2)
        for i, bus in enumerate(buses):
            down = _add(topo, f"{dom}:{rb + 2:02x}:{i:02x}.0", "downstream", up, bus)
            for a in addrs:
                if int(a[5:7], 16) == bus:
                    topo.parent[a] = down
    for child, parent in topo.parent.items():
        topo.ports[parent].children.append(child)
    return topo


def _add(topo: Topology, addr: str, kind: str, parent: str | None, secondary: int) -> str:
    topo.ports[addr] = Port(addr, kind, parent, secondary)
    if parent is None:
        topo.roots.setdefault(f"pci{addr[:4]}:{addr[5:7]}", []).append(addr)
    else:
        topo.parent[addr] = parent
    return addr


# -- state the faults change ------------------------------------------------------------------------------
def iommu_on(host: SimHost) -> bool:
    return host.fault("iommu_translated") is not None


def acs_redirect(host: SimHost, addr: str) -> bool:
    """ACS redirect is on for this bridge (BIOS left it on, or the kernel enabled it for the IOMMU)."""
    return (host.fault("acs_enabled") is not None or iommu_on(host)) and addr in topology(host.profile).ports


def cmdline(host: SimHost) -> str:
    extra = " intel_iommu=on" if iommu_on(host) else ""
    return f"BOOT_IMAGE=/vmlinuz-{host.profile.kernel} root=/dev/mapper/ubuntu--vg-ubuntu--lv ro{extra}\n"


def iommu_groups(host: SimHost) -> dict[int, list[str]]:
    """Group number -> devices; empty when the IOMMU is off (the kernel then creates no groups)."""
    if not iommu_on(host):
        return {}
    topo = topology(host.profile)
    devices = sorted(set(topo.ports) | set(topo.parent))
    # ACS on every port isolates each function; ConnectX functions of one card share a group (no ACS between them)
    groups: dict[int, list[str]] = {}
    by_card: dict[str, int] = {}
    for addr in devices:
        key = addr[:-2] if addr in {p.pci for p in host.profile.ports} else addr
        if key not in by_card:
            by_card[key] = len(by_card) + 1
        groups.setdefault(by_card[key], []).append(addr)
    return groups


def iommu_group_of(host: SimHost, addr: str) -> int | None:
    return next((g for g, members in iommu_groups(host).items() if addr in members), None)


def endpoint_link(host: SimHost, addr: str) -> tuple[tuple[float, int], tuple[float, int]]:
    """(LnkCap, LnkSta) of an endpoint: the fault halves the width of the named card or GPU."""
    p = host.profile
    card = next((c for c in p.cards if any(port.pci == addr for port in c.ports)), None)
    gpu = next((g for g in p.gpus if g.pci == addr), None)
    cap = NIC_LINKS.get(card.model.device_id, (8.0, 8)) if card else GPU_LINK if gpu else (8.0, 8)
    fault = host.fault("pcie_downgrade")
    if fault is None:
        return cap, cap
    target = fault.arg or p.ports[0].netdev
    hit = (card is not None and any(port.netdev == target for port in card.ports)) or (
        gpu is not None and target.upper() == f"GPU{gpu.index}"
    )
    return (cap, (cap[0], cap[1] // 2)) if hit else (cap, cap)
