"""Where each host port is cabled, from the LLDP neighbour discovery read on it: the leaf and the leaf's port of
every host rail, and the hosts grouped by the leaves they share.

On a rail-optimized fabric a scalable unit (SU) of hosts shares one leaf per rail (NVIDIA DGX SuperPOD reference
architecture: 32 nodes per SU, rail i of each on the SU's rail-i leaf). Tests between two hosts of one SU stay on
their leaves; tests between SUs cross the spine. The map is what lets `bwtest --quick` pick both kinds and lets the
suspect inference tell a host port from a leaf or its uplinks."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from wizard.validate.hostfacts import HostFacts

NO_LLDP = "(no LLDP)"


@dataclass(frozen=True)
class PortPlace:
    """One host rail port and what is on the other end of its cable."""

    host: str
    rail: int
    netdev: str
    leaf: str | None = None
    leaf_port: str | None = None
    speed_gbps: float | None = None

    def describe(self) -> str:
        """`gpu-0412 rail 3 (enp154s0np0, leaf-su13-r3 swp12)`: what an operator walks to."""
        where = f", {self.leaf} {self.leaf_port or '?'}" if self.leaf else ""
        return f"{self.host} rail {self.rail} ({self.netdev}{where})"


class FabricMap:
    """Host ports by (host, rail); hosts in answers order."""

    def __init__(self, hosts: list[str], places: list[PortPlace]) -> None:
        self.hosts = list(hosts)
        self.places = {(p.host, p.rail): p for p in places}
        self._rails: dict[str, int] = {}
        for p in places:
            self._rails[p.host] = max(self._rails.get(p.host, 0), p.rail + 1)

    @classmethod
    def from_facts(cls, hosts: list[str], facts: dict[str, HostFacts]) -> FabricMap:
        places = []
        for host in hosts:
            found = facts.get(host)
            if found is None or found.error:
                continue
            for rail, port in enumerate(found.rails()):
                n = port.lldp
                speed = port.speed_mbps / 1000 if port.speed_mbps and port.speed_mbps > 0 else None
                places.append(
                    PortPlace(
                        host=host,
                        rail=rail,
                        netdev=port.netdev or "?",
                        leaf=(n.chassis_name or n.chassis_id) if n is not None else None,
                        leaf_port=n.port_id if n is not None else None,
                        speed_gbps=speed,
                    )
                )
        return cls(hosts, places)

    def rails(self, host: str) -> int:
        return self._rails.get(host, 0)

    def place(self, host: str, rail: int) -> PortPlace | None:
        return self.places.get((host, rail))

    def leaf(self, host: str, rail: int) -> str | None:
        place = self.places.get((host, rail))
        return place.leaf if place is not None else None

    def describe(self, host: str, rail: int) -> str:
        place = self.places.get((host, rail))
        return place.describe() if place is not None else f"{host} rail {rail}"

    def group_of(self, host: str) -> str:
        """The host's SU, named by its rail-0 leaf (a host without LLDP joins the NO_LLDP group)."""
        return self.leaf(host, 0) or NO_LLDP

    def groups(self) -> list[list[str]]:
        """Hosts that can be tested (ports known), grouped by SU; groups in the order their first host appears."""
        out: dict[str, list[str]] = {}
        for host in self.hosts:
            if self.rails(host):
                out.setdefault(self.group_of(host), []).append(host)
        return list(out.values())

    def leaves(self) -> list[str]:
        return sorted({p.leaf for p in self.places.values() if p.leaf})

    def ports_on(self, leaf: str) -> list[PortPlace]:
        return [p for p in self.places.values() if p.leaf == leaf]

    def majority_speed(self, rail: int) -> float | None:
        """The speed most ports of this rail trained at: what a port that trained lower is compared with."""
        counts: dict[float, int] = {}
        for p in self.places.values():
            if p.rail == rail and p.speed_gbps:
                counts[p.speed_gbps] = counts.get(p.speed_gbps, 0) + 1
        return max(counts, key=lambda s: (counts[s], s)) if counts else None
