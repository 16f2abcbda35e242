"""The NVIDIA driver's DKMS modules on a simulated disk, what nvidia-peermem was built against, and ``dkms``.

Real behaviour modelled (sources):
- NVIDIA Linux driver README, chapter "GPUDirect RDMA Peer Memory Client": "If the NVIDIA GPU driver is installed
  before MLNX_OFED, the GPU driver must be uninstalled and installed again to make sure nvidia-peermem is compiled
  with the RDMA APIs that are provided by MLNX_OFED."
- NVIDIA/open-gpu-kernel-modules kernel-open/nvidia-peermem/nvidia-peermem.Kbuild: the build uses MLNX_OFED's
  headers and Module.symvers (/usr/src/ofa_kernel/<arch>/<kernel>, installed by mlnx-ofed-kernel-dkms) only when
  they exist at build time; nvidia-peermem.c: without the conftest's NV_MLNX_IB_PEER_MEM_SYMBOLS_PRESENT the
  module references no ib_* symbol (``modinfo -F depends`` is empty) and its init is ``return -EINVAL``.
- dkms(8) (dkms 2.8/3.0, Ubuntu): build tree /var/lib/dkms/<module>/<version>/<kernel>/<arch>/module, installed
  copies in /lib/modules/<kernel>/updates/dkms, ``dkms status`` lines ``nvidia/550.127.05, <kernel>, x86_64:
  installed``; ``autoinstall`` only builds modules not yet installed for the kernel.
A rebuilt module changes the file on disk only; the copy a running kernel loaded stays until unloaded or rebooted.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from wizard.lab.host import SimHost

ARCH = "x86_64"
NVIDIA_KOS = ("nvidia", "nvidia-uvm", "nvidia-modeset", "nvidia-drm", "nvidia-peermem")
OFED_KERNEL_PKG = "mlnx-ofed-kernel-dkms"
PEER_KEY = "peer_memory_symvers: "  # what the simulated nvidia-peermem.ko was linked against
NO_PEER_MEMORY = "none"


def is_nvidia_dkms(name: str) -> bool:
    """nvidia-dkms-550-server, nvidia-dkms-550-server-open, nvidia-dkms-550 ..."""
    return name.startswith("nvidia-dkms-")


def driver_version(host: SimHost) -> str:
    return host.profile.nvidia_driver


def _build_dir(host: SimHost, kernel: str) -> str:
    return f"/var/lib/dkms/nvidia/{driver_version(host)}/{kernel}/{ARCH}"


def _installed_dir(kernel: str) -> str:
    return f"/lib/modules/{kernel}/updates/dkms"


def ofa_symvers(host: SimHost) -> str:
    """What the Kbuild finds now: DOCA/MLNX_OFED's kernel package version, or ``none`` without it."""
    return host.packages.get(OFED_KERNEL_PKG) or NO_PEER_MEMORY


def _ko(host: SimHost, name: str, kernel: str, against: str) -> str:
    text = (
        f"# simulated kernel module {name}.ko {driver_version(host)}\nvermagic: {kernel} SMP mod_unload modversions\n"
    )
    return text + (f"{PEER_KEY}{against}\n" if name == "nvidia-peermem" else "")


def build(host: SimHost, kernel: str) -> None:
    """``dkms build``: compile the driver's modules for ``kernel`` against the RDMA stack present now."""
    against = ofa_symvers(host)
    for name in NVIDIA_KOS:
        host.fs.install(f"{_build_dir(host, kernel)}/module/{name}.ko", _ko(host, name, kernel, against))


def built(host: SimHost, kernel: str) -> bool:
    return host.fs.exists(f"{_build_dir(host, kernel)}/module/nvidia.ko")


def installed(host: SimHost, kernel: str) -> bool:
    return host.fs.exists(f"{_installed_dir(kernel)}/nvidia.ko")


def install(host: SimHost, kernel: str) -> None:
    """``dkms install``: build when needed, copy the modules to updates/dkms (depmod picks them first)."""
    if not built(host, kernel):
        build(host, kernel)
    for name in NVIDIA_KOS:
        data = host.fs.read_text(f"{_build_dir(host, kernel)}/module/{name}.ko")
        host.fs.install(f"{_installed_dir(kernel)}/{name}.ko", data)


def remove(host: SimHost, kernel: str | None = None) -> None:
    """``dkms remove`` for one kernel (or ``--all``): the installed copies and the build tree go."""
    kernels = [kernel] if kernel else _kernels(host)
    for k in kernels:
        for name in NVIDIA_KOS:
            for path in (f"{_installed_dir(k)}/{name}.ko", f"{_build_dir(host, k)}/module/{name}.ko"):
                if host.fs.lookup(path, follow=False) is not None:
                    host.fs.remove(path)


def _kernels(host: SimHost) -> list[str]:
    base = f"/var/lib/dkms/nvidia/{driver_version(host)}"
    try:
        return [k for k in host.fs.listdir(base) if built(host, k)]
    except OSError:
        return []


def provision(host: SimHost) -> None:
    """A host image whose driver was installed (and DKMS-built) with what is on the image right now."""
    kernel = host.profile.kernel
    remove(host, kernel)
    install(host, kernel)


def peermem_file(host: SimHost) -> str | None:
    """The nvidia-peermem.ko modprobe would load: DKMS's updates/dkms copy first (depmod's search order)."""
    kernel = host.profile.kernel
    for path in (
        f"{_installed_dir(kernel)}/nvidia-peermem.ko",
        f"/lib/modules/{kernel}/kernel/drivers/video/nvidia-peermem.ko",
    ):
        if host.fs.exists(path):
            return path
    return None


def peermem_symvers(host: SimHost) -> str | None:
    """What the on-disk nvidia-peermem.ko was built against (``none``: no peer-memory API), None when absent."""
    path = peermem_file(host)
    if path is None:
        return None
    for line in host.fs.read_text(path).splitlines():
        if line.startswith(PEER_KEY):
            return line[len(PEER_KEY) :].strip()
    return NO_PEER_MEMORY


def status_lines(host: SimHost) -> list[str]:
    lines = []
    for k in _kernels(host):
        state = "installed" if installed(host, k) else "built"
        lines.append(f"nvidia/{driver_version(host)}, {k}, {ARCH}: {state}")
    kver = host.packages.get(OFED_KERNEL_PKG)
    if kver:
        lines.append(f"mlnx-ofed-kernel/{kver.rsplit('-', 1)[0]}, {host.profile.kernel}, {ARCH}: installed")
    return lines


def build_messages(host: SimHost, kernel: str) -> list[str]:
    """What the nvidia-dkms postinst / ``dkms install`` print for a build (dkms 2.8 wording, shortened)."""
    out = [
        f"Loading new nvidia-{driver_version(host)} DKMS files...",
        f"Building for {kernel}",
        f"Building for architecture {ARCH}",
        f"Building initial module for {kernel}",
        "Done.",
    ]
    for name in NVIDIA_KOS:
        out += [
            "",
            f"{name.replace('-', '_')}.ko:",
            "Running module version sanity check.",
            " - Original module",
            "   - No original module exists within this kernel",
            " - Installation",
            f"   - Installing to {_installed_dir(kernel)}/",
        ]
    return out + ["", "depmod...."]
