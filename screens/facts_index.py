"""Discovery facts of many hosts, summarised once per facts file: the cells the discovery page shows, the leaf
switch of each rail (and the phrase pages group hosts by) and the text a filter searches. Only the shown host's
full facts stay in memory (1,000 hosts' parsed facts would take hundreds of MiB)."""

from __future__ import annotations

import json
import os
import re
from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

from steps.discovery.facts import DiscoveryFacts, NicPort

PORT_COLUMNS = ("netdev", "rdma", "state", "speed", "mtu", "switch/port", "v2 GID", "fw", "numa", "model", "pci")


def port_cells(port: NicPort) -> dict[str, str]:
    """The table's values for one port, as text."""
    speed = f"{port.speed_mbps // 1000}G" if port.speed_mbps else "?"
    if port.ib is not None and port.ib.rate_gbps:  # InfiniBand: the trained rate and width (a 1X port shows it)
        speed = f"{port.ib.rate_gbps:g}G {port.ib.width or '?'}X"
    gid = port.roce_v2_ipv4_gid
    return {
        "netdev": port.netdev or "-",
        "rdma": f"{port.rdma_device}/{port.rdma_port}" if port.rdma_device else "-",
        "model": port.model,
        "fw": port.firmware or "?",
        "speed": speed,
        "mtu": str(port.mtu or "?"),
        "switch/port": _switch_port(port),
        "state": (port.rdma_state or ("up" if port.link_detected else "down")).lower(),
        "v2 GID": "-" if gid is None else str(gid),
        "numa": "-" if port.numa_node is None else str(port.numa_node),
        "pci": port.pci,
    }


def host_cells(facts: DiscoveryFacts) -> dict[str, str]:
    return {
        "OS": facts.os_pretty or f"{facts.os_id} {facts.os_version}",
        "kernel": facts.kernel,
        "driver stack": f"{facts.ofed_stack} {facts.ofed_version or ''}".strip()
        if facts.ofed_stack
        else ("inbox (the kernel's own mlx5)" if "mlx5_core" in facts.modules else "none"),
        "RDMA ports": str(len(facts.rdma_ports())),
        "GPUs": f"{len(facts.gpus)} x {facts.gpus[0].name}" if facts.gpus else "none",
        "GPU driver": facts.gpu_driver or "-",
        "SSH arrives on": facts.ssh_interface or "?",
        "platform": platform_cell(facts),
    }


def platform_cell(facts: DiscoveryFacts) -> str:
    """IOMMU mode, ACS redirects, PCIe link downgrades and the firmware tool, in one line (details in the checks)."""
    platform = facts.platform
    if platform is None:
        return "not read"
    types = sorted(set(platform.iommu_types.values()))
    iommu = "IOMMU off" if not platform.iommu_groups else f"IOMMU {'/'.join(types) or 'on'}"
    redirecting = [b for b, bridge in platform.bridges.items() if bridge.redirect]
    acs = f"ACS redirect enabled on {len(redirecting)} PCIe bridge(s)"
    if platform.caps_readable is False:
        acs = "ACS unreadable"
    # An idle GPU lowers its link speed to save power; only its width counts, as in the pcie_links check.
    slow = [
        link
        for link in platform.links
        if link.sta_width < link.cap_width or (link.kind == "nic" and link.sta_speed < link.cap_speed)
    ]
    links = f"{len(slow)} PCIe link(s) downgraded" if slow else "PCIe links at full width/speed"
    return " · ".join([iommu, acs if redirecting or platform.caps_readable is False else "no ACS redirect", links])


def majority(values: list[str]) -> str | None:
    return Counter(values).most_common(1)[0][0] if values else None


def rail_leaves(facts: DiscoveryFacts) -> tuple[str | None, ...]:
    """Per RDMA port in PCI (rail) order, the switch it is cabled to: LLDP's chassis name on Ethernet, iblinkinfo's
    switch on InfiniBand; None where neither is known."""
    leaves: list[str | None] = []
    for port in facts.rdma_ports():
        if port.lldp is not None:
            leaves.append(port.lldp.chassis_name or port.lldp.chassis_id or None)
        elif port.ib is not None and port.ib.switch:
            leaves.append(port.ib.switch)
        else:
            leaves.append(None)
    return tuple(leaves)


@dataclass(slots=True)
class HostSummary:
    """What the pages need of one host's discovery facts."""

    leaves: tuple[str | None, ...]
    """The switch each rail reaches, in PCI order (None: not known)."""
    cells: dict[str, str]
    ports: list[dict[str, str]]
    search: str
    """Lower-cased: port names, RDMA devices, switch names and ports (host name and checks are added by pages)."""
    leaf_group: str | None = None
    """``leaf_group(leaves)``, computed once: the leaf column's text and the key hosts are grouped by."""

    @property
    def leaf(self) -> str | None:
        """The host's leaves across rails in one short phrase ("leaf-r0..r7"), None when no rail's is known."""
        return self.leaf_group

    @property
    def leaf_names(self) -> str:
        """Every distinct leaf name, lower-cased and space-separated, for filters ("/leaf-r3" finds the host)."""
        return " ".join(dict.fromkeys(name.lower() for name in self.leaves if name))

    @property
    def ports_down(self) -> int:
        return sum(1 for p in self.ports if p["state"] not in ("active", "up"))


def summarise(facts: DiscoveryFacts) -> HostSummary:
    ports = [port_cells(p) for p in facts.rdma_ports()]
    leaves = rail_leaves(facts)
    words = [f"{p['netdev']} {p['rdma']} {p['switch/port']}" for p in ports]
    words += [name for name in dict.fromkeys(leaves) if name]  # IB switch names, LLDP chassis ids
    return HostSummary(leaves, host_cells(facts), ports, " ".join(words).lower(), leaf_group(leaves))


class FactsIndex:
    """Per-host summaries, re-read only when a host's facts file changed (size or mtime)."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self.summaries: dict[str, HostSummary] = {}
        self._stamps: dict[str, tuple[int, int]] = {}
        self._full: tuple[str, tuple[int, int], DiscoveryFacts] | None = None
        self._majority: dict[str, str | None] | None = None
        self._rail_majority: list[dict[str, str | None]] | None = None
        self.epoch = 0
        """Bumped by every refresh of all hosts (hosts may have gone): rows cached per host are dropped then."""

    def _path(self, host: str) -> Path:
        return self.root / "facts" / f"{host}.json"

    def _stamp(self, host: str) -> tuple[int, int] | None:
        try:
            st = os.stat(self._path(host))
        except OSError:
            return None
        return (st.st_mtime_ns, st.st_size)

    def _load(self, host: str) -> DiscoveryFacts | None:
        try:
            data = json.loads(self._path(host).read_text(encoding="utf-8")).get("discovery")
            return DiscoveryFacts.model_validate(data) if data else None
        except (OSError, ValueError):
            return None

    def refresh(self, hosts: list[str], only: Iterable[str] | None = None) -> bool:
        """Re-read changed facts files (of the ``only`` hosts when given: the ones discovery reported on since the
        last refresh; at 1,000 hosts a stat of every file cost tens of ms per redraw); True when any summary changed."""
        changed = False
        listed = set(hosts) if only is not None else set()
        for host in hosts if only is None else [h for h in only if h in listed]:
            stamp = self._stamp(host)
            if stamp == self._stamps.get(host):
                continue
            changed = True
            facts = self._load(host) if stamp else None
            if stamp:
                self._stamps[host] = stamp
            else:
                self._stamps.pop(host, None)
            if facts is None:
                self.summaries.pop(host, None)
            else:
                self.summaries[host] = summarise(facts)
        if only is None:
            for gone in set(self.summaries) - set(hosts):
                changed = True
                del self.summaries[gone]
                self._stamps.pop(gone, None)
            self.epoch += 1
        if changed:
            self._majority = self._rail_majority = None
        return changed

    def stamp(self, host: str) -> tuple[int, int] | None:
        """The host's facts file as last read (mtime, size): a row built from them is current while it holds."""
        return self._stamps.get(host)

    def full(self, host: str) -> DiscoveryFacts | None:
        """The whole facts of one host (the shown one), kept until another host is asked for."""
        stamp = self._stamps.get(host)
        if stamp is None:
            return None
        if self._full is not None and self._full[0] == host and self._full[1] == stamp:
            return self._full[2]
        facts = self._load(host)
        if facts is not None:
            self._full = (host, stamp, facts)
        return facts

    def leaf(self, host: str) -> str | None:
        summary = self.summaries.get(host)
        return summary.leaf if summary else None

    def majority_cells(self) -> dict[str, str | None]:
        """The value most hosts have, per host cell (computed once per change of any host's facts)."""
        if self._majority is None:
            keys = {k for s in self.summaries.values() for k in s.cells}
            self._majority = {k: majority([s.cells[k] for s in self.summaries.values() if k in s.cells]) for k in keys}
        return self._majority

    def majority_ports(self) -> list[dict[str, str | None]]:
        """Per rail index, the value most hosts' port there has, per column."""
        if self._rail_majority is None:
            rails = max((len(s.ports) for s in self.summaries.values()), default=0)
            self._rail_majority = [
                {
                    column: majority([s.ports[i][column] for s in self.summaries.values() if i < len(s.ports)])
                    for column in PORT_COLUMNS
                }
                for i in range(rails)
            ]
        return self._rail_majority

    def rail_peers(self, index: int) -> int:
        return sum(1 for s in self.summaries.values() if index < len(s.ports))


def _switch_port(port: NicPort) -> str:
    """The switch port a port is cabled to: LLDP's on Ethernet (steps/discovery/lldp.py), iblinkinfo's on IB."""
    if port.lldp:
        return port.lldp.switch_port
    if port.ib is not None and port.ib.switch:
        return f"{port.ib.switch} {port.ib.switch_port}"
    return "-"


_DIGITS = re.compile(r"\d+")
_TRAILING_LETTERS = re.compile(r"[A-Za-z]*$")
ODD_RAILS_SHOWN = 2
"""Rails off the host's leaf pattern that the leaf column names before it says how many more there are."""


@dataclass(frozen=True, slots=True)
class _Pattern:
    """How a host's rails name their leaves: one switch for every rail (``width`` None), or a switch per rail whose
    number follows the rail index (``leaf-r0`` on rail 0, ``leaf-r1`` on rail 1: prefix, rail + offset, suffix)."""

    prefix: str
    offset: int = 0
    suffix: str = ""
    width: int | None = None

    def name(self, rail: int) -> str:
        if self.width is None:
            return self.prefix
        return f"{self.prefix}{rail + self.offset:0{self.width}d}{self.suffix}"

    def span(self, first: int, last: int) -> str:
        """'leaf-r0..r7': the first rail's name, then the last one's from the prefix's trailing letters on."""
        if self.width is None or first == last:
            return self.name(first)
        letters = _TRAILING_LETTERS.search(self.prefix)
        tail = letters.group(0) if letters else ""
        return f"{self.name(first)}..{tail}{rail_number(last + self.offset, self.width)}{self.suffix}"


def rail_number(number: int, width: int) -> str:
    return f"{number:0{width}d}"


def _patterns(rail: int, name: str) -> list[_Pattern]:
    """Every pattern ``name`` on ``rail`` fits: the name itself, and per run of digits in it, an indexed one."""
    found = [_Pattern(name)]
    for match in _DIGITS.finditer(name):
        digits = match.group(0)
        width = len(digits) if digits.startswith("0") and len(digits) > 1 else 1  # leaf-r07 keeps its zero
        found.append(_Pattern(name[: match.start()], int(digits) - rail, name[match.end() :], width))
    return found


def leaf_group(leaves: tuple[str | None, ...]) -> str | None:
    """A host's leaves across its rails in one phrase, the same for every host cabled alike (pages group by it):

    - a leaf per rail numbered like the rails: ``leaf-r0..r7``; one leaf for every rail: ``leaf-1``;
    - rails off that pattern named after it: ``leaf-r0..r7, r3: leaf-x9`` (``r5/r6: ?`` where none is known);
    - no pattern most rails follow: the distinct names, ``leaf-a1, leaf-b7 +6``.

    None when no rail's leaf is known."""
    known = [(rail, name) for rail, name in enumerate(leaves) if name]
    if not known:
        return None
    counts: dict[_Pattern, int] = {}
    for rail, name in known:
        for pattern in _patterns(rail, name):
            counts[pattern] = counts.get(pattern, 0) + 1
    # Most rails covered wins; an indexed pattern needs two rails to show it is one, and wins a tie (one leaf name
    # fits both readings only when a single rail is known, which the count of two rules out).
    best, covered = max(
        ((p, n) for p, n in counts.items() if p.width is None or n >= 2),
        key=lambda item: (item[1], item[0].width is not None),
    )
    if covered * 2 <= len(known):
        names = list(dict.fromkeys(name for _, name in known))
        more = len(names) - ODD_RAILS_SHOWN
        return ", ".join(names[:ODD_RAILS_SHOWN]) + (f" +{more}" if more > 0 else "")
    on = [rail for rail, name in enumerate(leaves) if name == best.name(rail)]
    odd = [f"r{rail}: {name}" for rail, name in enumerate(leaves) if name and rail not in on]
    unknown = [rail for rail, name in enumerate(leaves) if not name]
    if unknown:  # one entry for the rails LLDP did not answer on: 'r1/r5: ?', or '6 rails: ?'
        odd.append(f"{len(unknown)} rails: ?" if len(unknown) > 3 else "/".join(f"r{r}" for r in unknown) + ": ?")
    more = len(odd) - ODD_RAILS_SHOWN
    words = [best.span(on[0], on[-1]), *odd[:ODD_RAILS_SHOWN]]
    return ", ".join(words) + (f" +{more} more" if more > 0 else "")


def leaf_search(index: FactsIndex, host: str) -> str:
    """Every leaf name of ``host``, lower-cased, for a page's filter text ('' before discovery)."""
    summary = index.summaries.get(host)
    return summary.leaf_names if summary else ""
