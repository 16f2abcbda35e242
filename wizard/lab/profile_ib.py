"""The ib-seed003 host profiles: seed 003's V100 and A100 nodes on InfiniBand (../shared/seeds/003_*).

V100 nodes: one dual-port 100G card (ConnectX-5 VPI, EDR), its two ports cabled to two 36-port IB switches. A100
nodes: two single-port 200G cards (ConnectX-6 VPI, HDR; the seed's ibstat shows CA type MT4123). Both run
InfiniBand, so the ports' netdevs are IPoIB interfaces named by systemd's predictable scheme with the "ib" prefix
(ibp94s0f0; udev's net_id builtin uses "ib" for ARPHRD_INFINIBAND, systemd src/udev/udev-builtin-net_id.c).

Which profile a host gets is decided by its name: a name containing "a100" is an A100 node, any other a V100 node,
so answers can name the hosts as the seed's inventory does ([ib-v100], [ib-a100]).
"""

from __future__ import annotations

from dataclasses import replace

from wizard.lab.profile import BASE_MODULES, CardSpec, GpuSpec, HostProfile, NicModel, PortSpec, _mac, _uuid, x710_mgmt

# MCX556A-ECAT: ConnectX-5 VPI, EDR IB and 100GbE, dual-port QSFP28 (PCI 15b3:1017, CA type MT4119).
CONNECTX5_VPI = NicModel(
    device_id="1017",
    lspci_name="MT27800 Family [ConnectX-5]",
    ca_type="MT4119",
    vendor_part_id=4119,
    board_id="MT_0000000008",
    description="ConnectX-5 VPI adapter card; EDR IB (100Gb/s) and 100GbE; dual-port QSFP28; PCIe3.0 x16",
    part_prefix="MT1823X0",
    speed_mbps=100000,
    lanes=4,
    link_layer="InfiniBand",
    max_mtu=4092,
    fec_modes="RS",
    link_modes=("100000baseCR4/Full",),
    rate_width="4X EDR",
)

# MCX653105A-HDAT: ConnectX-6 VPI, HDR IB and 200GbE, single-port QSFP56 (PCI 15b3:101b, CA type MT4123 as in the
# seed's ibstat of an A100 node).
CONNECTX6_VPI = NicModel(
    device_id="101b",
    lspci_name="MT28908 Family [ConnectX-6]",
    ca_type="MT4123",
    vendor_part_id=4123,
    board_id="MT_0000000223",
    description="ConnectX-6 VPI adapter card; HDR IB (200Gb/s) and 200GbE; single-port QSFP56; PCIe4.0 x16",
    part_prefix="MT2048X1",
    speed_mbps=200000,
    lanes=4,
    link_layer="InfiniBand",
    max_mtu=4092,
    fec_modes="RS",
    link_modes=("200000baseCR4/Full",),
    rate_width="4X HDR",
)

V100_MIB = 32768  # nvidia-smi memory.total of a Tesla V100-SXM2-32GB
A100_MIB = 81920  # nvidia-smi memory.total of an A100-SXM4-80GB


def is_a100(name: str) -> bool:
    return "a100" in name.lower()


def _gpus(host_index: int, seed: str, name: str, mib: int, cap: str, power: int, buses: tuple[str, ...]) -> tuple:
    return tuple(
        GpuSpec(
            index=i,
            name=name,
            pci=f"0000:{bus}:00.0",
            memory_mib=mib,
            numa_node=0 if i < 4 else 1,
            pcie_switch=f"plx{i // 2}",
            uuid=_uuid(f"{seed}-{host_index}-gpu{i}"),
            compute_cap=cap,
            power_cap_w=power,
        )
        for i, bus in enumerate(buses)
    )


def v100_profile(host_index: int, *, seed: str = "v100") -> HostProfile:
    """A V100 node: 8 x Tesla V100-SXM2-32GB and one dual-port ConnectX-5 VPI in InfiniBand mode."""
    ports = tuple(
        PortSpec(pci=f"0000:5e:00.{fn}", netdev=f"ibp94s0f{fn}", mac=_mac("98:03:9b", host_index, fn)) for fn in (0, 1)
    )
    card = CardSpec(
        label="A",
        model=CONNECTX5_VPI,
        numa_node=0,
        ports=ports,
        firmware="16.35.4030",
        serial=f"{CONNECTX5_VPI.part_prefix}{host_index % 10000:04d}",
        pcie_switch="plx1",
    )
    # Buses chosen so that each PCIe switch's bridges (three buses below its first) clash with no device: the
    # card shares plx1 with GPU2 and GPU3 (wizard/lab/pcie.py builds the bridges from these labels).
    buses = ("1b", "1c", "5f", "60", "86", "87", "ae", "af")
    return _profile(host_index, (card,), _gpus(host_index, seed, "Tesla V100-SXM2-32GB", V100_MIB, "7.0", 300, buses))


def a100_profile(host_index: int, *, seed: str = "a100") -> HostProfile:
    """An A100 node: 8 x A100-SXM4-80GB and two single-port ConnectX-6 VPI cards in InfiniBand mode."""
    cards = []
    for ci, (bus, numa) in enumerate((("4b", 0), ("b1", 1))):
        port = PortSpec(pci=f"0000:{bus}:00.0", netdev=f"ibp{int(bus, 16)}s0", mac=_mac("b8:ce:f6", host_index, ci))
        cards.append(
            CardSpec(
                label="AB"[ci],
                model=CONNECTX6_VPI,
                numa_node=numa,
                ports=(port,),
                firmware="20.43.2026",  # the firmware DOCA-Host 2.9.1 bundles for ConnectX-6
                serial=f"{CONNECTX6_VPI.part_prefix}{(host_index * 2 + ci) % 10000:04d}",
                pcie_switch=f"plx{ci * 2}",
            )
        )
    buses = ("4c", "4d", "0a", "0b", "b2", "b3", "d0", "d1")  # card A shares plx0 with GPU0-1, card B plx2 with GPU4-5
    gpus = _gpus(host_index, seed, "NVIDIA A100-SXM4-80GB", A100_MIB, "8.0", 400, buses)
    return replace(_profile(host_index, tuple(cards), gpus), nvlinks=12)


def _profile(host_index: int, cards: tuple[CardSpec, ...], gpus: tuple) -> HostProfile:
    return HostProfile(
        os_pretty="Ubuntu 22.04.5 LTS",
        os_version="22.04.5 LTS (Jammy Jellyfish)",
        os_version_id="22.04",
        os_codename="jammy",
        kernel="5.15.0-125-generic",
        arch="x86_64",
        sockets=2,
        cpu_model="Intel(R) Xeon(R) Gold 6248R CPU @ 3.00GHz",
        numa_cpus=("0-23,48-71", "24-47,72-95"),
        mgmt=x710_mgmt(host_index),
        cards=cards,
        gpus=gpus,
        nvidia_driver="550.127.05",
        boot_modules=BASE_MODULES + ("ib_ipoib", "ib_umad"),
        nvlinks=6,
    )


def ib_profile_for(name: str, host_index: int) -> HostProfile:
    return a100_profile(host_index) if is_a100(name) else v100_profile(host_index)
