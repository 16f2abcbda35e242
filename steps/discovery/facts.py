"""Discovery facts: what each host has, assembled from parsed tool outputs by pure functions."""

from __future__ import annotations

import re
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from steps.discovery.links import LinkCounters
from steps.platform.facts import PlatformFacts
from wizard.parsers import ParseError, parse
from wizard.parsers.lldp import LldpNeighbor

# PCI device ids of NVIDIA (Mellanox) network adapters we name; others are shown with their lspci text.
CONNECTX_MODELS: dict[str, str] = {
    "1013": "ConnectX-4",
    "1014": "ConnectX-4 VF",
    "1015": "ConnectX-4 Lx",
    "1016": "ConnectX-4 Lx VF",
    "1017": "ConnectX-5",
    "1019": "ConnectX-5 Ex",
    "101b": "ConnectX-6",
    "101d": "ConnectX-6 Dx",
    "101f": "ConnectX-6 Lx",
    "1021": "ConnectX-7",
    "1023": "ConnectX-8",
    "a2d6": "BlueField-2",
    "a2dc": "BlueField-3",
}
RELEVANT_MODULES = (
    "mlx5_core",
    "mlx5_ib",
    "ib_core",
    "ib_uverbs",
    "rdma_cm",
    "rdma_rxe",
    "nvidia",
    "nvidia_peermem",
    "nv_peer_mem",
    "bonding",
)
RELEVANT_PACKAGES = (
    "rdma-core",
    "ibverbs-utils",
    "infiniband-diags",
    "perftest",
    "doca-ofed",
    "mlnx-ofed-kernel-dkms",
    "mlnx-tools",
    "libnccl2",
    "libnccl-dev",
    "openmpi-bin",
    "chrony",
    "lldpad",
)
_NETWORK_CLASSES = ("ethernet", "infiniband", "network")
PCI_ADDRESS_RE = re.compile(r"^[0-9a-f]{4}:[0-9a-f]{2}:[0-9a-f]{2}\.[0-7]$")


class _Model(BaseModel):
    model_config = ConfigDict(extra="forbid")


class Gid(_Model):
    index: int
    gid: str
    ipv4: str | None = None
    version: str | None = None


class IbPortState(_Model):
    """An InfiniBand port as sysfs and the subnet report it (steps/discovery/infiniband.py)."""

    state: str  # DOWN / INIT / ARMED / ACTIVE
    phys_state: str | None = None  # LinkUp / Polling / Disabled
    rate_gbps: float | None = None
    width: int | None = None  # lanes: 4X -> 4
    speed: str | None = None  # EDR / HDR / NDR
    lid: int | None = None
    sm_lid: int | None = None
    sm_sl: int | None = None
    pkeys: list[str] = Field(default_factory=list)
    switch: str | None = None
    """The IB switch the port is cabled to (iblinkinfo), when infiniband-diags is installed."""
    switch_port: int | None = None

    @property
    def rate_text(self) -> str:
        width = f"{self.width}X " if self.width else ""
        return f"{self.rate_gbps:g} Gb/s ({width}{self.speed or '?'})" if self.rate_gbps else "rate ?"


class IbSm(_Model):
    """The master subnet manager, as sminfo reports it."""

    lid: int
    guid: str
    priority: int | None = None
    state: str | None = None


class NicPort(_Model):
    """One network function of a ConnectX card: PCI function, netdev, RDMA device and link."""

    pci: str
    device_id: str | None = None
    model: str
    numa_node: int | None = None
    netdev: str | None = None
    rdma_device: str | None = None
    rdma_port: int | None = None
    link_layer: str | None = None
    rdma_state: str | None = None
    physical_state: str | None = None
    link_detected: bool | None = None
    speed_mbps: int | None = None
    mtu: int | None = None
    mac: str | None = None
    ipv4: list[str] = Field(default_factory=list)
    master: str | None = None
    driver: str | None = None
    firmware: str | None = None
    gids: list[Gid] = Field(default_factory=list)
    lldp: LldpNeighbor | None = None
    """The switch port LLDP sees on this port (lldpd's lldpctl), None when none is known."""
    ib: IbPortState | None = None
    """InfiniBand ports only: port state, rate, LIDs, partition keys and the switch port it reaches."""
    link: LinkCounters | None = None
    """Link-stability counters (carrier, link_down_events_phy, CRC/symbol errors; steps/discovery/links.py)."""

    @property
    def card(self) -> str:
        """The card a function belongs to: its PCI address without the function number."""
        return self.pci.rsplit(".", 1)[0]

    @property
    def roce_v2_ipv4_gid(self) -> int | None:
        for gid in self.gids:
            if gid.version == "v2" and gid.ipv4:
                return gid.index
        return None


class Gpu(_Model):
    index: int
    name: str
    bus_id: str | None = None
    memory_mib: int | None = None
    nearest_nics: list[str] = Field(default_factory=list)


class DiscoveryFacts(_Model):
    simulated: bool = False
    hostname: str = ""
    os_id: str = ""
    os_version: str = ""
    os_pretty: str = ""
    kernel: str = ""
    ssh_server_address: str | None = None
    ssh_interface: str | None = None
    sudo_ok: bool = True
    sudo_error: str | None = None
    ports: list[NicPort] = Field(default_factory=list)
    soft_rdma: list[NicPort] = Field(default_factory=list)
    """RDMA devices on interfaces that are no ConnectX function: Soft-RoCE (rxe) and other vendors' devices."""
    other_interfaces: dict[str, list[str]] = Field(default_factory=dict)
    ofed_stack: str | None = None
    ofed_version: str | None = None
    modules: list[str] = Field(default_factory=list)
    packages: dict[str, str] = Field(default_factory=dict)
    gpus: list[Gpu] = Field(default_factory=list)
    gpu_driver: str | None = None
    ib_sm: IbSm | None = None
    """The master subnet manager (sminfo), on hosts with InfiniBand ports and infiniband-diags."""
    ib_sm_error: str | None = None
    """Why sminfo gave no answer (not installed, timed out: no SM)."""
    nccl_version: str | None = None
    platform: PlatformFacts | None = None
    """PCIe paths/ACS, IOMMU mode, link training and NIC firmware settings (steps/platform/facts.py)."""
    lldp_status: str | None = None
    """"ok", "not installed", "not running" or "refused": whether LLDP neighbours could be read at all."""
    notes: list[str] = Field(default_factory=list)

    def port_by_netdev(self, netdev: str) -> NicPort | None:
        return next((p for p in self.ports if p.netdev == netdev), None)

    def rdma_ports(self) -> list[NicPort]:
        """Ports with an RDMA device, in PCI order (the rail order)."""
        return sorted((p for p in self.ports if p.rdma_device), key=lambda p: p.pci)


def try_parse(tool: str, text: str, notes: list[str]) -> Any | None:
    """Parse or note why not: discovery reports a tool it could not read instead of stopping."""
    if not text.strip():
        return None
    try:
        return parse(tool, text)
    except ParseError as exc:
        notes.append(f"{tool}: {exc}")
        return None


def ports_from_lspci(lspci: Any, numa: dict[str, int]) -> list[NicPort]:
    """One NicPort per Mellanox network function listed by ``lspci -D -nn -d 15b3:``."""
    ports = []
    for dev in lspci.devices if lspci else []:
        kind = (dev.class_name or "").lower()
        if (dev.vendor_id or "15b3") != "15b3" or not any(word in kind for word in _NETWORK_CLASSES):
            continue
        address = dev.address if dev.address.count(":") == 2 else f"0000:{dev.address}"
        model = CONNECTX_MODELS.get(dev.device_id or "", dev.description)
        ports.append(NicPort(pci=address, device_id=dev.device_id, model=model, numa_node=numa.get(address)))
    return sorted(ports, key=lambda p: p.pci)


def parse_numa(grep_output: str) -> dict[str, int]:
    """``grep -sH . /sys/bus/pci/devices/*/numa_node`` -> {pci address: node}; -1 means no NUMA info."""
    result = {}
    for line in grep_output.splitlines():
        match = re.match(r"^/sys/bus/pci/devices/([^/]+)/numa_node:(-?\d+)$", line.strip())
        if match and int(match.group(2)) >= 0:
            result[match.group(1)] = int(match.group(2))
    return result


def link_netdevs(ports: list[NicPort], interfaces: Any, rdma_links: Any) -> dict[str, list[str]]:
    """Attach netdev, link and address facts to ports; return the other interfaces with their IPv4s."""
    by_pci = {p.pci: p for p in ports}
    others: dict[str, list[str]] = {}
    for iface in interfaces.interfaces if interfaces else []:
        port = by_pci.get(iface.parent_dev or "") if iface.parent_bus in (None, "pci") else None
        if port is None:
            if iface.ifname != "lo":
                others[iface.ifname] = list(iface.ipv4)
            continue
        port.netdev = iface.ifname
        port.mtu = iface.mtu
        port.mac = iface.mac
        port.ipv4 = list(iface.ipv4)
        port.master = iface.master
    by_netdev = {p.netdev: p for p in ports if p.netdev}
    for link in rdma_links.links if rdma_links else []:
        port = by_netdev.get(link.netdev or "")
        if port is None:
            continue
        port.rdma_device = link.device
        port.rdma_port = link.port
        port.rdma_state = link.state
        port.physical_state = link.physical_state
    return others


def soft_rdma_ports(ports: list[NicPort], interfaces: Any, rdma_links: Any) -> list[NicPort]:
    """RDMA ports whose netdev is not a ConnectX function (Soft-RoCE over any NIC or bond, other vendors)."""
    connectx = {p.netdev for p in ports if p.netdev}
    by_name = {i.ifname: i for i in (interfaces.interfaces if interfaces else [])}
    found: list[NicPort] = []
    for link in rdma_links.links if rdma_links else []:
        iface = by_name.get(link.netdev or "")
        if iface is None or iface.ifname in connectx:
            continue
        soft = link.device.startswith(("rxe", "siw"))
        found.append(
            NicPort(
                pci=iface.parent_dev or "",
                model="Soft-RoCE (rxe)" if link.device.startswith("rxe") else "RDMA device",
                netdev=iface.ifname,
                rdma_device=link.device,
                rdma_port=link.port,
                rdma_state=link.state,
                physical_state=link.physical_state,
                link_layer="Ethernet" if soft or iface.link_type == "ether" else None,
                mtu=iface.mtu,
                mac=iface.mac,
                ipv4=list(iface.ipv4),
                master=iface.master,
            )
        )
    return sorted(found, key=lambda p: (p.pci or "~", p.netdev or ""))


def attach_gids(ports: list[NicPort], gid_table: Any) -> None:
    by_dev = {(p.rdma_device, p.rdma_port): p for p in ports if p.rdma_device}
    for entry in gid_table.entries if gid_table else []:
        port = by_dev.get((entry.device, entry.port))
        if port is not None:
            port.gids.append(Gid(index=entry.index, gid=entry.gid, ipv4=entry.ipv4, version=entry.version))
    for port in ports:
        port.gids.sort(key=lambda g: g.index)


def ssh_interface(server_address: str | None, ports: list[NicPort], others: dict[str, list[str]]) -> str | None:
    """The interface holding the address the SSH session arrived on."""
    if not server_address:
        return None
    for name, cidrs in others.items():
        if any(c.split("/")[0] == server_address for c in cidrs):
            return name
    for port in ports:
        if any(c.split("/")[0] == server_address for c in port.ipv4):
            return port.netdev
    return None
