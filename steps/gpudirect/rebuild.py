"""Whether nvidia-peermem must be rebuilt because the GPU driver was DKMS-built before the RDMA stack, and how.

NVIDIA Linux driver README, chapter "GPUDirect RDMA Peer Memory Client": "If the NVIDIA GPU driver is installed
before MLNX_OFED, the GPU driver must be uninstalled and installed again to make sure nvidia-peermem is compiled
with the RDMA APIs that are provided by MLNX_OFED." The module's Kbuild (NVIDIA/open-gpu-kernel-modules
kernel-open/nvidia-peermem/nvidia-peermem.Kbuild) links against /usr/src/ofa_kernel/<arch>/<kernel>/Module.symvers
only if that tree exists at build time; otherwise nvidia-peermem.c compiles to a stub whose init returns -EINVAL and
which references no ib_core symbol, so ``modinfo -F depends nvidia-peermem`` lacks ib_core. A build made against
another DOCA/MLNX_OFED release is refused with "disagrees about version of symbol ib_register_peer_memory_client".
"""

from __future__ import annotations

from steps.gpudirect.facts import GpuDirectFacts
from steps.ofed.repo import apt
from wizard.engine.step import Change, Impact

STALE_SYMBOLS = "disagrees about version of symbol ib_register_peer_memory_client"
REBUILD_TIMEOUT_S = 1800.0  # DKMS compiles five NVIDIA modules: minutes, more on small hosts


def rebuild_reason(facts: GpuDirectFacts) -> str | None:
    """Why the on-disk nvidia-peermem cannot work with the installed RDMA stack (None: it can, or we cannot tell)."""
    if facts.peermem_loaded or facts.ofed_stack not in ("doca", "mlnx_ofed"):
        return None
    if facts.peermem_depends is not None and "ib_core" not in facts.peermem_depends:
        return (
            "nvidia-peermem was built without the peer-memory API (modinfo -F depends nvidia-peermem: "
            f"{','.join(facts.peermem_depends) or 'empty'}, no ib_core): the NVIDIA driver was DKMS-built before "
            "DOCA-OFED/MLNX_OFED was installed, so loading it fails with 'Invalid argument'"
        )
    if any(STALE_SYMBOLS in line for line in facts.kernel_log):
        return (
            "nvidia-peermem was built against another DOCA-OFED/MLNX_OFED release (kernel log: "
            f"'nvidia_peermem: {STALE_SYMBOLS}')"
        )
    return None


def rebuild_change(host: str, facts: GpuDirectFacts, reason: str) -> Change:
    """Reinstall the nvidia-dkms package: its scripts remove the DKMS build and build it again against DOCA."""
    package = facts.nvidia_dkms_package or ""
    headers = [] if facts.kernel_headers else [f"linux-headers-{facts.kernel}"]
    commands = [apt("install", "-y", *headers, timeout_s=REBUILD_TIMEOUT_S)] if headers else []
    commands.append(apt("install", "--reinstall", "-y", package, timeout_s=REBUILD_TIMEOUT_S))
    return Change(
        summary=f"Rebuild the NVIDIA driver's kernel modules against the installed RDMA stack ({package} reinstall)",
        why=(
            f"{reason}. NVIDIA's driver README (GPUDirect RDMA Peer Memory Client): a GPU driver installed before "
            "MLNX_OFED/DOCA must be installed again. Reinstalling the package makes DKMS rebuild nvidia, nvidia-uvm, "
            "nvidia-modeset, nvidia-drm and nvidia-peermem for kernel "
            f"{facts.kernel} with DOCA's Module.symvers. Disruptive: a few minutes of compiling, and the module files "
            "on disk are replaced (if the build fails the GPU driver will not load after the next reboot), so do it "
            "with GPU jobs stopped. No reboot: the loaded nvidia.ko keeps running and nvidia-peermem is not loaded, so "
            "modprobe loads the rebuilt file, which links against the loaded nvidia.ko of the same version"
        ),
        impact=Impact.DISRUPTIVE,
        commands=commands,
    )


def rebuild_blocker(host: str, facts: GpuDirectFacts, reason: str) -> str | None:
    """The driver is not a DKMS package (runfile, prebuilt linux-modules-nvidia): say how to fix it by hand."""
    if facts.nvidia_dkms_package:
        return None
    return (
        f"{host}: {reason}; the NVIDIA driver is not installed from an nvidia-dkms-* package, so it cannot be rebuilt "
        "here; fix: install the NVIDIA driver again the way it was installed (re-run its .run installer, or dkms "
        "remove/install its module) now that DOCA-OFED is installed, or use DMA-BUF (gpudirect.mode: dmabuf with the "
        "open GPU kernel modules, kernel >= 5.12)"
    )


def dmabuf_alternative(facts: GpuDirectFacts) -> str:
    """The operator's other option, stated with this host's numbers."""
    return (
        f"alternative to the rebuild: DMA-BUF needs no nvidia-peermem; kernel {facts.kernel} allows it, but it needs "
        "the open GPU kernel modules (e.g. nvidia-dkms-<branch>-server-open, driver >= R515), a GPU driver flavour "
        "change with a reboot, so it is not done automatically (set gpudirect.mode: dmabuf after switching)"
    )
