"""What the gpudirect stage reads on a host, which GPUDirect RDMA path it supports, and the GPU<->NIC paths."""

from __future__ import annotations

import re
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

PEERMEM_CONF = "/etc/modules-load.d/nvidia-peermem.conf"
OPEN_LICENSE = "Dual MIT/GPL"  # modinfo -F license nvidia of the open GPU kernel modules ("NVIDIA": proprietary)
DMABUF_MIN_KERNEL = (5, 12)  # ibv_reg_dmabuf_mr in the RDMA core
DMABUF_MIN_DRIVER = 515  # CUDA 11.7, the first driver branch with open kernel modules and DMA-BUF export
# NCCL's default NCCL_NET_GDR_LEVEL is PXB (src/graph/paths.cc): GPUDirect only when GPU and NIC share a PCIe switch.
GDR_DEFAULT_PATHS = ("PIX", "PXB")
PATH_RANK = {"PIX": 0, "PXB": 1, "PHB": 2, "NODE": 3, "SYS": 4, "SOC": 4}

Mode = Literal["dmabuf", "peermem", "off"]


class _Model(BaseModel):
    model_config = ConfigDict(extra="forbid")


class GpuPath(_Model):
    """The closest RDMA NIC of one GPU and the PCIe path between them, as nvidia-smi topo -m prints it."""

    gpu: int
    nics: list[str]  # RDMA devices at the closest distance
    path: str  # PIX, PXB, PHB, NODE, SYS


class Rail(_Model):
    """One RoCE port usable for a cross-host GPU test: device, its IPv4 and the GPU closest to it."""

    device: str
    netdev: str
    ipv4: str  # CIDR
    gpu: int | None = None
    gid_index: int | None = None  # RoCE v2 IPv4 GID


class GpuDirectFacts(_Model):
    gpus: int = 0
    driver_version: str | None = None
    license: str | None = None
    kernel: str = ""
    ofed_stack: str | None = None  # doca, mlnx_ofed, or None (inbox)
    peermem_available: bool = False
    peermem_loaded: bool = False
    nv_peer_mem_loaded: bool = False
    peermem_conf: str | None = None
    # `modinfo -F depends nvidia-peermem`: ib_core only when it was built against MLNX_OFED/DOCA's peer-memory API
    # (None: not read). Empty means the GPU driver was DKMS-built before the RDMA stack was installed.
    peermem_depends: list[str] | None = None
    nvidia_dkms_package: str | None = None  # the installed nvidia-dkms-<branch>[-server][-open] package
    dkms_status: list[str] = Field(default_factory=list)  # `dkms status nvidia` lines, shown as evidence
    kernel_headers: bool = True  # /lib/modules/<kernel>/build exists (DKMS needs it to rebuild)
    kernel_log: list[str] = Field(default_factory=list)  # dmesg lines about nvidia_peermem
    paths: list[GpuPath] = Field(default_factory=list)
    perftest_error: str | None = None  # ib_write_bw could not run at all (not installed)
    perftest_cuda: bool = False  # built with CUDA: --use_cuda in its usage
    perftest_dmabuf: bool = False  # and with DMA-BUF: --use_cuda_dmabuf
    rails: list[Rail] = Field(default_factory=list)


def kernel_version(release: str) -> tuple[int, int]:
    """``5.15.0-125-generic`` -> (5, 15); (0, 0) when unreadable."""
    match = re.match(r"^(\d+)\.(\d+)", release.strip())
    return (int(match.group(1)), int(match.group(2))) if match else (0, 0)


def driver_branch(version: str | None) -> int:
    """``550.127.05`` -> 550; 0 when unknown."""
    match = re.match(r"^(\d+)", (version or "").strip())
    return int(match.group(1)) if match else 0


def dmabuf_gaps(facts: GpuDirectFacts) -> list[str]:
    """Why DMA-BUF GPUDirect RDMA is not available on this host (empty: it is)."""
    gaps = []
    if kernel_version(facts.kernel) < DMABUF_MIN_KERNEL:
        gaps.append(f"kernel {facts.kernel} is older than 5.12")
    if facts.license != OPEN_LICENSE:
        gaps.append(
            f"the NVIDIA driver uses the proprietary kernel modules (modinfo license {facts.license!r}); "
            "DMA-BUF export needs the open GPU kernel modules"
        )
    if driver_branch(facts.driver_version) < DMABUF_MIN_DRIVER:
        gaps.append(f"NVIDIA driver {facts.driver_version} is older than R{DMABUF_MIN_DRIVER} (CUDA 11.7)")
    return gaps


def peermem_gaps(facts: GpuDirectFacts) -> list[str]:
    """Why nvidia-peermem cannot work on this host (empty: it can)."""
    gaps = []
    if facts.ofed_stack not in ("doca", "mlnx_ofed"):
        gaps.append(
            "nvidia-peermem needs the peer-memory API of DOCA-OFED/MLNX_OFED and this host runs the inbox RDMA stack "
            "(loading it fails with 'Unknown symbol ib_register_peer_memory_client')"
        )
    if not facts.peermem_available:
        gaps.append(
            f"the NVIDIA driver {facts.driver_version or ''} ships no nvidia-peermem module (R470 or later has it)"
        )
    return gaps


def choose_mode(facts: GpuDirectFacts, requested: str) -> tuple[Mode, list[str]]:
    """The GPUDirect path to use for ``requested`` (auto/dmabuf/peermem/off) and blockers (empty when usable)."""
    if requested == "off":
        return "off", []
    dmabuf, peermem = dmabuf_gaps(facts), peermem_gaps(facts)
    if requested == "dmabuf" or (requested == "auto" and not dmabuf):
        return "dmabuf", ["DMA-BUF is not available: " + "; ".join(dmabuf)] if dmabuf else []
    if requested == "peermem" or not peermem:
        blockers = ["nvidia-peermem cannot be used: " + "; ".join(peermem)] if peermem else []
        return "peermem", blockers
    return "peermem", [
        "no GPUDirect RDMA path: DMA-BUF is not available (" + "; ".join(dmabuf) + ") and nvidia-peermem cannot be "
        "used (" + "; ".join(peermem) + ")"
    ]


def gpu_paths(topo: object, devices: set[str]) -> list[GpuPath]:
    """Closest RDMA NIC per GPU from a parsed ``nvidia-smi topo -m`` (only NICs in ``devices``, when given)."""
    out = []
    matrix = getattr(topo, "matrix", {})
    for label in getattr(topo, "gpus", []):
        row = matrix.get(label, {})
        ranked = []
        for column in getattr(topo, "nics", []):
            name = topo.nic_device(column)  # type: ignore[attr-defined]
            code = row.get(column)
            if code in PATH_RANK and (not devices or name in devices):
                ranked.append((PATH_RANK[code], code, name))
        if not ranked:
            continue
        best = min(r for r, _, _ in ranked)
        code = next(c for r, c, _ in ranked if r == best)
        out.append(GpuPath(gpu=int(label[3:]), nics=[n for r, _, n in ranked if r == best], path=code))
    return out


def peermem_kernel_lines(dmesg: str) -> list[str]:
    """The kernel log lines about nvidia-peermem (the last five), e.g. its 'Unknown symbol' failure."""
    lines = [line.strip() for line in dmesg.splitlines() if re.search(r"nvidia[_-]peermem", line)]
    return lines[-5:]


def installed_dkms_package(dpkg_query: str) -> str | None:
    """The installed ``nvidia-dkms-*`` package (nvidia-dkms-550-server, ...-open) from ``dpkg-query -W -f
    '${Package}\\t${Version}\\t${db:Status-Abbrev}\\n' 'nvidia-dkms-*'`` (only ``ii``: installed and configured)."""
    for line in dpkg_query.splitlines():
        parts = line.split("\t")
        if len(parts) >= 3 and parts[0].startswith("nvidia-dkms-") and parts[2].startswith("ii"):
            return parts[0].split(":")[0]
    return None
