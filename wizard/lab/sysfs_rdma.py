"""The RDMA part of /sys: /sys/class/infiniband device trees (GID tables, port state) and rdma_cm configfs."""

from __future__ import annotations

import errno
from collections.abc import Callable
from typing import TYPE_CHECKING

from wizard.lab import degraded, ib, rdma
from wizard.lab.gids import ZERO_GID
from wizard.lab.nodes import DynDir, DynFile, FsError, Node, Symlink
from wizard.lab.sysfs_util import _const, _dir, _indexed, _int_writer, _ro

if TYPE_CHECKING:
    from wizard.lab.host import SimHost


class RdmaSysfs:
    """Mixed into Sysfs: builds the infiniband device directories and the rdma_cm configfs groups."""

    host: SimHost

    def pci_path(self, addr: str) -> str:
        raise NotImplementedError

    # -- RDMA devices ----------------------------------------------------------------------------------------
    def _ib_dir(self, dev: rdma.RdmaDev) -> DynDir:
        host = self.host
        card = dev.card
        fw = host.firmware(card)

        def entries() -> dict[str, Node]:
            e: dict[str, Node] = {
                "node_type": _const("1: CA"),
                "node_guid": _const(rdma.node_guid(dev.port)),
                "sys_image_guid": _const(rdma.node_guid(card.ports[0])),
                "fw_ver": _const(fw),
                "hca_type": _const(card.model.ca_type),
                "hw_rev": _const("0x0"),
                "board_id": _const(card.model.board_id),
                "node_desc": _ro(lambda: f"{host.hostname} {dev.name}"),
                "device": Symlink(self.pci_path(dev.pci)),
                "ports": _dir(lambda: {"1": self._ib_port(dev)}),
            }
            if host.stack == "doca":
                cfg = host.rdma_cfg.setdefault(dev.name, {})

                def set_tc(v: int) -> None:
                    cfg["traffic_class"] = v

                e["tc"] = _dir(
                    lambda: {
                        "1": _dir(
                            lambda: {
                                "traffic_class": DynFile(
                                    lambda: f"Global tclass={cfg.get('traffic_class', -1)}\n",
                                    _int_writer(-1, 255, set_tc),
                                )
                            }
                        )
                    }
                )
            return e

        return _dir(entries)

    def _ib_port(self, dev: rdma.RdmaDev) -> DynDir:
        host = self.host

        def table() -> list:
            return rdma.gid_table(host, dev).slots

        def gid_reader(i: int) -> Callable[[], str]:
            return lambda: (table()[i].gid if table()[i] else ZERO_GID) + "\n"

        def attr_reader(i: int, attr: str) -> Callable[[], str]:
            def read() -> str:
                entry = table()[i]
                if entry is None or (attr == "ndev" and not entry.ndev):  # an IB GID has no netdev: EINVAL
                    raise FsError(errno.EINVAL, "")
                return getattr(entry, attr) + "\n"

            return read

        def entries() -> dict[str, Node]:
            common: dict[str, Node] = {
                "lid_mask_count": _const("0"),
                "sm_sl": _const("0"),
                "gids": _indexed(lambda i: DynFile(gid_reader(i))),
                "gid_attrs": _dir(
                    lambda: {
                        "types": _indexed(lambda i: DynFile(attr_reader(i, "type"))),
                        "ndevs": _indexed(lambda i: DynFile(attr_reader(i, "ndev"))),
                    }
                ),
                "hw_counters": _dir(lambda: {k: _const(str(v)) for k, v in host.rdma_counters(dev).items()}),
            }
            if rdma.is_ib(host, dev):
                return common | self._ib_port_state(dev)
            active = rdma.port_active(host, dev)
            return common | {
                "state": _const("4: ACTIVE" if active else "1: DOWN"),
                "phys_state": _const("5: LinkUp" if active else "3: Disabled"),
                "rate": _const(degraded.rate_text(host, dev.port_indices[0]) if active else "10 Gb/sec (4X SDR)"),
                "link_layer": _const(rdma.link_layer(host, dev)),
                "lid": _const("0x0"),
                "sm_lid": _const("0x0"),
                "cap_mask": _const("0x04010000"),
                "pkeys": _dir(lambda: {"0": _const("0xffff")}),
            }

        return _dir(entries)

    def _ib_port_state(self, dev: rdma.RdmaDev) -> dict[str, Node]:
        """An InfiniBand port: state, rate, LIDs and P_Keys from the subnet (wizard/lab/ib.py), in the formats of
        drivers/infiniband/core/sysfs.c (state_show "%d: %s", lid_show "0x%x", show_port_pkey "0x%04x")."""
        v = ib.view(self.host, dev.port_indices[0])
        pkeys = {str(n): _const(p) for n, p in enumerate(v.pkeys)}
        return {
            "state": _const(f"{ib.STATE_NUM[v.state]}: {v.state}"),
            "phys_state": _const(f"{ib.PHYS_NUM[v.phys_state]}: {v.phys_state}"),
            "rate": _const(v.rate_text),
            "link_layer": _const("InfiniBand"),
            "lid": _const(f"0x{v.lid:x}"),
            "sm_lid": _const(f"0x{v.sm_lid:x}"),
            "cap_mask": _const("0xa651e848"),
            "pkeys": _dir(lambda: pkeys),
        }

    # -- configfs (rdma_cm default RoCE mode / ToS, as cma_roce_mode and cma_roce_tos use it) ---------------
    def _configfs(self) -> dict[str, Node]:
        host = self.host
        if "rdma_cm" not in host.modules:
            return {}
        groups: set[str] = host.__dict__.setdefault("cm_groups", set())

        def make(name: str) -> None:
            if rdma.find(host, name) is None:
                raise FsError(errno.ENODEV, "")
            groups.add(name)

        def remove(name: str) -> None:
            groups.discard(name)

        def listing() -> dict[str, Node]:
            live = {d.name for d in rdma.devices(host)}
            return {g: (lambda g=g: self._cm_group(g)) for g in sorted(groups & live)}  # type: ignore[misc]

        return {"rdma_cm": DynDir(listing, maker=make, remover=remove)}

    def _cm_group(self, dev: str) -> DynDir:
        cfg = self.host.rdma_cfg.setdefault(dev, {})

        def set_mode(text: str) -> None:
            value = text.strip()
            if value not in ("RoCE v2", "IB/RoCE v1", "RoCE v1"):
                raise FsError(errno.EINVAL, "")
            cfg["roce_mode"] = "IB/RoCE v1" if value != "RoCE v2" else value

        def set_tos(value: int) -> None:
            cfg["tos"] = value

        port = _dir(
            lambda: {
                "default_roce_mode": DynFile(lambda: f"{cfg.get('roce_mode', 'RoCE v2')}\n", set_mode),
                "default_roce_tos": DynFile(lambda: f"{cfg.get('tos', 0)}\n", _int_writer(0, 255, set_tos)),
            }
        )
        return _dir(lambda: {"ports": _dir(lambda: {"1": port})})
