"""How the export splits a cluster by link layer: the RoCE hosts keep the per-rail export (one resource, one
MacvlanNetwork per rail), and InfiniBand hosts are exported per node group (fabric.groups), as seed 003 ran its V100
and A100 nodes: one RDMA shared device plugin resource per group and the group's own IPoIB networks."""

from __future__ import annotations

from dataclasses import dataclass, field, replace

from wizard.export.k8s_inputs import HostFacts, HostRail, K8sInputs, Rail

DEFAULT_GROUP = "default"  # hosts in no fabric.groups entry (wizard/answers/fabric.py: "form the default group")


def ethernet_view(inputs: K8sInputs) -> K8sInputs:
    """The RoCE part of the cluster: every host and rail end that is not InfiniBand (all of it on an Ethernet
    cluster, where the export is what it always was)."""
    if not any(h.infiniband for h in inputs.hosts):
        return inputs
    hosts = [h for h in inputs.hosts if not h.infiniband]
    rails = [replace(r, ends=[e for e in r.ends if not e.infiniband]) for r in inputs.rails]
    return K8sInputs(inputs.answers, hosts, [r for r in rails if r.ends], inputs.blockers, inputs.missing_facts)


def k8s_name(text: str) -> str:
    """A group name as a Kubernetes object name (DNS-1123: no underscores)."""
    return text.replace("_", "-").lower()


@dataclass
class IbGroup:
    """InfiniBand hosts of one node group: one RDMA resource, one IPoIB network per rail, one set of test pods."""

    name: str
    resource: str  # without the rdma/ prefix
    hosts: list[HostFacts]
    rails: list[Rail]  # the cluster's rails with this group's ends only
    networks: dict[str, str] = field(default_factory=dict)  # rail key -> IPoIBNetwork (and NAD) name

    @property
    def netdevs(self) -> list[str]:
        """The IPoIB netdevs of the group's rail ports, rail order first (the device plugin's ifNames)."""
        out: list[str] = []
        for rail in self.rails:
            out.extend(e.netdev for e in rail.ends if e.netdev and e.netdev not in out)
        return out

    def end(self, rail: Rail, host: str) -> HostRail | None:
        return next((e for e in rail.ends if e.host == host), None)

    def network(self, rail: Rail) -> str:
        return self.networks[rail.key]


def ib_groups(inputs: K8sInputs) -> list[IbGroup]:
    """The InfiniBand node groups in the answers' group order (the default group last)."""
    fabric = inputs.answers.fabric
    order = [g.name for g in fabric.groups] + [DEFAULT_GROUP]
    members: dict[str, list[HostFacts]] = {}
    for host in inputs.hosts:
        if host.infiniband:
            members.setdefault(fabric.group_name(host.name), []).append(host)
    groups = []
    for name in (n for n in order if n in members):
        declared = next((g for g in fabric.groups if g.name == name), None)
        resource = declared.resource if declared else f"rdma_{DEFAULT_GROUP}"
        names = {h.name for h in members[name]}
        rails = [replace(r, ends=[e for e in r.ends if e.infiniband and e.host in names]) for r in inputs.rails]
        groups.append(IbGroup(name, resource, members[name], [r for r in rails if r.ends]))
    _name_networks(inputs, groups)
    return groups


def _name_networks(inputs: K8sInputs, groups: list[IbGroup]) -> None:
    """A rail's network keeps the rail's name where it is the rail's only network; where RoCE hosts (a
    MacvlanNetwork) or another group share the rail, each group's network is named <rail>-<group>, since an
    IPoIBNetwork names one parent netdev and the groups' netdevs differ (seed 003: ibp94s0f0 and ibp75s0)."""
    ethernet = {r.key for r in ethernet_view(inputs).rails} if any(not h.infiniband for h in inputs.hosts) else set()
    for group in groups:
        for rail in group.rails:
            shared = rail.key in ethernet or sum(1 for g in groups if any(r.key == rail.key for r in g.rails)) > 1
            group.networks[rail.key] = f"{rail.name}-{k8s_name(group.name)}" if shared else rail.name
