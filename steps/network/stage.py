"""Stage network: per-port rails (or per-card RoCE LAG), MTU and addressing in netplan, cabling verified per port."""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from typing import Any, ClassVar

from steps.discovery.facts import DiscoveryFacts
from steps.discovery.gid_read import GID_ATTRS_PATTERN, GID_ATTRS_WHY
from steps.network import predict as network_predict
from steps.network.cabling import KEPT_REPLIES, nearest_replies, new_probe_id, normal, probe_host, ring_peer
from steps.network.checks import host_checks, live_differences
from steps.network.design import Design, design
from steps.network.facts import NETPLAN_PATH, NETWORK_PREFETCH, SYSCTL_PATH, NetworkFacts, probe_network
from steps.network.merge import review_other_files
from steps.network.notes import fabric_notes, gpu_notes
from steps.network.render import netplan_yaml, sysctl_conf, wanted_sysctls
from steps.network.renderer import choose, wait_online_check
from steps.network.routes import probe_routes, route_check, wanted
from steps.network.wiring import Cluster, cabling_checks
from wizard.engine.predict import Prediction
from wizard.engine.step import (
    Change,
    CheckItem,
    ClusterView,
    FileWrite,
    HostPlan,
    Impact,
    ProbeContext,
    RemoteCommand,
    Step,
)
from wizard.executors.base import Executor


class Network(Step):
    id = "network"
    title = "Network topology"
    summary = (
        "Per-port rails (or per-card RoCE LAG), MTU 9000 and addressing in netplan; cabling verified port by port."
    )
    dependent_probes: ClassVar[dict[str, str]] = {
        f"stat -c * {NETPLAN_PATH}": "the wizard's netplan file's mode, only when this read found the file",
        "cat -- /*/netplan/*.yaml": "per other netplan file that find of this read listed",
        "sysctl -e *": "the ARP and rp_filter sysctls of every interface that ip of this read listed",
        GID_ATTRS_PATTERN: GID_ATTRS_WHY,
    }

    def prefetch(self, ctx: ProbeContext) -> list[tuple[Sequence[str] | str, bool]]:
        return list(NETWORK_PREFETCH)

    async def probe(self, ctx: ProbeContext) -> dict[str, Any]:
        facts = await probe_network(ctx.executor)
        return facts.model_dump(mode="json")

    def predict(self, view: ClusterView, host: str, plan: HostPlan) -> Prediction | None:
        loaded = load_design(view, host)
        return None if isinstance(loaded, str) else network_predict.predict(view, host, plan, loaded[2])

    def plan(self, view: ClusterView, host: str) -> HostPlan:
        plan = HostPlan(stage=self.id, host=host)
        loaded = load_design(view, host)
        if isinstance(loaded, str):
            plan.blockers.append(loaded)
            return plan
        disc, net, d = loaded
        mtu = view.answers.network.mtu
        renderer, renderer_why = _renderer(disc, net, d)
        content = netplan_yaml(d, mtu, renderer)
        merge_notes, merge_blockers = review_other_files(d, net.netplan_others, content)
        plan.notes += fabric_notes(view.answers, d) + gpu_notes(disc, d.endpoints) + d.notes + merge_notes
        if d.endpoints:
            plan.notes.append(
                f"renderer {renderer} on every rail, written per interface: {renderer_why}. Rails are optional: "
                "true, so a rail whose peer is off never holds the boot at network-online.target"
            )
            waiting = wait_online_check(d, net.model_copy(update={"netplan_file": content}), NETPLAN_PATH)
            if waiting.status != "pass":
                plan.notes.append(f"{waiting.evidence}; {waiting.fix}")
        plan.blockers += d.blockers + merge_blockers
        if plan.blockers or not d.endpoints:
            if not plan.blockers:
                plan.noop_reason = "no rail or bond to configure"
            return plan
        why = (
            "RDMA traffic leaves by the port of the GID it uses; one subnet per rail keeps each rail's addresses on "
            "its own cable. netplan apply re-applies every interface; "
            + (
                f"this file reconfigures {d.ssh_interface}, which carries SSH (allowed for this host)."
                if d.ssh_interface and any(d.ssh_interface in (e.netdev, *e.members) for e in d.endpoints)
                else "the SSH interface is not in this file."
            )
        )
        if net.netplan_file != content:
            plan.changes.append(
                Change(
                    summary=f"write {NETPLAN_PATH} ({_summary(d)}) and apply it",
                    why=why,
                    impact=Impact.DISRUPTIVE,
                    files=[FileWrite(path=NETPLAN_PATH, content=content, mode=0o600, before=net.netplan_file)],
                    commands=[RemoteCommand(argv=["netplan", "generate"]), RemoteCommand(argv=["netplan", "apply"])],
                    creates_links=[
                        e.netdev for e in d.endpoints if e.bond is not None and e.netdev not in net.interfaces
                    ],
                )
            )
        else:
            if net.netplan_mode not in (None, "600") or net.netplan_owner not in (None, "root:root"):
                plan.changes.append(
                    Change(
                        summary=f"make {NETPLAN_PATH} root-only (mode 600)",
                        why="netplan warns that configuration readable by others is too open",
                        commands=[
                            RemoteCommand(argv=["chown", "root:root", NETPLAN_PATH]),
                            RemoteCommand(argv=["chmod", "600", NETPLAN_PATH]),
                        ],
                    )
                )
            diffs = live_differences(d, net, mtu)
            if diffs:
                plan.changes.append(
                    Change(
                        summary=f"re-apply {NETPLAN_PATH}: " + "; ".join(diffs[:4]),
                        why=why,
                        impact=Impact.DISRUPTIVE,
                        commands=[RemoteCommand(argv=["netplan", "apply"])],
                    )
                )
        plan.changes += _sysctl_changes(view, d, net)
        if not plan.changes:
            plan.noop_reason = (
                f"{NETPLAN_PATH} is current and applied: {_summary(d)} with MTU {mtu} and their addresses"
                + ("; multi-NIC sysctls in place" if sysctls_wanted(view, d) else "")
            )
        return plan

    def checks(self, view: ClusterView, host: str) -> list[CheckItem]:
        loaded = load_design(view, host)
        if isinstance(loaded, str):
            return [CheckItem(id="facts", title="network facts", status="fail", evidence=loaded)]
        disc, net, d = loaded
        if d.blockers:
            return [CheckItem(id="design", title="network design", status="fail", evidence="; ".join(d.blockers))]
        mtu = view.answers.network.mtu
        sysctl = sysctl_conf(d.sysctl_netdevs) if sysctls_wanted(view, d) else None
        netplan = netplan_yaml(d, mtu, _renderer(disc, net, d)[0])
        return host_checks(d, net, mtu, netplan, sysctl) + [wait_online_check(d, net, NETPLAN_PATH)]

    async def boot_causes(self, executor: Executor, facts: dict[str, Any]) -> list[str]:
        from steps.network.boot import read_boot_causes

        return await read_boot_causes(executor, (facts.get("network") or {}).get("netplan_file"))

    def cluster_checks(self, view: ClusterView) -> dict[str, list[CheckItem]]:
        result: dict[str, list[CheckItem]] = {}
        for cluster in _clusters(view):
            result.update({host: cabling_checks(cluster, host) for host in cluster.pings})
        for host in [h.name for h in view.answers.hosts]:
            cluster = (view.stage_facts(host, "network") or {}).get("cluster") or {}
            routes = route_check(host, cluster.get("routes"))
            if routes:
                result.setdefault(host, []).extend(routes)
        return result

    async def cluster_probe(self, view: ClusterView, executors: dict[str, Executor]) -> dict[str, dict[str, Any]]:
        order = [h.name for h in view.answers.hosts if h.name in executors]
        designs: dict[str, Design] = {}
        nets: dict[str, NetworkFacts] = {}
        for host in order:
            loaded = load_design(view, host)
            if not isinstance(loaded, str) and not loaded[2].blockers:
                nets[host], designs[host] = loaded[1], loaded[2]
        keys = {h: {e.key for e in d.endpoints} for h, d in designs.items()}
        tested = [h for h in order if h in designs]
        probe_id = new_probe_id()
        mtu = view.answers.network.mtu
        owners = {normal(a): (h, i.name) for h, n in nets.items() for i in n.interfaces.values() for a in i.link_local}

        async def one(host: str) -> tuple[str, dict[str, Any]]:
            d, net = designs[host], nets[host]
            carrier = {name: iface.carrier for name, iface in net.interfaces.items()}
            peers = {}
            for e in d.endpoints:
                peer = ring_peer(tested, host, keys, e.key)
                peer_e = next((x for x in designs[peer].endpoints if x.key == e.key), None) if peer else None
                peers[e.key] = (peer, peer_e.ip) if peer and peer_e else None
            no_ll = {name for name, iface in net.interfaces.items() if not iface.link_local}
            ports = await probe_host(executors[host], d.endpoints, carrier, no_ll, peers, mtu)
            _bound_replies(ports, d, net, owners, tested, host)
            found: dict[str, Any] = {"probe_id": probe_id, "hosts": tested, "ports": ports}
            if d.fabric == "switched":  # per-rail policy routing, asked of the kernel (steps/network/routes.py)
                found["routes"] = await probe_routes(executors[host], wanted(designs, tested, host))
            return host, found

        # In waves of ssh.max_parallel_hosts, as the stage's other work: every port of every host pinging ff02::1
        # at once makes each host of a 1,024-host rail answer 8,000 echo requests in the same second.
        wave = asyncio.Semaphore(view.answers.ssh.max_parallel_hosts)

        async def bounded(host: str) -> tuple[str, dict[str, Any]]:
            async with wave:
                return await one(host)

        return dict(await asyncio.gather(*(bounded(h) for h in tested)))


def _bound_replies(ports: dict[str, Any], d: Design, net: NetworkFacts, owners: dict[str, tuple[str, str]],
                   order: list[str], host: str) -> None:  # fmt: skip
    """A large segment's multicast replies cut to the nearest peers (cabling.nearest_replies), keeping the count.
    Not for IPoIB: its reach check wants every peer of the partition by name."""
    ib = {e.netdev for e in d.endpoints if e.port is not None and e.port.ib}
    for netdev, result in ports.items():
        ping = result.get("link_local")
        if netdev in ib or not ping or not ping.get("replies"):
            continue
        own = {normal(a) for a in net.interfaces[netdev].link_local} if netdev in net.interfaces else set()
        kept, replied = nearest_replies(ping["replies"], own, owners, order, host)
        if replied > KEPT_REPLIES:
            ping["replies"], ping["replied"] = kept, replied


def load_design(view: ClusterView, host: str) -> tuple[DiscoveryFacts, NetworkFacts, Design] | str:
    """A host's saved discovery and network facts and the rail design made from them, or why there is none.
    Public: the Ansible export's asserts (wizard/export/ansible_verify.py) check the same design the stage applies."""
    raw_disc = view.stage_facts(host, "discovery")
    raw_net = view.stage_facts(host, "network")
    if raw_disc is None:
        return f"{host}: no discovery facts; run the discovery stage first"
    if raw_net is None:
        return f"{host}: no network facts (probe did not run)"
    disc = DiscoveryFacts.model_validate(raw_disc)
    net = NetworkFacts.model_validate({k: v for k, v in raw_net.items() if k != "cluster"})
    return disc, net, design(view.answers, host, disc, net)


def _renderer(disc: DiscoveryFacts, net: NetworkFacts, d: Design) -> tuple[str, str]:
    """The host's own netplan renderer for the rails, and why (steps/network/renderer.py)."""
    policy = any(e.table is not None for e in d.endpoints)
    return choose(net.netplan_others, net.nm_active, net.networkd_active, disc.packages.get("netplan.io"), policy)


def _clusters(view: ClusterView) -> list[Cluster]:
    """One Cluster per cross-host test: results of hosts tested together are never mixed with older ones."""
    order = [h.name for h in view.answers.hosts]
    designs: dict[str, Design] = {}
    nets: dict[str, NetworkFacts] = {}
    groups: dict[str, dict[str, Any]] = {}
    for host in order:
        loaded = load_design(view, host)
        if isinstance(loaded, str):
            continue
        nets[host], designs[host] = loaded[1], loaded[2]
        result = (view.stage_facts(host, "network") or {}).get("cluster")
        if result and not loaded[2].blockers:
            groups.setdefault(result.get("probe_id", ""), {})[host] = result.get("ports", {})
    mtu = view.answers.network.mtu
    switch_ports = {}
    for host in designs:
        disc = view.stage_facts(host, "discovery") or {}
        for port in disc.get("ports", []):
            lldp = port.get("lldp") or {}
            if port.get("netdev") and lldp.get("chassis_name") and lldp.get("port_id"):
                switch_ports[(host, port["netdev"])] = f"{lldp['chassis_name']} {lldp['port_id']}"
    return [Cluster(order, designs, nets, pings, mtu, switch_ports=switch_ports) for pings in groups.values()]


def _summary(d: Design) -> str:
    return ", ".join(f"{e.label} {e.netdev} {e.address}" for e in d.endpoints)


def sysctls_wanted(view: ClusterView, d: Design) -> bool:
    """Whether the multi-NIC ARP/rp_filter sysctls belong to this design (asked and more than one rail port)."""
    return view.answers.network.multi_nic_sysctls and len(d.endpoints) >= 2


def _sysctl_changes(view: ClusterView, d: Design, net: NetworkFacts) -> list[Change]:
    if not sysctls_wanted(view, d):
        return []
    content = sysctl_conf(d.sysctl_netdevs)
    apply = RemoteCommand(argv=["sysctl", "-p", SYSCTL_PATH])
    why = (
        "several rails on one host: without arp_ignore/arp_announce a port answers ARP for its neighbours' "
        "addresses (a cross-wired cable then looks fine), and strict rp_filter drops replies on a rail"
    )
    if net.sysctl_file != content:
        return [
            Change(
                summary=f"write {SYSCTL_PATH} (arp_ignore=1, arp_announce=2, rp_filter=2 on "
                f"{', '.join(d.sysctl_netdevs)}) and load it",
                why=why,
                files=[FileWrite(path=SYSCTL_PATH, content=content, before=net.sysctl_file)],
                commands=[apply],
            )
        ]
    wrong = [k for k, v in wanted_sysctls(d.sysctl_netdevs).items() if net.sysctl_live.get(k) != v]
    if wrong:
        return [Change(summary=f"load {SYSCTL_PATH} ({len(wrong)} value(s) not live)", why=why, commands=[apply])]
    return []
