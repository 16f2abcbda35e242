"""/sys of a simulated host, computed from its state on every look (net, infiniband, pci, module)."""

from __future__ import annotations

import errno
from collections.abc import Callable
from typing import TYPE_CHECKING

from wizard.lab import pcie, pcie_sysfs, rdma
from wizard.lab.netdevs import BOND_MODES, HASH_POLICIES, Netdev
from wizard.lab.sysfs_rdma import RdmaSysfs
from wizard.lab.sysfs_util import _const, _dir, _int_writer, _ro
from wizard.lab.vfs import DynDir, DynFile, FsError, Node, Symlink

if TYPE_CHECKING:
    from wizard.lab.host import SimHost


class Sysfs(RdmaSysfs):
    """Builds the /sys tree lazily; every directory lists what the host state holds right now."""

    def __init__(self, host: SimHost) -> None:
        self.host = host
        p = host.profile
        self._pci = sorted([p.mgmt.pci] + [port.pci for port in p.ports] + [g.pci for g in p.gpus])

    # -- layout ----------------------------------------------------------------------------------------------
    def root(self) -> DynDir:
        return _dir(
            lambda: {
                "class": _dir(
                    lambda: {
                        "net": _dir(self._class_net),
                        "infiniband": _dir(self._class_ib),
                    }
                ),
                "bus": _dir(lambda: {"pci": _dir(lambda: {"devices": _dir(self._bus_pci)})}),
                "devices": _dir(lambda: {**pcie_sysfs.host_bridges(self), "virtual": self._virtual()}),
                "module": _dir(self._modules),
                "kernel": _dir(
                    lambda: {"config": _dir(self._configfs), "iommu_groups": pcie_sysfs.iommu_groups_dir(self.host)}
                ),
            }
        )

    def pci_path(self, addr: str) -> str:
        # root port and switch ports above the device, as the kernel nests them (wizard/lab/pcie.py)
        return pcie.topology(self.host.profile).sysfs_path(addr)

    def _pci_devices(self) -> list[str]:
        return self._pci

    def _pci_slot(self, addr: str) -> int:
        return self._pci_devices().index(addr) + 1

    def _class_net(self) -> dict[str, Node]:
        out: dict[str, Node] = {}
        for dev in self.host.netdevs.values():
            out[dev.name] = Symlink(self._netdev_path(dev))
        return out

    def _netdev_path(self, dev: Netdev) -> str:
        if dev.pci:
            return f"{self.pci_path(dev.pci)}/net/{dev.name}"
        return f"/sys/devices/virtual/net/{dev.name}"

    def _class_ib(self) -> dict[str, Node]:
        return {d.name: Symlink(f"{self.pci_path(d.pci)}/infiniband/{d.name}") for d in rdma.devices(self.host)}

    def _bus_pci(self) -> dict[str, Node]:
        return {a: Symlink(self.pci_path(a)) for a in self._pci_devices()}

    def _virtual(self) -> DynDir:
        def nets() -> dict[str, Node]:
            return {d.name: self._netdev_dir(d) for d in self.host.netdevs.values() if not d.pci}

        return _dir(lambda: {"net": _dir(nets)})

    # -- PCI devices -----------------------------------------------------------------------------------------
    def _pci_device(self, addr: str) -> DynDir:
        host = self.host
        p = host.profile
        port = next((x for x in p.ports if x.pci == addr), None)
        gpu = next((g for g in p.gpus if g.pci == addr), None)
        if port is not None:
            card = next(c for c in p.cards if port in c.ports)
            vendor, device, cls, numa, drv = (
                "0x15b3",
                f"0x{card.model.device_id}",
                "0x020000",
                card.numa_node,
                "mlx5_core",
            )
        elif gpu is not None:
            vendor, device, cls, numa, drv = "0x10de", "0x26ba", "0x030200", gpu.numa_node, "nvidia"
        else:
            m = p.mgmt
            vendor, device, cls, numa, drv = f"0x{m.vendor}", f"0x{m.device}", "0x020000", m.numa_node, m.driver

        def entries() -> dict[str, Node]:
            e: dict[str, Node] = {
                "vendor": _const(vendor),
                "device": _const(device),
                "subsystem_vendor": _const(vendor),
                "subsystem_device": _const("0x0016" if port else "0x0000"),
                "class": _const(cls),
                "numa_node": _const(str(numa)),
                "local_cpulist": _const(p.cpus_of(numa)),
                "current_link_speed": _const("8.0 GT/s PCIe" if port else "16.0 GT/s PCIe"),
                "current_link_width": _const("8" if port else "16"),
                "max_link_speed": _const("8.0 GT/s PCIe" if port else "16.0 GT/s PCIe"),
                "enable": _const("1"),
                "resource": _const(
                    f"0x000000{int(addr[5:7], 16):02x}e0000000 0x000000{int(addr[5:7], 16):02x}e1ffffff"
                ),
            }
            group = pcie.iommu_group_of(host, addr)
            if group is not None:
                e["iommu_group"] = Symlink(f"/sys/kernel/iommu_groups/{group}")
            loaded = {"mlx5_core": "mlx5_core", "nvidia": "nvidia"}.get(drv, drv)
            if loaded in host.modules:
                e["driver"] = Symlink(f"/sys/bus/pci/drivers/{drv}")
            nets = {d.name: self._netdev_dir(d) for d in host.netdevs.values() if d.pci == addr}
            if nets:
                e["net"] = _dir(lambda: {d.name: self._netdev_dir(d) for d in host.netdevs.values() if d.pci == addr})
            ibs = [d for d in rdma.devices(host) if d.pci == addr]
            if ibs:
                e["infiniband"] = _dir(lambda: {d.name: self._ib_dir(d) for d in rdma.devices(host) if d.pci == addr})
            return e

        return _dir(entries)

    # -- netdevs ---------------------------------------------------------------------------------------------
    def _netdev_dir(self, dev: Netdev) -> DynDir:
        host = self.host

        def carrier() -> str:
            if not dev.admin_up:
                raise FsError(errno.EINVAL, "")
            return "1" if host.netdev_carrier(dev.name) else "0"

        def speed() -> str:
            if not dev.admin_up:
                raise FsError(errno.EINVAL, "")
            if dev.kind == "loopback":
                raise FsError(errno.EINVAL, "")
            return str(host.netdev_speed(dev.name))

        def set_mtu(value: int) -> None:
            host.set_mtu(dev.name, value)

        def entries() -> dict[str, Node]:
            e: dict[str, Node] = {
                "address": _ro(lambda: dev.mac),
                "addr_len": _const("6"),
                "broadcast": _const("ff:ff:ff:ff:ff:ff"),
                "carrier": DynFile(lambda: carrier() + "\n"),
                "dev_id": _const("0x0"),
                "dev_port": _const("0"),
                "duplex": DynFile(
                    lambda: ("full" if carrier() == "1" and dev.kind != "loopback" else "unknown") + "\n"
                ),
                "flags": _ro(lambda: hex(0x1003 if dev.admin_up else 0x1002)),
                "ifindex": _ro(lambda: str(dev.ifindex)),
                "iflink": _ro(lambda: str(dev.ifindex)),
                "mtu": DynFile(lambda: f"{dev.mtu}\n", _int_writer(68, dev.max_mtu, set_mtu)),
                "operstate": _ro(lambda: host.operstate(dev.name).lower()),
                "speed": DynFile(lambda: speed() + "\n"),
                "tx_queue_len": _const("1000"),
                "type": _const("772" if dev.kind == "loopback" else "1"),
                "statistics": _dir(lambda: {k: _const(str(v)) for k, v in host.netdev_stats(dev.name).items()}),
            }
            if dev.port_index is not None:
                from wizard.lab.flap import carrier_counts

                for key in carrier_counts(host, dev.port_index):
                    e[key] = DynFile(lambda key=key: f"{carrier_counts(host, dev.port_index)[key]}\n")
            if dev.pci:
                e["device"] = Symlink(self.pci_path(dev.pci))
            if dev.master:
                e["master"] = Symlink(f"/sys/devices/virtual/net/{dev.master}")
                e["bonding_slave"] = _dir(lambda: self._bond_slave(dev))
            if dev.kind == "bond":
                e["bonding"] = _dir(lambda: self._bonding(dev))
            if dev.qos is not None and host.stack == "doca":
                e["qos"] = _dir(lambda: self._qos(dev))
                e["ecn"] = _dir(lambda: self._ecn(dev))
            return e

        return _dir(entries)

    def _bonding(self, dev: Netdev) -> dict[str, Node]:
        b = dev.bond
        assert b is not None
        return {
            "mode": _ro(lambda: f"{b.mode} {BOND_MODES[b.mode]}"),
            "slaves": _ro(lambda: " ".join(dev.slaves)),
            "miimon": _ro(lambda: str(b.miimon)),
            "xmit_hash_policy": _ro(lambda: f"{b.xmit_hash_policy} {HASH_POLICIES.get(b.xmit_hash_policy, 0)}"),
            "lacp_rate": _ro(lambda: f"{b.lacp_rate} {1 if b.lacp_rate == 'fast' else 0}"),
            "mii_status": _ro(lambda: "up" if self.host.netdev_carrier(dev.name) else "down"),
        }

    def _bond_slave(self, dev: Netdev) -> dict[str, Node]:
        return {
            "state": _const("active"),
            "mii_status": _ro(lambda: "up" if self.host.netdev_carrier(dev.name) else "down"),
            "perm_hwaddr": _const(dev.perm_mac),
        }

    def _qos(self, dev: Netdev) -> dict[str, Node]:
        q = dev.qos
        assert q is not None

        def set_trust(text: str) -> None:
            value = text.strip()
            if value not in ("pcp", "dscp"):
                raise FsError(errno.EINVAL, "")
            q.trust = value

        return {
            "trust": DynFile(lambda: q.trust + "\n", set_trust),
            "dscp2prio": _ro(lambda: "dscp: prio\n" + "\n".join(f"{d:>4} {p:>4}" for d, p in enumerate(q.dscp2prio))),
        }

    def _ecn(self, dev: Netdev) -> dict[str, Node]:
        q = dev.qos
        assert q is not None

        def enable_dir(values: list[int]) -> DynDir:
            def setter(i: int) -> Callable[[int], None]:
                return lambda v: values.__setitem__(i, v)

            return _dir(
                lambda: {str(i): DynFile(lambda i=i: f"{values[i]}\n", _int_writer(0, 1, setter(i))) for i in range(8)}
            )

        def np_dir() -> dict[str, Node]:
            return {
                "enable": enable_dir(q.ecn_np),
                "cnp_dscp": DynFile(lambda: f"{q.cnp_dscp}\n", _int_writer(0, 63, lambda v: setattr(q, "cnp_dscp", v))),
                "cnp_802p_prio": DynFile(
                    lambda: f"{q.cnp_802p_prio}\n", _int_writer(0, 7, lambda v: setattr(q, "cnp_802p_prio", v))
                ),
                "min_time_between_cnps": _const("4"),
            }

        def rp_dir() -> dict[str, Node]:
            params = {
                "rpg_time_reset": 300,
                "rpg_byte_reset": 32767,
                "rpg_max_rate": 0,
                "rpg_min_rate": 1,
                "dce_tcp_g": 1019,
                "initial_alpha_value": 1023,
                "rate_reduce_monitor_period": 4,
            }
            out: dict[str, Node] = {"enable": enable_dir(q.ecn_rp)}
            out.update({k: _const(str(v)) for k, v in params.items()})
            return out

        return {"roce_np": _dir(np_dir), "roce_rp": _dir(rp_dir)}

    # -- modules ---------------------------------------------------------------------------------------------
    def _modules(self) -> dict[str, Node]:
        from wizard.lab import kmods

        host = self.host

        def mod_dir(name: str) -> DynDir:
            def entries() -> dict[str, Node]:
                e: dict[str, Node] = {
                    "initstate": _const("live"),
                    "refcnt": _ro(lambda: str(len(kmods.holders(host, name)))),
                    "holders": _dir(lambda: {h: Symlink(f"/sys/module/{h}") for h in kmods.holders(host, name)}),
                }
                if host.stack == "doca" and name in kmods.RDMA_STACK:
                    e["version"] = _const(host.doca_driver_version)
                return e

            return _dir(entries)

        return {name: mod_dir(name) for name in host.modules}
