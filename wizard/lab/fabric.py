"""Cabling between simulated hosts: back-to-back cables or per-rail switches, plus the management network."""

from __future__ import annotations

from dataclasses import dataclass, field

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

    def peers(self, ref: PortRef) -> list[PortRef]:
        seg = self.segments.get(ref)
        if seg is None:
            return []
        return [r for r, s in self.segments.items() if s == seg and r != ref]

    def segment(self, ref: PortRef) -> str | None:
        return self.segments.get(ref)
