"""LLDP in discovery: read lldpd's neighbours once per host, then rail cabling, switch PFC and switch MTU checks."""

from __future__ import annotations

from collections import Counter

from steps.discovery.facts import DiscoveryFacts, NicPort
from steps.discovery.rail_leaves import expected_leaves, leaf_at
from wizard.engine.step import CheckItem, ClusterView
from wizard.executors.base import Executor, SudoRefused
from wizard.parsers import ParseError
from wizard.parsers.lldp import LldpNeighbor, parse_lldpctl_json

# lldpctl talks to lldpd's control socket, mode 0770 root:_lldpd (lldpd.c, PRIVSEP_GROUP): root or sudo.
LLDPCTL = ["lldpctl", "-f", "json"]
_FIX = {
    "not installed": "install lldpd on the host (apt install lldpd) so the wizard sees the switch port of each rail",
    "not running": "start lldpd (systemctl enable --now lldpd) and wait 30 s for the switches' LLDP frames",
    "refused": "run discovery with sudo (lldpctl needs root or the _lldpd group)",
}


async def probe_lldp(ex: Executor, facts: DiscoveryFacts) -> None:
    """One read-only command: `lldpctl -f json`; neighbours land on the ports by netdev (never a failure)."""
    try:
        result = await ex.run(LLDPCTL, sudo=facts.sudo_ok)
    except SudoRefused:
        result = await ex.run(LLDPCTL)
    error = (result.stderr or "").strip()
    facts.lldp_status = None
    if result.exit_status == 127 or "command not found" in error:
        facts.lldp_status = "not installed"
        facts.notes.append("lldpctl: not installed (lldpd): LLDP neighbours unknown")
        return
    if "ermission denied" in error:
        facts.lldp_status = "refused"
    elif not result.ok or "unable to connect" in error:
        facts.lldp_status = "not running"
    if facts.lldp_status:
        facts.notes.append(f"lldpctl: {facts.lldp_status}: {error.splitlines()[-1] if error else 'no output'}")
        return
    try:
        found = parse_lldpctl_json(result.stdout)
    except ParseError as exc:
        facts.lldp_status = "not running"
        facts.notes.append(f"lldpctl_json: {exc}")
        return
    facts.lldp_status = "ok"
    attach_neighbors(facts.ports, found.by_port())


def attach_neighbors(ports: list[NicPort], by_port: dict[str, LldpNeighbor]) -> None:
    for port in ports:
        port.lldp = by_port.get(port.netdev or "")


def rail_ports(view: ClusterView, facts: DiscoveryFacts) -> list[tuple[int, NicPort]]:
    """(rail index, port): `network.rails[i].netdev` when set, else the i-th unclaimed RDMA Ethernet port in PCI
    order (the same rule the network stage uses)."""
    ports = [p for p in facts.rdma_ports() if p.netdev and p.link_layer != "InfiniBand"]
    rails = view.answers.network.rails
    explicit = {r.netdev for r in rails if r.netdev}
    auto = [p for p in ports if p.netdev not in explicit]
    result: list[tuple[int, NicPort]] = []
    for index in range(len(rails) or len(ports)):
        netdev = rails[index].netdev if rails else None
        port = next((p for p in ports if p.netdev == netdev), None) if netdev else (auto.pop(0) if auto else None)
        if port is not None:
            result.append((index, port))
    return result


def switched(view: ClusterView) -> bool:
    from steps.network.design import fabric_of  # steps.network.design imports discovery facts: import late

    return fabric_of(view.answers) == "switched"


def leaf_of(n: LldpNeighbor) -> str:
    return n.chassis_name or n.chassis_id or "?"


def lldp_host_checks(view: ClusterView, facts: DiscoveryFacts) -> list[CheckItem]:
    """What each rail's switch port advertises against the answers: PFC on the lossless priority and the MTU."""
    if not switched(view) or facts.lldp_status != "ok":
        return []
    prio, mtu = view.answers.roce.priority, view.answers.network.mtu
    items: list[CheckItem] = []
    for index, port in rail_ports(view, facts):
        n = port.lldp
        if n is None:
            continue
        where = f"{port.netdev} (rail {index}) -> {n.switch_port}"
        if n.pfc_enabled is None:
            items.append(
                CheckItem(
                    id=f"switch_pfc:{port.netdev}",
                    title=f"rail {index} switch PFC",
                    status="warn",
                    evidence=f"{where} sends no PFC TLV: its PFC state cannot be read from the host",
                    fix=f"enable the DCBX/IEEE PFC TLV on {n.switch_port} (LLDP) or check PFC on priority {prio} there",
                )
            )
        else:
            good = prio in n.pfc_enabled
            items.append(
                CheckItem(
                    id=f"switch_pfc:{port.netdev}",
                    title=f"rail {index} switch PFC",
                    status="pass" if good else "fail",
                    evidence=f"{where} advertises PFC on {_prios(n.pfc_enabled)}"
                    + (f", willing {'yes' if n.pfc_willing else 'no'}" if n.pfc_willing is not None else ""),
                    fix=None
                    if good
                    else f"enable PFC on priority {prio} (DSCP {view.answers.roce.dscp}) on {n.switch_port}: "
                    "RoCE traffic on that port is lossy and drops under congestion (see `roce-wizard switch-config`)",
                )
            )
        dscp = view.answers.roce.dscp
        if dscp in n.app_dscp:
            # The switch's APP TLV says where it queues the RoCE DSCP: any other priority is a lossy queue there.
            good = n.app_dscp[dscp] == prio
            items.append(
                CheckItem(
                    id=f"switch_dscp:{port.netdev}",
                    title=f"rail {index} switch DSCP map",
                    status="pass" if good else "fail",
                    evidence=f"{where} maps DSCP {dscp} to priority {n.app_dscp[dscp]} (APP TLV)",
                    fix=None
                    if good
                    else f"map DSCP {dscp} to priority {prio} on {n.switch_port} (see `roce-wizard switch-config`)",
                )
            )
        if n.mtu is not None:
            good = n.mtu >= mtu
            items.append(
                CheckItem(
                    id=f"switch_mtu:{port.netdev}",
                    title=f"rail {index} switch MTU",
                    status="pass" if good else "fail",
                    evidence=f"{where} advertises max frame size {n.mtu} (host MTU {mtu})",
                    fix=None if good else f"raise the MTU of {n.switch_port} to at least {mtu + 216} (9216 is usual)",
                )
            )
    return items


def lldp_cluster_checks(view: ClusterView, facts: dict[str, DiscoveryFacts]) -> dict[str, list[CheckItem]]:
    """Rail cabling: rail i of every host must reach the leaf most hosts' rail i reach (rail-optimised fabric), or,
    on a fabric of several scalable units, the rail-i leaf of its own unit (steps/discovery/rail_leaves.py)."""
    if not switched(view):
        return {}
    rails = {host: rail_ports(view, f) for host, f in facts.items()}
    leaves: dict[int, Counter[str]] = {}
    for ports in rails.values():
        for index, port in ports:
            if port.lldp is not None:
                leaves.setdefault(index, Counter())[leaf_of(port.lldp)] += 1
    expected, rail_of_leaf = expected_leaves(leaf_at(rails, leaf_of), leaves)
    result: dict[str, list[CheckItem]] = {}
    for host, ports in rails.items():
        items = result.setdefault(host, [])
        wrong = {
            port.netdev: rail_of_leaf.get(leaf_of(port.lldp))
            for i, port in ports
            if port.lldp is not None and expected.get((host, i)) not in (None, leaf_of(port.lldp))
        }
        for index, port in ports:
            leaf = expected.get((host, index))
            items.append(_cabling_item(host, index, port, leaf, leaves.get(index), facts[host], wrong))
    return result


def _cabling_item(
    host: str,
    index: int,
    port: NicPort,
    leaf: str | None,
    counts: Counter[str] | None,
    facts: DiscoveryFacts,
    wrong: dict[str | None, int | None],
) -> CheckItem:
    cid, title, n = f"lldp_rail:{port.netdev}", f"rail {index} cabling (LLDP)", port.lldp
    if n is None:
        why = facts.lldp_status if facts.lldp_status in _FIX else None
        return CheckItem(
            id=cid,
            title=title,
            status="warn",
            evidence=f"{host} {port.netdev} (rail {index}): no LLDP neighbour"
            + (f" (lldpd {why})" if why else " (lldpd runs; the switch port sends no LLDP?)"),
            fix=_FIX[why] if why else "enable LLDP transmit on the leaf switch ports (lldp on Cumulus/SONiC/EOS)",
        )
    seen = f"{host} {port.netdev} (rail {index}) reaches {n.switch_port}"
    if leaf is None:
        tally = ", ".join(f"{k}: {v}" for k, v in (counts or Counter()).most_common())
        return CheckItem(
            id=cid, title=title, status="warn", evidence=f"{seen}; no majority leaf for rail {index} ({tally})"
        )
    if leaf_of(n) == leaf:
        return CheckItem(id=cid, title=title, status="pass", evidence=f"{seen}; rail {index} is on {leaf}")
    other = wrong.get(port.netdev)
    partner = next((d for d, r in wrong.items() if r == index and d != port.netdev), None)
    if partner and other is not None and wrong.get(partner) == index:
        fix = f"swap the cables of {port.netdev} and {partner} on {host}"
    else:
        fix = f"move the cable of {host} {port.netdev} to a port of {leaf}" + (
            f" ({n.chassis_name or n.chassis_id} serves rail {other})" if other is not None else ""
        )
    return CheckItem(
        id=cid,
        title=title,
        status="fail",
        evidence=f"{seen}, but rail {index} is on {leaf} ({(counts or Counter())[leaf]} hosts): cross-cabled",
        fix=fix,
    )


def _prios(values: list[int]) -> str:
    return "priorities " + ",".join(map(str, values)) if values else "no priority"
