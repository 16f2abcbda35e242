"""Per-host verification of the network stage: files, MTU, addresses, GIDs, LAG, routing and sysctls."""

from __future__ import annotations

from steps.network.design import Design, Endpoint, expected_roce_mtu
from steps.network.facts import NETPLAN_PATH, SYSCTL_PATH, NetworkFacts
from steps.network.render import wanted_sysctls
from wizard.engine.step import CheckItem


def live_differences(design: Design, net: NetworkFacts, mtu: int) -> list[str]:
    """What the running system lacks compared with the netplan file (that re-applying it can fix)."""
    diffs = []
    for e in design.endpoints:
        iface = net.interfaces.get(e.netdev)
        if iface is None:
            diffs.append(f"{e.netdev} does not exist yet")
            continue
        for name in [e.netdev, *e.members]:
            dev = net.interfaces.get(name)
            if dev is not None and dev.mtu != mtu:
                diffs.append(f"{name} has MTU {dev.mtu}, not {mtu}")
        diffs += [f"{m} is not enslaved to {e.netdev}" for m in e.members if _master(net, m) != e.netdev]
        # networkd adds static addresses only with carrier; re-applying cannot help a dead link.
        if e.address not in iface.ipv4 and e.address not in iface.ipv6 and iface.carrier:
            diffs.append(f"{e.netdev} lacks {e.address}")
        if e.table is not None and not _has_rule(net, e):
            diffs.append(f"no source rule from {e.ip} to table {e.table}")
    return diffs


def _master(net: NetworkFacts, name: str) -> str | None:
    dev = net.interfaces.get(name)
    return dev.master if dev else None


def _has_rule(net: NetworkFacts, e: Endpoint) -> bool:
    return any(r.src == e.ip and r.table == str(e.table) for r in net.rules)


def host_checks(design: Design, net: NetworkFacts, mtu: int, netplan: str, sysctl: str | None) -> list[CheckItem]:
    """Verdicts for one host from fresh facts; each failure names the port and the operator's next action."""
    items = [_file_check(net, netplan), _management_check(design)]
    for e in design.endpoints:
        items += _endpoint_checks(e, net, mtu)
    items.append(_default_route_check(design, net))
    if sysctl is not None:
        items.append(_sysctl_check(design, net, sysctl))
    return items


def _file_check(net: NetworkFacts, netplan: str) -> CheckItem:
    title = "netplan file"
    if net.netplan_file != netplan:
        what = "missing" if net.netplan_file is None else "differs from the plan"
        return CheckItem(
            id="netplan_file",
            title=title,
            status="fail",
            evidence=f"{NETPLAN_PATH} {what}",
            fix="re-run the network stage; if it keeps failing, run `sudo netplan generate` on the host",
        )
    if net.netplan_mode not in (None, "600") or net.netplan_owner not in (None, "root:root"):
        return CheckItem(
            id="netplan_file",
            title=title,
            status="fail",
            evidence=f"{NETPLAN_PATH} has mode {net.netplan_mode} owner {net.netplan_owner}",
            fix=f"sudo chown root:root {NETPLAN_PATH} && sudo chmod 600 {NETPLAN_PATH}",
        )
    return CheckItem(id="netplan_file", title=title, status="pass", evidence=f"{NETPLAN_PATH} as planned, mode 600")


def _management_check(design: Design) -> CheckItem:
    ssh = design.ssh_interface
    touched = any(ssh in (e.netdev, *e.members) for e in design.endpoints)
    return CheckItem(
        id="management",
        title="management interface left alone",
        status="pass" if not touched else "warn",
        evidence=f"{ssh or 'unknown'} " + ("is reconfigured (allowed by the answers)" if touched else "untouched"),
    )


def _endpoint_checks(e: Endpoint, net: NetworkFacts, mtu: int) -> list[CheckItem]:
    iface = net.interfaces.get(e.netdev)
    if iface is None:
        return [
            CheckItem(
                id=f"exists:{e.netdev}",
                title=f"{e.label} interface",
                status="fail",
                evidence=f"{e.netdev} does not exist after netplan apply",
                fix=f"check `sudo netplan generate` and `journalctl -u systemd-networkd` for {e.netdev}",
            )
        ]
    items = []
    for name in e.members or [e.netdev]:
        dev = net.interfaces.get(name)
        up = dev is not None and dev.carrier
        link = net.rdma_of(name)
        state = f"; RDMA {link.device} {link.state}/{link.physical_state}" if link else ""
        items.append(
            CheckItem(
                id=f"link:{name}",
                title=f"{e.label} link on {name}",
                status="pass" if up else "fail",
                evidence=f"{name} carrier {'up' if up else 'down'}{state}",
                fix=None
                if up
                else f"reseat or replace the cable on {name} (check its transceiver "
                "and the port it should reach on the peer)",
            )
        )
    items.append(_mtu_check(e, net, mtu))
    has_address = e.address in iface.ipv4 or e.address in iface.ipv6
    items.append(
        CheckItem(
            id=f"address:{e.netdev}",
            title=f"{e.label} address",
            status="pass" if has_address else "fail",
            evidence=f"{e.netdev} has {', '.join(iface.ipv4) or 'no IPv4 address'}",
            fix=None
            if has_address
            else f"{e.address} is missing on {e.netdev}: "
            + ("bring the link up first" if not iface.carrier else "run `sudo netplan apply`"),
        )
    )
    extra = [a for a in iface.ipv4 if a != e.address]
    if extra:
        items.append(
            CheckItem(
                id=f"extra_address:{e.netdev}",
                title=f"{e.label} has only its rail address",
                status="warn",
                evidence=f"{e.netdev} also has {', '.join(extra)}",
                fix="remove it (DHCP or a manual address) so RoCE GIDs and routing stay unambiguous",
            )
        )
    items += _rdma_checks(e, net, mtu, has_address)
    if e.table is not None:
        items.append(_policy_check(e, net))
    return items


def _mtu_check(e: Endpoint, net: NetworkFacts, mtu: int) -> CheckItem:
    wrong = [(n, d.mtu) for n in [e.netdev, *e.members] if (d := net.interfaces.get(n)) and d.mtu != mtu]
    if not wrong:
        return CheckItem(id=f"mtu:{e.netdev}", title=f"{e.label} MTU", status="pass", evidence=f"{e.netdev} MTU {mtu}")
    name, have = wrong[0]
    return CheckItem(
        id=f"mtu:{e.netdev}",
        title=f"{e.label} MTU",
        status="fail",
        evidence=f"{name} MTU is {have}, not {mtu}: the port refused jumbo frames",
        fix=f"check `ip -d link show {name}` (maxmtu) and the NIC firmware, then re-run; "
        f"both ends of the rail need MTU {mtu}",
    )


def _rdma_checks(e: Endpoint, net: NetworkFacts, mtu: int, has_address: bool) -> list[CheckItem]:
    if not e.rdma:
        return []
    link = net.lag_of(e.members) if e.lag else net.rdma_of(e.netdev)
    if e.lag:
        ok = link is not None
        own = [r.device for r in net.rdma if r.netdev in e.members]
        evidence = (
            f"{link.device} port {link.port} is the one RDMA device of {' + '.join(e.members)}"
            if link
            else f"{', '.join(own) or 'no RDMA device'} on {', '.join(e.members)}: still one RDMA device per port"
        )
        items = [
            CheckItem(
                id=f"lag:{e.netdev}",
                title=f"{e.label} RoCE LAG device",
                status="pass" if ok else "fail",
                evidence=evidence,
                fix=None
                if ok
                else f"RoCE LAG did not form for {e.netdev}: `rdma link` must list one device (mlx5_bond_N) for "
                "both ports; check that the two ports of one card are its only slaves and the mode is 802.3ad, "
                "active-backup or balance-xor (and that LAG is not disabled in firmware: mlxconfig LAG_RESOURCE)",
            )
        ]
        if link is None:
            return items
    elif link is None:
        return [
            CheckItem(
                id=f"rdma:{e.netdev}",
                title=f"{e.label} RDMA device",
                status="fail",
                evidence=f"no RDMA device on {e.netdev}",
                fix="load the RDMA driver (stage ofed): `rdma link` must list the port",
            )
        ]
    else:
        items = []
    if e.port is not None and e.port.ib:
        return items + [_ib_port_check(e, link.device, link.port, link.state)]
    want = expected_roce_mtu(mtu)
    if link.active_mtu is None:
        items.append(
            CheckItem(
                id=f"roce_mtu:{link.device}",
                title=f"{e.label} RoCE active MTU",
                status="skip",
                evidence=f"ibv_devinfo is not installed (ibverbs-utils): {link.device} active MTU not read; "
                f"MTU {mtu} should give {want}",
            )
        )
    elif link.state == "ACTIVE":
        good = link.active_mtu >= want
        items.append(
            CheckItem(
                id=f"roce_mtu:{link.device}",
                title=f"{e.label} RoCE active MTU",
                status="pass" if good else "fail",
                evidence=f"{link.device} active_mtu {link.active_mtu} (ibv_devinfo), expected {want}",
                fix=None if good else f"set MTU {mtu} on {e.netdev}",
            )
        )
    if has_address:
        ok = e.ip in link.gids_v2_ipv4
        items.append(
            CheckItem(
                id=f"gid:{link.device}",
                title=f"{e.label} RoCE v2 GID",
                status="pass" if ok else "fail",
                evidence=f"{link.device} {'has' if ok else 'lacks'} a RoCE v2 GID for {e.ip}",
                fix=None
                if ok
                else f"the kernel did not add a GID for {e.ip}: check "
                f"/sys/class/infiniband/{link.device}/ports/{link.port}/gids",
            )
        )
    return items


def _ib_port_check(e: Endpoint, device: str, port: int, state: str | None) -> CheckItem:
    """An IPoIB rail needs its IB port ACTIVE: IPoIB joins the partition's broadcast group through the SM, and
    RDMA uses the port's LID, not a GID made from the address (no RoCE GID or RoCE MTU applies)."""
    ok = state == "ACTIVE"
    return CheckItem(
        id=f"ib_port:{device}",
        title=f"{e.label} InfiniBand port",
        status="pass" if ok else "fail",
        evidence=f"{device} port {port} {state or 'state unknown'}; IPoIB {e.netdev} carries {e.ip}",
        fix=None if ok else "the port waits for a subnet manager (see discovery's subnet manager item)",
    )


def _policy_check(e: Endpoint, net: NetworkFacts) -> CheckItem:
    rule = _has_rule(net, e)
    route = any(r.table == str(e.table) and r.dst == str(e.subnet) and r.dev == e.netdev for r in net.routes)
    ok = rule and route
    return CheckItem(
        id=f"policy:{e.netdev}",
        title=f"{e.label} source routing",
        status="pass" if ok else "fail",
        evidence=f"rule from {e.ip} lookup {e.table}: {'present' if rule else 'missing'}; "
        f"table {e.table} route {e.subnet} dev {e.netdev}: {'present' if route else 'missing'}",
        fix=None if ok else f"run `sudo netplan apply` and check `ip rule` / `ip route show table {e.table}`",
    )


def _default_route_check(design: Design, net: NetworkFacts) -> CheckItem:
    rails = {e.netdev for e in design.endpoints}
    bad = [r for r in net.routes if r.table == "main" and r.dst == "default" and r.dev in rails]
    return CheckItem(
        id="no_default_via_rails",
        title="no default route through a rail",
        status="fail" if bad else "pass",
        evidence="; ".join(f"default via {r.gateway} dev {r.dev}" for r in bad) or "main table default avoids rails",
        fix=f"remove the default route on {bad[0].dev} (DHCP or another netplan file)" if bad else None,
    )


def _sysctl_check(design: Design, net: NetworkFacts, content: str) -> CheckItem:
    wanted = wanted_sysctls(design.sysctl_netdevs)
    wrong = [
        f"{k.split('.')[3]} {k.split('.')[4]}={net.sysctl_live.get(k, '?')}"
        for k, v in wanted.items()
        if net.sysctl_live.get(k) != v
    ]
    if net.sysctl_file != content:
        wrong.insert(0, f"{SYSCTL_PATH} differs from the plan")
    return CheckItem(
        id="sysctls",
        title="multi-NIC ARP and reverse-path settings",
        status="fail" if wrong else "pass",
        evidence="; ".join(wrong[:6]) or "arp_ignore=1, arp_announce=2, rp_filter=2 on every rail interface",
        fix=f"sudo sysctl -p {SYSCTL_PATH}" if wrong else None,
    )
