"""What the Kubernetes export is built from: the answers plus each host's facts, reduced to rails by the network
stage's own design function (steps/network/design.py), so no rail-to-port rule is written twice."""

from __future__ import annotations

import ipaddress
from dataclasses import dataclass, field
from typing import Any

from steps.discovery.facts import DiscoveryFacts
from steps.network.design import Design, design
from steps.network.facts import NetworkFacts
from wizard.answers.model import Answers

IB = "InfiniBand"  # the link layer discovery reports (ibv_devinfo / sysfs link_layer)


@dataclass
class HostRail:
    """One host's end of a rail: the interface and RDMA device that carry it there."""

    host: str
    netdev: str
    address: str  # the host's own address on the rail, "192.168.11.1/24"
    rdma_device: str | None
    device_id: str | None
    lag: bool = False
    members: list[str] = field(default_factory=list)
    infiniband: bool = False  # an IPoIB netdev on an InfiniBand port (k8s_groups.py exports these per node group)
    rdma_port: int = 1


@dataclass
class Rail:
    """One RDMA network as Kubernetes sees it: a resource, a secondary network and an IP pool."""

    index: int
    key: str  # "rail0" or "bond:bond0", as in the network design
    subnet: ipaddress.IPv4Network | ipaddress.IPv6Network
    gateway: str | None
    ends: list[HostRail] = field(default_factory=list)

    @property
    def name(self) -> str:
        """Kubernetes-safe name shared by the resource, the network and the pool."""
        return self.key.replace("bond:", "lag-").replace("_", "-").lower()

    @property
    def resource(self) -> str:
        """RDMA shared device plugin resource name (without the rdma/ prefix)."""
        return f"rdma_{self.name.replace('-', '_')}"

    @property
    def netdevs(self) -> list[str]:
        return sorted({e.netdev for e in self.ends})

    @property
    def device_ids(self) -> list[str]:
        return sorted({e.device_id for e in self.ends if e.device_id})


@dataclass
class HostFacts:
    """The facts of one host the export reads."""

    name: str
    disc: DiscoveryFacts
    net: NetworkFacts
    design: Design
    infiniband: bool = False  # the host's RDMA ports run InfiniBand (fabric.link_layer, or auto and discovery)
    has_facts: bool = True  # discovery has run on the host


@dataclass
class K8sInputs:
    answers: Answers
    hosts: list[HostFacts]
    rails: list[Rail]
    blockers: list[str] = field(default_factory=list)
    missing_facts: list[str] = field(default_factory=list)


def host_facts(answers: Answers, name: str, facts: dict[str, Any]) -> HostFacts:
    """Validated facts of one host; a stage never read gives empty facts (the checks say so)."""
    disc = DiscoveryFacts.model_validate(facts.get("discovery") or {})
    net = NetworkFacts.model_validate(_network_only(facts.get("network") or {}))
    ib = runs_infiniband(answers, name, disc)
    return HostFacts(name, disc, net, design(answers, name, disc, net), ib, bool(facts.get("discovery")))


def runs_infiniband(answers: Answers, name: str, disc: DiscoveryFacts) -> bool:
    """fabric.link_layer of the host; with auto, InfiniBand when discovery found every RDMA port running it."""
    layer = answers.fabric.link_layer_of(name)
    if layer == "auto":
        ports = disc.rdma_ports()
        return bool(ports) and all(p.link_layer == IB for p in ports)
    return layer == "infiniband"


def _network_only(data: dict[str, Any]) -> dict[str, Any]:
    # The runner keeps cluster-wide probe results next to a stage's facts under "cluster"; they are no host fact.
    return {k: v for k, v in data.items() if k != "cluster"}


def gather(answers: Answers, facts: dict[str, dict[str, Any]]) -> K8sInputs:
    """Rails across every host, from the same design the network stage applies (IPoIB rails on InfiniBand hosts)."""
    hosts = [host_facts(answers, h.name, facts.get(h.name, {})) for h in answers.hosts]
    # An InfiniBand host whose rails all name their netdev can be exported from the answers alone.
    named = bool(answers.network.rails) and all(r.netdev for r in answers.network.rails)
    missing = [h.name for h in hosts if not h.has_facts and not (h.infiniband and named)]
    rails: dict[str, Rail] = {}
    blockers: list[str] = []
    for host in hosts:
        if host.infiniband and answers.network.topology != "rails":
            blockers.append(
                f"{host.name}: network.topology is {answers.network.topology}, but the host runs InfiniBand: IPoIB "
                "rails need topology rails (one subnet per port); RoCE LAG and Linux bonds are Ethernet designs"
            )
            continue
        if host.infiniband and not host.has_facts:
            _add_named_ends(answers, host, rails)
            continue
        blockers.extend(host.design.blockers)
        for position, endpoint in enumerate(host.design.endpoints):
            if not endpoint.rdma:
                continue
            rail = rails.get(endpoint.key)
            if rail is None:
                rail = rails[endpoint.key] = Rail(position, endpoint.key, endpoint.subnet, endpoint.gateway)
            port = host.disc.port_by_netdev(endpoint.members[0] if endpoint.lag else endpoint.netdev)
            rail.ends.append(
                HostRail(
                    host=host.name,
                    netdev=endpoint.netdev,
                    address=endpoint.address,
                    rdma_device=endpoint.rdma_device,
                    device_id=port.device_id if port else None,
                    lag=endpoint.lag,
                    members=list(endpoint.members),
                    infiniband=host.infiniband,
                    rdma_port=(port.rdma_port or 1) if port else 1,
                )
            )
    ordered = sorted(rails.values(), key=lambda r: (r.index, r.key))
    for index, rail in enumerate(ordered):
        rail.index = index
    return K8sInputs(answers, hosts, ordered, blockers, missing)


def _add_named_ends(answers: Answers, host: HostFacts, rails: dict[str, Rail]) -> None:
    """An InfiniBand host discovery has not seen: its rail ports are the netdevs the answers name (the design needs
    discovery facts to find a port), its RDMA device names stay unknown."""
    for index, wanted in enumerate(answers.network.rails):
        subnet = ipaddress.ip_network(wanted.subnet)
        rail = rails.setdefault(f"rail{index}", Rail(index, f"rail{index}", subnet, wanted.gateway))
        address = f"{subnet.network_address + answers.host_id(host.name)}/{subnet.prefixlen}"
        rail.ends.append(HostRail(host.name, wanted.netdev or "", address, None, None, infiniband=True))
