"""Hardware/OS profiles of simulated hosts, as plain data (the reference profile is seed 000's L20 server)."""

from __future__ import annotations

import hashlib
from dataclasses import dataclass, field
from functools import cached_property


@dataclass(frozen=True)
class NicModel:
    """One adapter model as lspci, sysfs and the RDMA tools describe it."""

    device_id: str  # PCI device id, hex without 0x ("1015")
    lspci_name: str  # "MT27710 Family [ConnectX-4 Lx]"
    ca_type: str  # "MT4117" (ibstat CA type, = MT + decimal device id)
    vendor_part_id: int  # 4117
    board_id: str  # PSID, "MT_2420110034"
    description: str  # VPD product name as ibdev2netdev -v prints it
    part_prefix: str  # serial prefix for VPD ("MT2138K1")
    speed_mbps: int = 25000
    lanes: int = 1
    link_layer: str = "Ethernet"  # or "InfiniBand"
    max_mtu: int = 9978
    driver: str = "mlx5_core"
    fec_modes: str = "None        RS      BASER"
    link_modes: tuple[str, ...] = (
        "1000baseKX/Full",
        "10000baseKR/Full",
        "25000baseCR/Full",
        "25000baseKR/Full",
        "25000baseSR/Full",
    )
    rate_width: str = "1X EDR"  # IB-style width/speed label of the RDMA port rate ("400 Gb/sec (4X NDR)")


CONNECTX4_LX = NicModel(
    device_id="1015",
    lspci_name="MT27710 Family [ConnectX-4 Lx]",
    ca_type="MT4117",
    vendor_part_id=4117,
    board_id="MT_2420110034",
    description="CX4121A - ConnectX-4 LX SFP28",
    part_prefix="MT2138K1",
)


# ConnectX-7 (PCI 15b3:1021, lspci "MT2910 Family [ConnectX-7]", CA type MT4129) at 400GbE over 4 x 100G PAM4
# lanes; firmware 28.x (e.g. 28.39.3560 in ethtool -i of a real CX7, tests/fixtures/real-outputs/ethtool_i/
# lg-cmc-cx7-mofed2310-9.txt). Rate labels as the kernel prints them for 4 lanes at 100G: "400 Gb/sec (4X NDR)".
CONNECTX7 = NicModel(
    device_id="1021",
    lspci_name="MT2910 Family [ConnectX-7]",
    ca_type="MT4129",
    vendor_part_id=4129,
    board_id="MT_0000000838",
    description="NVIDIA ConnectX-7 HHHL Adapter Card, 400GbE / NDR IB (default mode), Single-port OSFP, PCIe 5.0 x16",
    part_prefix="MT2333X0",
    speed_mbps=400000,
    lanes=4,
    max_mtu=9978,
    fec_modes="RS",
    link_modes=(
        "100000baseKR2/Full",
        "100000baseSR2/Full",
        "100000baseCR2/Full",
        "200000baseKR4/Full",
        "200000baseSR4/Full",
        "200000baseCR4/Full",
        "400000baseCR4/Full",
        "400000baseKR4/Full",
        "400000baseSR4/Full",
        "400000baseDR4/Full",
    ),
    rate_width="4X NDR",
)


@dataclass(frozen=True)
class PortSpec:
    """One physical port: on ConnectX-4 and later its own PCI function, netdev and RDMA device."""

    pci: str  # "0000:3b:00.0"
    netdev: str  # "ens1f0np0"
    mac: str

    @property
    def bus(self) -> int:
        return int(self.pci.split(":")[1], 16)

    @property
    def slot(self) -> int:
        return int(self.pci.split(":")[2].split(".")[0], 16)

    @property
    def function(self) -> int:
        return int(self.pci.rsplit(".", 1)[1])

    @property
    def domain(self) -> int:
        return int(self.pci.split(":")[0], 16)


@dataclass(frozen=True)
class CardSpec:
    """One adapter card with its ports (in function order)."""

    label: str  # "A"
    model: NicModel
    numa_node: int
    ports: tuple[PortSpec, ...]
    firmware: str
    serial: str
    pcie_switch: str  # devices behind the same PCIe switch are PXB to each other (same card: PIX)


@dataclass(frozen=True)
class GpuSpec:
    index: int
    name: str
    pci: str  # "0000:38:00.0"
    memory_mib: int
    numa_node: int
    pcie_switch: str
    uuid: str
    compute_cap: str = "8.9"
    power_cap_w: int = 350


@dataclass(frozen=True)
class MgmtNicSpec:
    netdev: str
    pci: str
    mac: str
    driver: str
    lspci: str  # "Ethernet controller [0200]: Intel Corporation Ethernet Controller X710 for 10GbE SFP+ [8086:1572]"
    vendor: str
    device: str
    firmware: str
    speed_mbps: int
    numa_node: int


@dataclass(frozen=True)
class HostProfile:
    """Everything fixed about a host: what a bare machine of this kind looks like."""

    os_pretty: str
    os_version: str
    os_version_id: str
    os_codename: str
    kernel: str
    arch: str
    sockets: int
    cpu_model: str
    numa_cpus: tuple[str, ...]  # cpulist per NUMA node
    mgmt: MgmtNicSpec
    cards: tuple[CardSpec, ...]
    gpus: tuple[GpuSpec, ...]
    nvidia_driver: str
    # Kernel modules loaded at boot before /etc/modules-load.d is read (inbox stack; DOCA adds its own).
    boot_modules: tuple[str, ...]
    ecn_enable_default: int = 0
    cnp_dscp_default: int = 48
    cnp_802p_prio_default: int = 6
    nvlinks: int = 0  # NVLinks bonded between every GPU pair (H100 SXM: 18, "NV18" in nvidia-smi topo -m); 0 = PCIe
    gpu_nic_pix: bool = False  # a GPU behind the same PCIe switch as a NIC is one bridge away (PIX), as on HGX boards
    preinstalled: tuple[str, ...] = ()  # extra Ubuntu packages of the image (rails-16: lldpd, enabled)
    extra: dict[str, str] = field(default_factory=dict)

    @cached_property
    def ports(self) -> tuple[PortSpec, ...]:
        return tuple(p for c in self.cards for p in c.ports)

    def card_of(self, port_index: int) -> CardSpec:
        for card in self.cards:
            if self.ports[port_index] in card.ports:
                return card
        raise IndexError(port_index)

    def cpus_of(self, numa: int) -> str:
        return self.numa_cpus[numa] if 0 <= numa < len(self.numa_cpus) else self.numa_cpus[0]


def _mac(prefix: str, host_index: int, low: int) -> str:
    return f"{prefix}:{(host_index >> 8) & 0xFF:02x}:{host_index & 0xFF:02x}:{low:02x}"


def _uuid(seed: str) -> str:
    h = hashlib.sha256(seed.encode()).hexdigest()
    return f"GPU-{h[:8]}-{h[8:12]}-{h[12:16]}-{h[16:20]}-{h[20:32]}"


BASE_MODULES = (
    "i40e",
    "mlxfw",
    "psample",
    "tls",
    "pci_hyperv_intf",
    "mlx5_core",
    "ib_core",
    "ib_uverbs",
    "mlx5_ib",
    "ib_cm",
    "iw_cm",
    "rdma_cm",
    "nvidia",
    "nvidia_uvm",
    "nvidia_modeset",
    "nvidia_drm",
)


def x710_mgmt(host_index: int) -> MgmtNicSpec:
    """The management NIC both profiles share: an Intel X710 on eno1, apart from the RDMA fabric."""
    return MgmtNicSpec(
        netdev="eno1",
        pci="0000:17:00.0",
        mac=_mac("3c:fd:fe", host_index, 0),
        driver="i40e",
        lspci="Ethernet controller [0200]: Intel Corporation Ethernet Controller X710 for 10GbE SFP+ [8086:1572]"
        " (rev 02)",
        vendor="8086",
        device="1572",
        firmware="9.20 0x8000d95e 1.3429.0",
        speed_mbps=10000,
        numa_node=0,
    )


def reference_profile(host_index: int, *, seed: str = "server") -> HostProfile:
    """The seed-000 server: 2 x L20x8 host with two dual-port ConnectX-4 Lx 25GbE cards.

    ``host_index`` only makes MACs, GUIDs, serials and GPU UUIDs unique per host.
    """
    cards = []
    layout = (("A", "3b", 0, "ens1", "sw0"), ("B", "86", 1, "ens2", "sw1"))
    for ci, (label, bus, numa, prefix, switch) in enumerate(layout):
        ports = tuple(
            PortSpec(
                pci=f"0000:{bus}:00.{fn}",
                netdev=f"{prefix}f{fn}np{fn}",
                mac=_mac("0c:42:a1", host_index, ci * 2 + fn),
            )
            for fn in (0, 1)
        )
        cards.append(
            CardSpec(
                label=label,
                model=CONNECTX4_LX,
                numa_node=numa,
                ports=ports,
                firmware="14.32.1010",
                serial=f"{CONNECTX4_LX.part_prefix}{(host_index * 2 + ci) % 10000:04d}",
                pcie_switch=switch,
            )
        )
    # GPU0-3 sit behind card A's PCIe switch (NUMA 0), GPU4-7 behind card B's (NUMA 1).
    gpu_slots = (
        ("38", 0, "sw0"),
        ("39", 0, "sw0"),
        ("3c", 0, "sw0"),
        ("3d", 0, "sw0"),
        ("83", 1, "sw1"),
        ("84", 1, "sw1"),
        ("87", 1, "sw1"),
        ("88", 1, "sw1"),
    )
    gpus = tuple(
        GpuSpec(
            index=i,
            name="NVIDIA L20",
            pci=f"0000:{bus}:00.0",
            memory_mib=46068,
            numa_node=numa,
            pcie_switch=sw,
            uuid=_uuid(f"{seed}-{host_index}-gpu{i}"),
        )
        for i, (bus, numa, sw) in enumerate(gpu_slots)
    )
    mgmt = x710_mgmt(host_index)
    return HostProfile(
        os_pretty="Ubuntu 22.04.5 LTS",
        os_version="22.04.5 LTS (Jammy Jellyfish)",
        os_version_id="22.04",
        os_codename="jammy",
        kernel="5.15.0-125-generic",
        arch="x86_64",
        sockets=2,
        cpu_model="Intel(R) Xeon(R) Gold 6530",
        numa_cpus=("0-31,64-95", "32-63,96-127"),
        mgmt=mgmt,
        cards=tuple(cards),
        gpus=gpus,
        nvidia_driver="550.127.05",
        boot_modules=BASE_MODULES,
    )
