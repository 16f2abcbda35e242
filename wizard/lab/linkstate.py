"""Link state of a simulated host's ports: carrier across the lab's cabling, speed, operstate, counters."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from wizard.lab import degraded, ib, netops

if TYPE_CHECKING:
    from wizard.lab.netdevs import Netdev
    from wizard.lab.rdma import RdmaDev


class LinkState:
    """Mixed into SimHost: everything that depends on the far end of a cable."""

    profile: Any
    netdevs: dict[str, Netdev]
    lab: Any
    state: str
    units: dict[str, Any]
    rdma_cfg: dict[str, dict[str, object]]
    name: str
    power_listeners: list[Any]
    background: set[Any]

    def power_off(self) -> None:
        """The host is switched off (a peer server powered down): its ports lose light, so the far end of every
        back-to-back cable loses carrier too; SSH goes away until :meth:`power_up`."""
        self.state = "off"
        for listener in list(self.power_listeners):
            listener("off")
        for task in list(self.background):
            task.cancel()

    async def power_up(self) -> None:
        """Switched on again: a full boot (kernel, netplan, units, network-online.target), then SSH answers."""
        self.power_on()  # type: ignore[attr-defined]
        self.state = "running"
        await self.start_units()  # type: ignore[attr-defined]
        for listener in list(self.power_listeners):
            pending = listener("on")
            if pending is not None:
                await pending

    def port_local_up(self, i: int) -> bool:
        port = self.profile.ports[i]
        dev = self.netdevs.get(port.netdev)
        return (
            self.state in ("running", "stopping")
            and dev is not None
            and dev.admin_up
            and self.fault("link_down", port.netdev) is None
        )

    def port_carrier(self, i: int) -> bool:
        if self.lab is not None and self.lab.ib is not None:
            # IPoIB has carrier once the IB port is ACTIVE (SM swept it) and the interface is up; the port itself
            # trains whatever the netdev's admin state (drivers/infiniband/ulp/ipoib: carrier follows the port).
            port = self.profile.ports[i]
            dev = self.netdevs.get(port.netdev)
            if dev is not None and dev.kind == "ipoib":
                return dev.admin_up and ib.view(self, i).state == "ACTIVE"  # type: ignore[arg-type]
            return False  # a VPI port in Ethernet mode, cabled into an IB switch: the link never trains
        if not self.port_local_up(i):
            return False
        if self.lab is None or self.lab.fabric.switched:
            return True  # a standalone host is cabled to a live peer; a rail switch port is always up
        for host, j in self.lab.fabric.peers((self.name, i)):
            peer = self.lab.hosts.get(host)
            if peer is not None and peer.port_local_up(j):
                return True
        return False

    def netdev_carrier(self, name: str) -> bool:
        dev = self.netdevs.get(name)
        if dev is None or not dev.admin_up:
            return False
        if dev.kind == "loopback":
            return True
        if dev.port_index is not None:
            return self.port_carrier(dev.port_index)
        if dev.kind == "bond":
            return any(self.netdev_carrier(s) for s in dev.slaves)
        return self.state in ("running", "stopping")

    def netdev_speed(self, name: str) -> int:
        dev = self.netdevs[name]
        if not self.netdev_carrier(name):
            return -1
        if dev.port_index is not None:
            if dev.kind == "ipoib":  # ipoib_get_link_ksettings: the IB port's width x lane speed
                return int(ib.view(self, dev.port_index).rate_gbps * 1000)  # type: ignore[arg-type]
            return degraded.speed_mbps(self, dev.port_index)  # type: ignore[arg-type]
        if dev.kind == "bond" and dev.bond is not None:
            speeds = [self.netdev_speed(s) for s in dev.slaves if self.netdev_carrier(s)]
            return max(speeds) if dev.bond.mode == "active-backup" else sum(speeds)
        return self.profile.mgmt.speed_mbps

    def operstate(self, name: str) -> str:
        dev = self.netdevs[name]
        if dev.kind == "loopback":
            return "UNKNOWN"
        return "UP" if self.netdev_carrier(name) else "DOWN"

    def netdev_stats(self, name: str) -> dict[str, int]:
        dev = self.netdevs[name]
        base = {
            "rx_bytes": 0,
            "rx_packets": 0,
            "rx_errors": 0,
            "rx_dropped": 0,
            "tx_bytes": 0,
            "tx_packets": 0,
            "tx_errors": 0,
            "tx_dropped": 0,
            "multicast": 0,
            "collisions": 0,
        }
        base.update({k: v for k, v in dev.stats.items() if k in base})
        return base

    def rdma_counters(self, dev: RdmaDev) -> dict[str, int]:
        names = (
            "duplicate_request",
            "implied_nak_seq_err",
            "local_ack_timeout_err",
            "np_cnp_sent",
            "np_ecn_marked_roce_packets",
            "out_of_buffer",
            "out_of_sequence",
            "packet_seq_err",
            "req_cqe_error",
            "resp_cqe_error",
            "rnr_nak_retry_err",
            "rp_cnp_handled",
            "rp_cnp_ignored",
            "rx_icrc_encapsulated",
            "rx_read_requests",
            "rx_write_requests",
        )
        extra = self.rdma_cfg.get(dev.name, {}).get("counters", {})
        return {n: int(extra.get(n, 0)) if isinstance(extra, dict) else 0 for n in names}

    def lacp_partner(self, bond: Netdev) -> str | None:
        if self.lab is None:
            return None
        for s in bond.slaves:
            dev = self.netdevs.get(s)
            if dev is None or dev.port_index is None:
                continue
            for host, j in self.lab.fabric.peers((self.name, dev.port_index)):
                peer = self.lab.hosts.get(host)
                if peer is None:
                    continue
                pdev = peer.netdevs.get(peer.profile.ports[j].netdev)
                master = peer.netdevs.get(pdev.master) if pdev and pdev.master else None
                if master and master.bond and master.bond.mode == "802.3ad":
                    return master.mac
        return None

    def set_mtu(self, name: str, mtu: int) -> None:
        netops.set_mtu(self, name, mtu)

    def lldpad_active(self) -> bool:
        rt = self.units.get("lldpad.service")
        return rt is not None and rt.state == "active"
