"""The RoCE ports a serving host hands NCCL: this stage's own fresh reading, discovery's facts as the fallback.

Discovery runs first in a run, before the driver stack renames devices (rocep59s0f0 -> mlx5_0) and before the network
stage gives the rails their addresses; NCCL_IB_HCA and the rails must describe the host as it is now.
"""

from __future__ import annotations

import ipaddress
from dataclasses import dataclass
from typing import Any

from steps.discovery.facts import DiscoveryFacts
from wizard.executors.base import Executor
from wizard.parsers import ParseError, parse

# GID values and their types are enough here (the netdev comes from `rdma link`); ndevs would add a third of the reads.
GID_GLOBS = "/sys/class/infiniband/*/ports/*/gids/* /sys/class/infiniband/*/ports/*/gid_attrs/types/*"
# read_live's commands, defined once (the inference stage declares them for its batch)
LIVE_READS = (["rdma", "link", "show"], f"grep -sH . {GID_GLOBS}", ["ip", "-j", "addr", "show"])


@dataclass(frozen=True)
class RocePort:
    netdev: str
    hca: str  # "<rdma device>:<port>"
    state: str
    roce_v2_ipv4: bool
    rail: str  # the port's IPv4 subnet, "" without one
    ib: bool = False  # an InfiniBand port: addressed by LID, no GID needed

    @property
    def usable(self) -> bool:
        return self.state.upper() == "ACTIVE" and (self.ib or self.roce_v2_ipv4)

    def describe(self) -> str:
        missing = "" if self.ib or self.roce_v2_ipv4 else ", no IPv4 RoCE v2 GID"
        return f"{self.hca.split(':')[0]} ({self.state}{missing})"


async def read_live(ex: Executor) -> dict[str, dict[str, Any]]:
    """netdev -> RDMA device, port, state, IPv4 RoCE v2 GID addresses and IPv4 addresses, read now."""
    links_argv, gids_command, addrs_argv = LIVE_READS
    links = await ex.run(links_argv)
    # grep exits 2 when some GID slots cannot be read (empty slots give EINVAL in sysfs); the rest is still valid.
    gids = await ex.run(gids_command)
    addrs = await ex.run(addrs_argv)
    try:
        link_table = parse("rdma_link", links.stdout).links if links.ok else []
        gid_table = parse("sysfs_gids", gids.stdout).entries if gids.exit_status in (0, 2) and gids.stdout else []
        interfaces = parse("ip_json", addrs.stdout).interfaces if addrs.ok else []
    except ParseError:
        return {}
    cidrs = {i.ifname: list(i.ipv4) for i in interfaces}
    live = {}
    for link in link_table:
        if not link.netdev:
            continue
        v2 = {g.ipv4 for g in gid_table if (g.device, g.port) == (link.device, link.port) and g.version == "v2"}
        live[link.netdev] = {
            "device": link.device,
            "port": link.port,
            "state": link.state,
            "ipv4_v2": sorted(v2 - {None}),
            "cidrs": cidrs.get(link.netdev, []),
        }
    return live


def _rail(cidrs: list[str], preferred: list[str]) -> str:
    chosen = next((c for c in cidrs if c.split("/")[0] in preferred), cidrs[0] if cidrs else "")
    return str(ipaddress.ip_interface(chosen).network) if chosen else ""


def roce_ports(facts: DiscoveryFacts, live: dict[str, Any], link_layer: str = "ethernet") -> list[RocePort]:
    """The fabric's RDMA ports in PCI order (RoCE, or InfiniBand per fabric.link_layer), never the SSH interface;
    live state wins over discovery's."""
    wanted = {"ethernet": ("Ethernet",), "infiniband": ("InfiniBand",)}.get(link_layer, ("Ethernet", "InfiniBand"))
    ports = []
    for p in sorted(facts.ports, key=lambda port: port.pci):
        if not p.netdev or p.netdev == facts.ssh_interface or (p.link_layer or "Ethernet") not in wanted:
            continue
        ib = p.link_layer == "InfiniBand"
        seen = live.get(p.netdev)
        if seen:
            v2 = list(seen.get("ipv4_v2") or [])
            hca, state = f"{seen['device']}:{seen.get('port') or 1}", str(seen.get("state") or "?")
            ports.append(RocePort(p.netdev, hca, state, bool(v2), _rail(list(seen.get("cidrs") or []), v2), ib))
        elif p.rdma_device:
            v2 = [g.ipv4 for g in p.gids if g.version == "v2" and g.ipv4]
            hca = f"{p.rdma_device}:{p.rdma_port or 1}"
            ports.append(RocePort(p.netdev, hca, p.rdma_state or "?", bool(v2), _rail(p.ipv4, v2), ib))
    return ports
