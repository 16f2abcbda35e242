"""The rails-16 host profile: an HGX H100 8-GPU server with eight single-port ConnectX-7 400GbE, one per rail."""

from __future__ import annotations

from wizard.lab.profile import (
    BASE_MODULES,
    CONNECTX7,
    CardSpec,
    GpuSpec,
    HostProfile,
    PortSpec,
    _mac,
    _uuid,
    x710_mgmt,
)

# PCI buses of an HGX H100 board (DGX H100 layout: its ConnectX-7 ports are ibp24s0 .. ibp220s0 in IB mode).
# Each (NIC, GPU) pair sits behind one PCIe switch, so NCCL sees the NIC nearest each GPU as PIX. NICs and GPUs
# 0-3 hang off socket 0, 4-7 off socket 1.
NIC_BUSES = ("18", "40", "4f", "5e", "9a", "c0", "ce", "dc")
GPU_BUSES = ("1b", "43", "52", "61", "9d", "c3", "d1", "df")
H100_MIB = 81559  # nvidia-smi memory.total of an H100 80GB HBM3


def rails16_profile(host_index: int, *, seed: str = "gpu") -> HostProfile:
    """One host of the rails-16 fabric; ``host_index`` (0-based) only makes MACs, serials and UUIDs unique."""
    cards = []
    gpus = []
    for rail, (nic_bus, gpu_bus) in enumerate(zip(NIC_BUSES, GPU_BUSES, strict=True)):
        numa = 0 if rail < 4 else 1
        bus = int(nic_bus, 16)
        port = PortSpec(pci=f"0000:{nic_bus}:00.0", netdev=f"enp{bus}s0np0", mac=_mac("94:6d:ae", host_index, rail))
        cards.append(
            CardSpec(
                label=f"R{rail}",
                model=CONNECTX7,
                numa_node=numa,
                ports=(port,),
                firmware="28.43.2026",  # the firmware DOCA-Host 2.9.1 bundles for ConnectX-7
                serial=f"{CONNECTX7.part_prefix}{(host_index * 8 + rail) % 10000:04d}",
                pcie_switch=f"plx{rail}",
            )
        )
        gpus.append(
            GpuSpec(
                index=rail,
                name="NVIDIA H100 80GB HBM3",
                pci=f"0000:{gpu_bus}:00.0",
                memory_mib=H100_MIB,
                numa_node=numa,
                pcie_switch=f"plx{rail}",
                uuid=_uuid(f"{seed}-{host_index}-gpu{rail}"),
                compute_cap="9.0",
                power_cap_w=700,
            )
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
        cpu_model="Intel(R) Xeon(R) Platinum 8480C",
        numa_cpus=("0-55,112-167", "56-111,168-223"),
        mgmt=mgmt,
        cards=tuple(cards),
        gpus=tuple(gpus),
        nvidia_driver="550.127.05",
        boot_modules=BASE_MODULES,
        nvlinks=18,
        gpu_nic_pix=True,
        preinstalled=("lldpd",),
    )
