"""Kernel modules: what exists for the running driver stack, dependencies, load/unload with real errors."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from wizard.lab import gpudirect_dkms

if TYPE_CHECKING:
    from wizard.lab.host import SimHost


@dataclass(frozen=True)
class KMod:
    size: int
    deps: tuple[str, ...] = ()
    stacks: tuple[str, ...] = ("inbox", "doca")  # driver stacks that ship this module
    needs_gpu_driver: bool = False


MODULES: dict[str, KMod] = {
    "i40e": KMod(491520),
    "mlxfw": KMod(36864),
    "psample": KMod(20480),
    "tls": KMod(114688),
    "pci_hyperv_intf": KMod(16384),
    "mlx_compat": KMod(69632, stacks=("doca",)),
    "mlxdevm": KMod(180224, ("mlx_compat",), stacks=("doca",)),
    "mlx5_core": KMod(2170880, ("mlxfw", "psample", "tls", "pci_hyperv_intf")),
    "ib_core": KMod(409600),
    "ib_uverbs": KMod(163840, ("ib_core",)),
    "mlx5_ib": KMod(450560, ("ib_uverbs", "ib_core", "mlx5_core")),
    "ib_cm": KMod(131072, ("ib_core",)),
    "iw_cm": KMod(49152, ("ib_core",)),
    "rdma_cm": KMod(122880, ("iw_cm", "ib_cm", "ib_core")),
    "rdma_ucm": KMod(32768, ("rdma_cm", "ib_uverbs", "ib_core")),
    "ib_ipoib": KMod(135168, ("ib_cm", "ib_core")),
    "ib_umad": KMod(40960, ("ib_core",)),
    "rdma_rxe": KMod(139264, ("ip6_udp_tunnel", "udp_tunnel", "ib_uverbs", "ib_core"), stacks=("inbox",)),
    "ip6_udp_tunnel": KMod(16384),
    "udp_tunnel": KMod(28672),
    "bonding": KMod(196608, ("tls",)),
    "8021q": KMod(40960, ("garp", "mrp")),
    "garp": KMod(20480, ("stp", "llc")),
    "mrp": KMod(20480),
    "stp": KMod(16384, ("llc",)),
    "llc": KMod(16384),
    "configfs": KMod(57344),
    "nvidia": KMod(56807424, needs_gpu_driver=True),
    "nvidia_uvm": KMod(1437696, ("nvidia",), needs_gpu_driver=True),
    "nvidia_modeset": KMod(1241088, ("nvidia",), needs_gpu_driver=True),
    "nvidia_drm": KMod(73728, ("nvidia_modeset",), needs_gpu_driver=True),
    "nvidia_peermem": KMod(16384, ("ib_core", "nvidia"), needs_gpu_driver=True),
}
DOCA_EXTRA_DEPS = {name: ("mlx_compat",) for name in ("mlx5_core", "ib_core", "ib_uverbs", "mlx5_ib", "ib_cm")}
DOCA_BOOT = ("mlx_compat", "mlxdevm", "rdma_ucm", "ib_ipoib", "ib_umad")
RDMA_STACK = (
    "mlx5_core",
    "ib_core",
    "ib_uverbs",
    "mlx5_ib",
    "ib_cm",
    "iw_cm",
    "rdma_cm",
    "rdma_ucm",
    "ib_ipoib",
    "ib_umad",
    "mlx_compat",
    "mlxdevm",
)


class ModError(Exception):
    """modprobe/rmmod failure with the tool's own message."""


def normalize(name: str) -> str:
    return name.replace("-", "_")


def deps_of(host: SimHost, name: str) -> tuple[str, ...]:
    base = MODULES[name].deps
    if host.stack == "doca":
        base = base + DOCA_EXTRA_DEPS.get(name, ())
    return base


def available(host: SimHost, name: str) -> bool:
    mod = MODULES.get(name)
    if mod is None or host.stack not in mod.stacks:
        return False
    return not mod.needs_gpu_driver or bool(host.profile.gpus)


def holders(host: SimHost, name: str) -> list[str]:
    return [m for m in host.modules if name in deps_of(host, m)]


def load(host: SimHost, name: str) -> None:
    """Load ``name`` and its dependencies, like modprobe; raises :class:`ModError` with modprobe's text."""
    name = normalize(name)
    if name in host.modules:
        return
    if not available(host, name):
        raise ModError(f"modprobe: FATAL: Module {name} not found in directory /lib/modules/{host.profile.kernel}")
    for dep in deps_of(host, name):
        load(host, dep)
    if name == "nvidia_peermem":
        _check_peermem(host)
    host.modules.append(name)
    host.on_module_change()


UNKNOWN_SYMBOL = (
    "modprobe: ERROR: could not insert 'nvidia_peermem': Unknown symbol in module, or unknown parameter (see dmesg)"
)


def _check_peermem(host: SimHost) -> None:
    """Whether the on-disk nvidia-peermem.ko links against the ib_core that is loaded (gpudirect_dkms.py sources).

    Built without MLNX_OFED/DOCA present: its init returns -EINVAL (nvidia-peermem.c). Built against DOCA but the
    inbox ib_core is loaded: the peer-memory symbols do not exist (err -2). Built against another DOCA release's
    Module.symvers: "disagrees about version of symbol" (err -22; NVIDIA/gpu-operator issue #2868).
    """
    symvers = gpudirect_dkms.peermem_symvers(host)
    if symvers is None:
        raise ModError(
            f"modprobe: FATAL: Module nvidia_peermem not found in directory /lib/modules/{host.profile.kernel}"
        )
    if host.fault("no_peermem") or (symvers != gpudirect_dkms.NO_PEER_MEMORY and host.stack != "doca"):
        host.kernel_log("nvidia_peermem: Unknown symbol ib_register_peer_memory_client (err -2)")
        raise ModError(UNKNOWN_SYMBOL)
    if symvers == gpudirect_dkms.NO_PEER_MEMORY:
        raise ModError("modprobe: ERROR: could not insert 'nvidia_peermem': Invalid argument")
    if symvers != gpudirect_dkms.ofa_symvers(host):
        for symbol in ("ib_register_peer_memory_client", "ib_unregister_peer_memory_client"):
            host.kernel_log(f"nvidia_peermem: disagrees about version of symbol {symbol}")
            host.kernel_log(f"nvidia_peermem: Unknown symbol {symbol} (err -22)")
        raise ModError(UNKNOWN_SYMBOL)


def unload(host: SimHost, name: str, *, tool: str = "modprobe") -> None:
    name = normalize(name)
    if name not in host.modules:
        if tool == "rmmod":
            raise ModError(f"rmmod: ERROR: Module {name} is not currently loaded")
        raise ModError(f"modprobe: FATAL: Module {name} is not in kernel.")
    users = holders(host, name)
    if users:
        if tool == "rmmod":
            raise ModError(f"rmmod: ERROR: Module {name} is in use by: {' '.join(users)}")
        raise ModError(f"modprobe: FATAL: Module {name} is in use.")
    host.modules.remove(name)
    if tool == "modprobe":
        # modprobe -r also removes dependencies nothing else uses any more
        for dep in deps_of(host, name):
            if dep in host.modules and not holders(host, dep):
                try:
                    unload(host, dep)
                except ModError:
                    pass
    host.on_module_change()


def boot_set(host: SimHost) -> list[str]:
    """Modules loaded at boot before modules-load.d: the profile's set, with DOCA's extras if active."""
    names = list(host.profile.boot_modules)
    if host.stack == "doca":
        names = list(DOCA_BOOT) + names
    out: list[str] = []
    for n in names:
        if available(host, n):
            _with_deps(host, n, out)
    return out


def _with_deps(host: SimHost, name: str, out: list[str]) -> None:
    if name in out:
        return
    for dep in deps_of(host, name):
        if available(host, dep):
            _with_deps(host, dep, out)
    out.append(name)


def lsmod_text(host: SimHost) -> str:
    lines = ["Module                  Size  Used by"]
    for name in reversed(host.modules):
        users = holders(host, name)
        line = f"{name:<19} {MODULES[name].size:>8}  {len(users)}"
        if users:
            line += " " + ",".join(users)
        lines.append(line)
    return "\n".join(lines) + "\n"


def proc_modules(host: SimHost) -> str:
    lines = []
    for name in reversed(host.modules):
        users = holders(host, name)
        used = ",".join(users) + "," if users else "-"
        lines.append(f"{name} {MODULES[name].size} {len(users)} {used} Live 0x0000000000000000")
    return "\n".join(lines) + "\n"
