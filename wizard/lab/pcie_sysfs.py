"""/sys/devices/pciDDDD:BB/... bridge directories and /sys/kernel/iommu_groups of a simulated host.

Layout as the kernel builds it (Documentation/ABI/testing/sysfs-kernel-iommu_groups): each group directory has
``devices/<bdf>`` links and, since Linux 5.11, a ``type`` file (DMA, DMA-FQ, identity, ...); no IOMMU, no groups.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from wizard.lab import pcie
from wizard.lab.sysfs_util import _const, _dir
from wizard.lab.vfs import DynDir, Node, Symlink

if TYPE_CHECKING:
    from wizard.lab.host import SimHost
    from wizard.lab.sysfs import Sysfs


def host_bridges(sysfs: Sysfs) -> dict[str, Node]:
    """``pciDDDD:BB`` directories holding root ports, switch ports and endpoints, nested."""
    topo = pcie.topology(sysfs.host.profile)

    def node(addr: str) -> Node:
        port = topo.ports.get(addr)
        if port is None:
            return sysfs._pci_device(addr)

        def entries() -> dict[str, Node]:
            out: dict[str, Node] = {child: node(child) for child in port.children}
            out.update(
                {
                    "class": _const("0x060400"),
                    "vendor": _const("0x" + pcie.BRIDGE_IDS[port.kind][0]),
                    "device": _const("0x" + pcie.BRIDGE_IDS[port.kind][1]),
                    "driver": Symlink("/sys/bus/pci/drivers/pcieport"),
                }
            )
            group = pcie.iommu_group_of(sysfs.host, addr)
            if group is not None:
                out["iommu_group"] = Symlink(f"/sys/kernel/iommu_groups/{group}")
            return out

        return _dir(entries)

    return {name: _dir(lambda roots=roots: {r: node(r) for r in roots}) for name, roots in topo.roots.items()}


def iommu_groups_dir(host: SimHost) -> DynDir:
    def groups() -> dict[str, Node]:
        topo = pcie.topology(host.profile)
        out: dict[str, Node] = {}
        for number, members in pcie.iommu_groups(host).items():
            links = {m: Symlink(topo.sysfs_path(m)) for m in members}
            # intel_iommu=on without iommu=pt: translated DMA with lazy flush (DMA-FQ, the 5.15+ default)
            out[str(number)] = _dir(lambda links=links: {"devices": _dir(lambda: links), "type": _const("DMA-FQ")})
        return out

    return _dir(groups)
