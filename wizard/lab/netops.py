"""Operations on a host's network devices: create/remove, bonds, MTU, addresses, routes."""

from __future__ import annotations

import ipaddress
from typing import TYPE_CHECKING

from wizard.lab import ib
from wizard.lab.netdevs import Addr, BondParams, Netdev, Qos, drop_link_local, ensure_link_local, persistent_mac

if TYPE_CHECKING:
    from wizard.lab.host import SimHost


class NetError(Exception):
    """A netlink-level refusal; the message is what iproute2 prints."""


def next_ifindex(host: SimHost) -> int:
    host.ifindex_counter += 1
    return host.ifindex_counter


def create_base(host: SimHost) -> None:
    """lo and the management NIC, as the kernel creates them at boot."""
    host.netdevs.clear()
    host.ifindex_counter = 0
    lo = Netdev("lo", "loopback", next_ifindex(host), "00:00:00:00:00:00", "00:00:00:00:00:00", mtu=65536)
    lo.admin_up = True
    lo.addrs = [
        Addr(ipaddress.ip_interface("127.0.0.1/8"), "kernel"),
        Addr(ipaddress.ip_interface("::1/128"), "kernel"),
    ]
    host.netdevs["lo"] = lo
    m = host.profile.mgmt
    host.netdevs[m.netdev] = Netdev(
        m.netdev, "ether", next_ifindex(host), m.mac, m.mac, driver=m.driver, pci=m.pci, max_mtu=9702
    )


def create_ports(host: SimHost) -> list[str]:
    """(Re)create the mlx5 netdevs with firmware defaults (driver probe); returns their names."""
    names = []
    for i, port in enumerate(host.profile.ports):
        if port.netdev in host.netdevs:
            remove_netdev(host, port.netdev)
        card = host.profile.card_of(i)
        ipoib = ib.is_ib_port(host, i)
        dev = Netdev(
            port.netdev,
            "ipoib" if ipoib else "ether",
            next_ifindex(host),
            port.mac,
            port.mac,
            driver="mlx5_core",
            pci=port.pci,
            port_index=i,
            max_mtu=card.model.max_mtu,
            qos=None if ipoib else _default_qos(host),
        )
        if ipoib:
            # IPoIB datagram mode: the IB MTU of the broadcast group minus the 4-byte IPoIB header; opensm creates
            # the default partition's group with a 2048-byte MTU unless partitions.conf says mtu=5 (4096).
            dev.mtu, dev.driver = 2044, "mlx5_core[ib_ipoib]"
        fault = host.fault("mtu_mismatch", port.netdev)
        if fault:
            dev.mtu_cap = 1500
        host.netdevs[port.netdev] = dev
        names.append(port.netdev)
    host.gid_tables.clear()
    return names


def _default_qos(host: SimHost) -> Qos:
    p = host.profile
    q = Qos(cnp_dscp=p.cnp_dscp_default, cnp_802p_prio=p.cnp_802p_prio_default)
    q.ecn_np = [p.ecn_enable_default] * 8
    q.ecn_rp = [p.ecn_enable_default] * 8
    return q


def remove_ports(host: SimHost) -> None:
    for port in host.profile.ports:
        if port.netdev in host.netdevs:
            remove_netdev(host, port.netdev)
    host.gid_tables.clear()


def remove_netdev(host: SimHost, name: str) -> None:
    dev = host.netdevs.get(name)
    if dev is None:
        return
    if dev.master:
        release(host, name)
    for s in list(dev.slaves):
        release(host, s)
    del host.netdevs[name]


def create_bond(host: SimHost, name: str, params: BondParams) -> Netdev:
    dev = Netdev(
        name,
        "bond",
        next_ifindex(host),
        persistent_mac(f"{host.name}/{name}"),
        "00:00:00:00:00:00",
        driver="bonding",
        max_mtu=65535,
        bond=params,
        managed=True,
    )
    host.netdevs[name] = dev
    if "bonding" not in host.modules:
        host.modules.append("bonding")
    return dev


def enslave(host: SimHost, slave: str, bond: str) -> None:
    dev, master = host.netdevs[slave], host.netdevs[bond]
    if dev.master == bond:
        return
    if dev.master:
        release(host, slave)
    dev.master = bond
    dev.addrs = [a for a in dev.addrs if a.origin == "manual" and a.iface.version == 4]
    drop_link_local(dev)
    dev.mac = master.mac
    dev.set_mtu(master.mtu)
    master.slaves.append(slave)


def release(host: SimHost, slave: str) -> None:
    dev = host.netdevs[slave]
    master = host.netdevs.get(dev.master or "")
    if master and slave in master.slaves:
        master.slaves.remove(slave)
    dev.master = None
    dev.mac = dev.perm_mac
    if dev.admin_up:
        ensure_link_local(dev)


def set_mtu(host: SimHost, name: str, mtu: int) -> None:
    dev = host.netdevs[name]
    if mtu > dev.max_mtu:
        raise NetError("Error: mtu greater than device maximum.")
    if mtu < 68:
        raise NetError("Error: mtu less than device minimum.")
    if dev.port_index is not None and mtu != dev.mtu and host.netdev_carrier(name):
        from wizard.lab.flap import carrier_toggled

        carrier_toggled(host, name, down=True, up=True)  # mlx5e reopens its channels: carrier off, then on
    dev.set_mtu(mtu)
    for s in dev.slaves:
        if s in host.netdevs:
            host.netdevs[s].set_mtu(mtu)


def set_up(host: SimHost, name: str, up: bool) -> None:
    dev = host.netdevs[name]
    if dev.port_index is not None and up != dev.admin_up:
        from wizard.lab.flap import carrier_toggled

        before = host.netdev_carrier(name)
        dev.admin_up = up
        carrier_toggled(host, name, down=before and not up, up=up and host.netdev_carrier(name))
    dev.admin_up = up
    if up:
        ensure_link_local(dev)
    else:
        drop_link_local(dev)
        _hold_ipv4_gids(host, name)


def _hold_ipv4_gids(host: SimHost, name: str) -> None:
    """The ``gid_reorder[=NETDEV]`` fault: the port's IPv4 GIDs, deleted when it goes down, stay referenced by a
    running job's queue pairs, so their slots are not free when the address comes back and its GIDs land at higher
    indices. NVIDIA/nccl#2157: ib_core re-registers GIDs first-free-slot and "previously-kref'd entries (held by
    surviving QPs / AHs) leave holes"; NVIDIA/nccl#1333: an index that moved from 3 to 4 or 8 mid-training."""
    if not any(f.arg in (None, name) for f in host.faults_of("gid_reorder")):
        return
    from wizard.lab import rdma

    for dev in rdma.devices(host):
        if dev.netdev == name:
            table = rdma.gid_table(host, dev)
            table.hold({i for i, e in table.entries() if e.gid.startswith("0000:0000:0000:0000:0000:ffff:")})
            host.__dict__.get("_gid_synced", {}).pop(dev.name, None)  # re-added, at new slots, on the next read


def add_addr(host: SimHost, name: str, text: str, origin: str = "manual") -> None:
    dev = host.netdevs[name]
    iface = ipaddress.ip_interface(text)
    if any(a.iface == iface for a in dev.addrs):
        raise NetError("RTNETLINK answers: File exists")
    dev.addrs.append(Addr(iface, origin))


def del_addr(host: SimHost, name: str, text: str) -> None:
    dev = host.netdevs[name]
    iface = ipaddress.ip_interface(text if "/" in text else text + ("/32" if ":" not in text else "/128"))
    for a in dev.addrs:
        if a.iface.ip == iface.ip and ("/" not in text or a.iface == iface):
            dev.addrs.remove(a)
            return
    raise NetError("RTNETLINK answers: Cannot assign requested address")


def set_managed_addrs(host: SimHost, name: str, wanted: list[str]) -> None:
    """What systemd-networkd does on apply: its own addresses become exactly ``wanted``."""
    dev = host.netdevs[name]
    want = [ipaddress.ip_interface(w) for w in wanted]
    dev.addrs = [a for a in dev.addrs if a.origin != "netplan" or a.iface in want]
    for iface in want:
        if all(a.iface != iface for a in dev.addrs):
            dev.addrs.append(Addr(iface, "netplan"))


def route_entries(host: SimHost, table: str = "main") -> list[dict[str, object]]:
    """Routes as iproute2's JSON objects. ``table``: "main", "local", a number, or "all"."""
    out: list[dict[str, object]] = []
    up = {n: d for n, d in host.netdevs.items() if d.admin_up and not d.master}

    if table in ("main", "all"):
        gw = host.gateway
        if gw and gw[1] in up:
            out.append({"dst": "default", "gateway": gw[0], "dev": gw[1], "protocol": "static", "flags": []})
        for r in host.static_routes:
            if r["table"] is None and r["dev"] in up:
                e: dict[str, object] = {"dst": r["dst"]}
                if r["via"]:
                    e["gateway"] = r["via"]
                e.update({"dev": r["dev"], "protocol": "static", "flags": []})
                out.append(e)
        for name, dev in up.items():
            if dev.kind == "loopback":
                continue
            for iface in dev.ipv4:
                out.append(
                    {
                        "dst": str(iface.network),
                        "dev": name,
                        "protocol": "kernel",
                        "scope": "link",
                        "prefsrc": str(iface.ip),
                        "flags": [],
                    }
                )
    for r in host.static_routes:
        t = r["table"]
        if t is None or r["dev"] not in up or table not in ("all", str(t)):
            continue
        e = {"dst": r["dst"]}
        if r["via"]:
            e["gateway"] = r["via"]
        e.update({"dev": r["dev"], "table": str(t), "protocol": "static"})
        if not r["via"]:
            e["scope"] = "link"
        e["flags"] = []
        out.append(e)
    if table in ("local", "all"):
        for name, dev in up.items():
            for iface in dev.ipv4:
                out.append(
                    {
                        "type": "local",
                        "dst": str(iface.ip),
                        "dev": name,
                        "table": "local",
                        "protocol": "kernel",
                        "scope": "host",
                        "prefsrc": str(iface.ip),
                        "flags": [],
                    }
                )
                if iface.network.prefixlen < 31 and dev.kind != "loopback":
                    out.append(
                        {
                            "type": "broadcast",
                            "dst": str(iface.network.broadcast_address),
                            "dev": name,
                            "table": "local",
                            "protocol": "kernel",
                            "scope": "link",
                            "prefsrc": str(iface.ip),
                            "flags": [],
                        }
                    )
    return out


def rule_entries(host: SimHost) -> list[dict[str, object]]:
    rules: list[dict[str, object]] = [{"priority": 0, "src": "all", "table": "local"}]
    for r in sorted(host.rules, key=lambda x: int(x["priority"])):  # type: ignore[arg-type]
        e: dict[str, object] = {"priority": r["priority"], "src": str(r["from"]) if r["from"] else "all"}
        if r.get("to"):
            e["dst"] = str(r["to"])
        e.update({"table": str(r["table"]), "protocol": "static"})
        rules.append(e)
    rules += [{"priority": 32766, "src": "all", "table": "main"}, {"priority": 32767, "src": "all", "table": "default"}]
    return rules


def routes(host: SimHost) -> list[tuple[ipaddress.IPv4Network, str, str | None, str]]:
    """Main-table routes as (network, dev, via, src) for lookups."""
    out = []
    for e in route_entries(host, "main"):
        net = ipaddress.IPv4Network("0.0.0.0/0" if e["dst"] == "default" else str(e["dst"]), strict=False)
        dev = str(e["dev"])
        d = host.netdevs[dev]
        src = str(e.get("prefsrc") or (str(d.ipv4[0].ip) if d.ipv4 else ""))
        out.append((net, dev, e.get("gateway"), src))  # type: ignore[arg-type]
    return out


def route_lookup(host: SimHost, dst: str) -> tuple[str, str | None, str] | None:
    """(dev, via, src) for ``dst`` by longest prefix, or None (Network is unreachable)."""
    ip = ipaddress.IPv4Address(dst)
    best = None
    for net, dev, via, src in routes(host):
        if ip in net and (best is None or net.prefixlen > best[0].prefixlen):
            best = (net, dev, via, src)
    return (best[1], best[2], best[3]) if best else None
