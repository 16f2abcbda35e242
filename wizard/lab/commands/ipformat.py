"""iproute2 output: link/addr headers, -d details and the -j JSON objects, as iproute2 5.15 prints them."""

from __future__ import annotations

import json

from wizard.lab.netdevs import Addr, BondParams, Netdev
from wizard.lab.streams import Ctx

NOT_PERMITTED = "RTNETLINK answers: Operation not permitted"


def flags(ctx: Ctx, dev: Netdev) -> list[str]:
    host = ctx.host
    if dev.kind == "loopback":
        return ["LOOPBACK", "UP", "LOWER_UP"]
    out = []
    if dev.admin_up and not host.netdev_carrier(dev.name):
        out.append("NO-CARRIER")
    out += ["BROADCAST", "MULTICAST"]
    if dev.master:
        out.append("SLAVE")
    if dev.kind == "bond":
        out.append("MASTER")
    if dev.admin_up:
        out.append("UP")
        if host.netdev_carrier(dev.name):
            out.append("LOWER_UP")
    return out


def _qdisc(dev: Netdev) -> str:
    if dev.kind in ("loopback", "bond"):
        return "noqueue"
    return "mq" if dev.admin_up else "noop"


def _link_header(ctx: Ctx, dev: Netdev, *, link_mode: bool) -> str:
    master = f" master {dev.master}" if dev.master else ""
    mode = " mode DEFAULT" if link_mode else ""
    return (
        f"{dev.ifindex}: {dev.name}: <{','.join(flags(ctx, dev))}> mtu {dev.mtu} qdisc {_qdisc(dev)}{master} "
        f"state {ctx.host.operstate(dev.name)}{mode} group default qlen 1000"
    )


def _bond_text(dev: Netdev) -> str:
    b = dev.bond or BondParams()
    return (
        f"bond mode {b.mode} miimon {b.miimon} updelay {b.updelay} downdelay {b.downdelay} peer_notify_delay 0 "
        "use_carrier 1 arp_interval 0 arp_validate none arp_all_targets any primary_reselect always "
        f"fail_over_mac none xmit_hash_policy {b.xmit_hash_policy} resend_igmp 1 num_grat_arp 1 all_slaves_active 0 "
        f"min_links 0 lp_interval 1 packets_per_slave 1 lacp_rate {b.lacp_rate} ad_select {b.ad_select} "
        "tlb_dynamic_lb 1 "
    )


# IPoIB's 20-byte hardware address: 4 bytes of flags + QPN, then the port GID (ipoib_main.c ipoib_add_port); the
# broadcast address is the IPv4 broadcast group of the default partition (P_Key 0xffff, scope link).
IPOIB_BROADCAST = "00:ff:ff:ff:ff:12:40:1b:ff:ff:00:00:00:00:00:00:ff:ff:ff:ff"


def ipoib_address(mac: str) -> str:
    from wizard.lab.rdma import port_guid

    guid = port_guid(mac)
    return "00:00:10:87:fe:80:00:00:00:00:00:00:" + ":".join(guid[i : i + 2] for i in range(0, 16, 2))


def link_kind(dev: Netdev, netdevs: dict[str, Netdev] | None = None) -> tuple[str, str, str]:
    """(link_type, address, broadcast) as ip prints them; a bond of IPoIB slaves is an InfiniBand link too (it takes
    its active slave's address: bonding's fail_over_mac for IPoIB)."""
    if dev.kind == "loopback":
        return "loopback", dev.mac, "00:00:00:00:00:00"
    if (
        dev.kind == "bond"
        and netdevs
        and dev.slaves
        and (slave := netdevs.get(dev.slaves[0]))
        and slave.kind == "ipoib"
    ):
        return "infiniband", ipoib_address(slave.mac), IPOIB_BROADCAST
    if dev.kind == "ipoib":
        return "infiniband", ipoib_address(dev.mac), IPOIB_BROADCAST
    return "ether", dev.mac, "ff:ff:ff:ff:ff:ff"


def _link_lines(ctx: Ctx, dev: Netdev, details: bool) -> list[str]:
    kind, address, brd = link_kind(dev, ctx.host.netdevs)
    line = f"    link/{kind} {address} brd {brd}"
    if dev.mac != dev.perm_mac and dev.kind == "ether":
        line += f" permaddr {dev.perm_mac}"
    if not details:
        return [line]
    lo = dev.kind == "loopback"
    line += f" promiscuity 0 minmtu {0 if lo else 68} maxmtu {0 if lo else dev.max_mtu} "
    rest = "addrgenmode eui64 numtxqueues 504 numrxqueues 63 gso_max_size 65536 gso_max_segs 65535 "
    if dev.port_index is not None:
        rest += f"portname p{ctx.host.profile.ports[dev.port_index].function} "
    if dev.pci:
        rest += f"parentbus pci parentdev {dev.pci} "
    if dev.kind == "bond":
        return [line, "    " + _bond_text(dev) + rest]
    if dev.master:
        up = "UP" if ctx.host.netdev_carrier(dev.name) else "DOWN"
        slave = f"bond_slave state ACTIVE mii_status {up} link_failure_count 0 perm_hwaddr {dev.perm_mac} queue_id 0 "
        return [line, "    " + slave + rest]
    return [line + rest]


def _addr_lines(dev: Netdev, family: str | None) -> list[str]:
    out = []
    for a in dev.addrs:
        if family and a.family != family:
            continue
        if a.iface.version == 4:
            scope = "host" if a.iface.ip.is_loopback else "global"
            brd = f" brd {a.iface.network.broadcast_address}" if a.iface.network.prefixlen < 31 else ""
            out.append(f"    inet {a.iface}{brd} scope {scope} {dev.name}")
        else:
            scope = "host" if a.iface.ip.is_loopback else "link" if a.iface.ip.is_link_local else "global"
            out.append(f"    inet6 {a.iface} scope {scope} ")
        out.append("       valid_lft forever preferred_lft forever")
    return out


def _addr_json(a: Addr, dev: Netdev) -> dict[str, object]:
    d: dict[str, object] = {"family": a.family, "local": str(a.iface.ip), "prefixlen": a.iface.network.prefixlen}
    if a.iface.version == 4 and a.iface.network.prefixlen < 31:
        d["broadcast"] = str(a.iface.network.broadcast_address)
    ip = a.iface.ip
    d["scope"] = "host" if ip.is_loopback else "link" if ip.is_link_local else "global"
    if a.iface.version == 4:
        d["label"] = dev.name
    d["valid_life_time"] = 4294967295
    d["preferred_life_time"] = 4294967295
    return d


def link_json(ctx: Ctx, dev: Netdev, *, details: bool, addrs: bool, family: str | None = None) -> dict[str, object]:
    host = ctx.host
    d: dict[str, object] = {
        "ifindex": dev.ifindex,
        "ifname": dev.name,
        "flags": flags(ctx, dev),
        "mtu": dev.mtu,
        "qdisc": _qdisc(dev),
    }
    if dev.master:
        d["master"] = dev.master
    d.update(
        {
            "operstate": host.operstate(dev.name),
            "group": "default",
            "txqlen": 1000,
            "link_type": link_kind(dev, host.netdevs)[0],
            "address": link_kind(dev, host.netdevs)[1],
            "broadcast": link_kind(dev, host.netdevs)[2],
        }
    )
    if dev.mac != dev.perm_mac and dev.kind == "ether":
        d["permaddr"] = dev.perm_mac
    if details:
        d.update(
            {
                "promiscuity": 0,
                "min_mtu": 0 if dev.kind == "loopback" else 68,
                "max_mtu": 0 if dev.kind == "loopback" else dev.max_mtu,
            }
        )
        if dev.kind == "bond" and dev.bond:
            b = dev.bond
            d["linkinfo"] = {
                "info_kind": "bond",
                "info_data": {
                    "mode": b.mode,
                    "miimon": b.miimon,
                    "updelay": b.updelay,
                    "downdelay": b.downdelay,
                    "peer_notify_delay": 0,
                    "use_carrier": 1,
                    "arp_interval": 0,
                    "arp_validate": None,
                    "arp_all_targets": "any",
                    "primary_reselect": "always",
                    "fail_over_mac": "none",
                    "xmit_hash_policy": b.xmit_hash_policy,
                    "resend_igmp": 1,
                    "num_peer_notif": 1,
                    "all_slaves_active": 0,
                    "min_links": 0,
                    "lp_interval": 1,
                    "packets_per_slave": 1,
                    "lacp_active": "on",
                    "lacp_rate": b.lacp_rate,
                    "ad_select": b.ad_select,
                    "tlb_dynamic_lb": 1,
                },
            }
        elif dev.master:
            d["linkinfo"] = {
                "info_slave_kind": "bond",
                "info_slave_data": {
                    "state": "ACTIVE",
                    "mii_status": "UP" if host.netdev_carrier(dev.name) else "DOWN",
                    "link_failure_count": 0,
                    "perm_hwaddr": dev.perm_mac,
                    "queue_id": 0,
                },
            }
        d.update(
            {
                "inet6_addr_gen_mode": "eui64",
                "num_tx_queues": 504 if dev.pci else 1,
                "num_rx_queues": 63 if dev.pci else 1,
                "gso_max_size": 65536,
                "gso_max_segs": 65535,
            }
        )
        if dev.port_index is not None:
            d["phys_port_name"] = f"p{host.profile.ports[dev.port_index].function}"
        if dev.pci:
            d["parentbus"] = "pci"
            d["parentdev"] = dev.pci
    if addrs:
        d["addr_info"] = [_addr_json(a, dev) for a in dev.addrs if not family or a.family == family]
    return d


def _emit_json(ctx: Ctx, data: object, pretty: bool) -> None:
    ctx.print(json.dumps(data, indent=4 if pretty else None, separators=None if pretty else (",", ":")))
