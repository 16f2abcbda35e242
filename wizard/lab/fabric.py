"""Cabling between simulated hosts: back-to-back cables or per-rail switches, plus the management network."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from wizard.lab.faults import Fault
    from wizard.lab.ib import IbSubnet
    from wizard.lab.rails_plan import RailPlan
    from wizard.lab.switches import SwitchFabric

PortRef = tuple[str, int]  # (host name, index into the host profile's ports)


def crosswire_perm(nports: int, ports_per_card: int) -> list[int]:
    """Swap the cables of the two cards (card k takes card n-1-k's cables); one card: swap its ports."""
    ncards = max(1, nports // max(1, ports_per_card))
    if ncards >= 2:
        return [((ncards - 1 - i // ports_per_card) * ports_per_card) + i % ports_per_card for i in range(nports)]
    return list(reversed(range(nports)))


@dataclass
class Fabric:
    """Which data ports share a segment (a cable holds 2 ends, a rail switch holds one port per host)."""

    segments: dict[PortRef, str] = field(default_factory=dict)
    switched: bool = False
    switch_mtu: int = 9216
    switches: SwitchFabric | None = None  # modelled leaf/spine switches (rails-16); None: ideal rail switches

    @classmethod
    def back_to_back(cls, a: str, b: str, nports: int, perms: dict[str, list[int]] | None = None) -> Fabric:
        fab = cls()
        perms = perms or {}
        for host in (a, b):
            perm = perms.get(host, list(range(nports)))
            for i in range(nports):
                fab.segments[(host, i)] = f"cable{perm[i]}"
        return fab

    @classmethod
    def rails(cls, names: list[str], nports: int, perms: dict[str, list[int]] | None = None) -> Fabric:
        fab = cls(switched=True)
        perms = perms or {}
        for host in names:
            perm = perms.get(host, list(range(nports)))
            for i in range(nports):
                fab.segments[(host, i)] = f"rail{perm[i]}"
        return fab

    @classmethod
    def leaf_rails(
        cls,
        names: list[str],
        netdevs: list[str],
        faults: Iterable[Fault] = (),
        switch_os: str = "cumulus",
        os_of: Mapping[str, str] | None = None,
        plan: RailPlan | None = None,
        line_gbps: float = 400.0,
    ) -> Fabric:
        """Rail i of every host on its SU's rail-i leaf (``leaf-r<i>`` on one SU): each rail is one L2 segment (the
        leaf's VLAN, or across SUs the rail's VNI, its gateway on every leaf of the rail); a host port cabled to
        another leaf (``wrong_leaf``) sits in that leaf's rail segment."""
        from wizard.lab.rail_fabric import rail_fabric
        from wizard.lab.switches import segment_of

        sw = rail_fabric(names, netdevs, faults, switch_os, os_of, plan, line_gbps)
        fab = cls(switched=True, switches=sw)
        for ref, sp in sw.attach.items():
            fab.segments[ref] = segment_of(sw, sp)
        return fab

    @classmethod
    def infiniband(cls, subnet: IbSubnet, outside_partition: set[PortRef]) -> Fabric:
        """Every IB port in one subnet: IPoIB on the default partition is one broadcast domain across both switches
        (whichever rail subnet its address is in). A port on the SM-less switch, or outside the default partition
        (IBTA 10.9: no common P_Key, no packet), is in a segment of its own."""
        fab = cls(switched=True, switch_mtu=4092)
        for ref, (switch, _) in subnet.attach.items():
            fab.segments[ref] = "ib" if subnet.managed(switch) else f"ib-{switch}"
            if ref in outside_partition:
                fab.segments[ref] = f"ib-pkey-{ref[0]}-{ref[1]}"
        return fab

    def path_mtu(self, a: PortRef, b: PortRef) -> int:
        """Largest IP packet the switches between two host ports forward (ingress and egress port MTU)."""
        if not self.switched:
            return 65535
        if self.switches is None:
            return self.switch_mtu
        # both leaf ports, and between two leaves the uplinks and the spine ports the pair's flow crosses
        return min((p.mtu for p in self.switches.path(a, b)), default=self.switch_mtu)

    def members(self, segment: str) -> list[PortRef]:
        """The host ports in ``segment`` (indexed once: a 1,024-host rail is asked for its members on every ping)."""
        index = self.__dict__.get("_members")
        if index is None or index[0] != len(self.segments):
            by_segment: dict[str, list[PortRef]] = {}
            for r, s in self.segments.items():
                by_segment.setdefault(s, []).append(r)
            index = self.__dict__["_members"] = (len(self.segments), by_segment)
        return index[1].get(segment, [])

    def peers(self, ref: PortRef) -> list[PortRef]:
        seg = self.segments.get(ref)
        if seg is None:
            return []
        return [r for r in self.members(seg) if r != ref]

    def segment(self, ref: PortRef) -> str | None:
        return self.segments.get(ref)
