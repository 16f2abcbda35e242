"""Network stage facts: the live interface, RDMA, routing, netplan and sysctl state of one host, read-only."""

from __future__ import annotations

import re
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from steps.discovery.facts import try_parse
from steps.discovery.gid_read import GID_VALUES, read_gid_text
from steps.discovery.stage import IP_ADDR, RDMA_LINK
from wizard.engine.prefetch import read_file_argv
from wizard.executors.base import Executor

NETPLAN_PATH = "/etc/netplan/60-roce-wizard.yaml"
SYSCTL_PATH = "/etc/sysctl.d/60-roce-wizard.conf"
NETPLAN_DIRS = ("/lib/netplan", "/etc/netplan", "/run/netplan")
SYSCTL_KEYS = ("arp_ignore", "arp_announce", "rp_filter")

# The probe's read-only commands, defined once: probe_network runs them and NETWORK_PREFETCH declares them.
DEVINFO = ["ibv_devinfo"]
FIND_NETPLAN = ["find", *NETPLAN_DIRS, "-maxdepth", "1", "-name", "*.yaml"]
RENDERERS = ["systemctl", "is-active", "NetworkManager.service", "systemd-networkd.service"]
RULES = ["ip", "-j", "-4", "rule", "show"]
ROUTES = ["ip", "-j", "-4", "route", "show", "table", "all"]
# ibv_devinfo and the GID read run when rdma link lists a link: on every host with an RDMA port, which is every
# host this stage configures. Not declared: the netplan file's mode (only when it exists), the other netplan
# files (per file that find lists) and the live sysctls (per interface that ip lists), see Network.dependent_probes.
NETWORK_PREFETCH: list[tuple[list[str] | str, bool]] = [
    *((c, False) for c in (IP_ADDR, RDMA_LINK, DEVINFO, GID_VALUES)),
    (read_file_argv(NETPLAN_PATH), True),
    (FIND_NETPLAN, True),
    (read_file_argv(SYSCTL_PATH), True),
    *((c, False) for c in (RENDERERS, RULES, ROUTES)),
]


class _Model(BaseModel):
    model_config = ConfigDict(extra="forbid")


class Iface(_Model):
    """One interface as `ip -j -d addr show` prints it."""

    name: str
    mtu: int | None = None
    mac: str | None = None
    link_type: str | None = None
    up: bool = False
    carrier: bool = False
    kind: str | None = None
    master: str | None = None
    bond_mode: str | None = None
    parent_dev: str | None = None
    ipv4: list[str] = Field(default_factory=list)
    ipv6: list[str] = Field(default_factory=list)

    @property
    def link_local(self) -> list[str]:
        return [a.split("/")[0] for a in self.ipv6 if a.lower().startswith("fe80:")]


class RdmaPort(_Model):
    device: str
    port: int
    state: str
    physical_state: str | None = None
    netdev: str | None = None
    active_mtu: int | None = None
    gids_v2_ipv4: list[str] = Field(default_factory=list)


class Rule(_Model):
    priority: int | None = None
    src: str | None = None
    table: str | None = None


class Route(_Model):
    dst: str
    dev: str | None = None
    gateway: str | None = None
    table: str = "main"


class NetworkFacts(_Model):
    interfaces: dict[str, Iface] = Field(default_factory=dict)
    rdma: list[RdmaPort] = Field(default_factory=list)
    netplan_file: str | None = None
    netplan_mode: str | None = None
    netplan_owner: str | None = None
    netplan_others: dict[str, str] = Field(default_factory=dict)
    sysctl_file: str | None = None
    sysctl_live: dict[str, str] = Field(default_factory=dict)
    rules: list[Rule] = Field(default_factory=list)
    routes: list[Route] = Field(default_factory=list)
    nm_active: bool = False
    networkd_active: bool = False
    notes: list[str] = Field(default_factory=list)

    def rdma_of(self, netdev: str) -> RdmaPort | None:
        return next((r for r in self.rdma if r.netdev == netdev), None)

    def lag_of(self, members: list[str]) -> RdmaPort | None:
        """The RoCE LAG device of a bond, if it formed: ONE RDMA port left for all members.

        `rdma link` names a PF's netdev for it (mlx5 reports the first PF, or the active one in active-backup),
        never the bond; without LAG every member keeps its own RDMA device.
        """
        links = [r for r in self.rdma if r.netdev in members]
        return links[0] if len(links) == 1 and len(members) > 1 else None


def interfaces_from(parsed: Any) -> dict[str, Iface]:
    """Interfaces from a parsed `ip -j -d addr show` (LOWER_UP is the carrier flag)."""
    result = {}
    for item in parsed.interfaces if parsed else []:
        result[item.ifname] = Iface(
            name=item.ifname,
            mtu=item.mtu,
            mac=item.mac,
            link_type=item.link_type,
            up="UP" in item.flags,
            carrier="LOWER_UP" in item.flags,
            kind=item.kind,
            master=item.master,
            bond_mode=str(item.info_data.get("mode")) if item.kind == "bond" and item.info_data.get("mode") else None,
            parent_dev=item.parent_dev,
            ipv4=list(item.ipv4),
            ipv6=list(item.ipv6),
        )
    return result


def rdma_from(links: Any, devinfo: Any, gids: Any) -> list[RdmaPort]:
    """RDMA ports with their netdev, RoCE active MTU and RoCE v2 IPv4 GIDs."""
    ports = []
    for link in links.links if links else []:
        port = RdmaPort(
            device=link.device,
            port=link.port,
            state=link.state,
            physical_state=link.physical_state,
            netdev=link.netdev,
        )
        device = devinfo.get(link.device) if devinfo else None
        for info in device.ports if device else []:
            if info.port == link.port:
                port.active_mtu = info.active_mtu
        for entry in gids.entries if gids else []:
            if entry.device == link.device and entry.port == link.port and entry.version == "v2" and entry.ipv4:
                port.gids_v2_ipv4.append(entry.ipv4)
        ports.append(port)
    return ports


_SYSCTL_LINE = re.compile(r"^(net\.ipv4\.conf\.\S+)\s*=\s*(-?\d+)\s*$")


def sysctl_argv(interfaces: list[str]) -> list[str]:
    """`sysctl -e KEY...` for the ARP and reverse-path keys of ``all`` and every interface (-e: skip unknown)."""
    keys = [f"net.ipv4.conf.{name.replace('.', '/')}.{key}" for name in ["all", *interfaces] for key in SYSCTL_KEYS]
    return ["sysctl", "-e", *keys]


def parse_sysctl(text: str) -> dict[str, str]:
    """`sysctl KEY...` output (``key = value`` lines) -> {key: value}."""
    result = {}
    for line in text.splitlines():
        match = _SYSCTL_LINE.match(line.strip())
        if match:
            result[match.group(1)] = match.group(2)
    return result


def rules_from(raw: Any) -> list[Rule]:
    return [
        Rule(priority=item.get("priority"), src=item.get("src"), table=str(item["table"]) if "table" in item else None)
        for item in raw or []
        if isinstance(item, dict)
    ]


def routes_from(raw: Any) -> list[Route]:
    routes = []
    for item in raw or []:
        if isinstance(item, dict) and "dst" in item and item.get("type", "unicast") == "unicast":
            routes.append(
                Route(
                    dst=str(item["dst"]),
                    dev=item.get("dev"),
                    gateway=item.get("gateway"),
                    table=str(item.get("table", "main")),
                )
            )
    return routes


def _json(text: str) -> Any:
    import json

    start = text.find("[")
    try:
        return json.loads(text[start:]) if start >= 0 else []
    except json.JSONDecodeError:
        return []


def _text(content: str | None) -> str | None:
    """File content with exactly one final newline: how a file reads back over SSH varies by one newline."""
    return None if content is None else content.rstrip("\n") + "\n"


async def probe_network(ex: Executor) -> NetworkFacts:
    """Read everything the network plan and checks need; changes nothing."""
    facts = NetworkFacts()
    notes = facts.notes

    async def out(argv: list[str] | str, sudo: bool = False) -> str:
        result = await ex.run(argv, sudo=sudo)
        if result.exit_status == 127:
            notes.append(f"{argv[0] if isinstance(argv, list) else argv.split()[0]}: not installed")
        return result.stdout if result.ok else ""

    async def grep(command: str, sudo: bool = False) -> str:
        # grep exits 2 when one glob matched nothing, yet prints every file it could read.
        result = await ex.run(command, sudo=sudo)
        return result.stdout if result.exit_status in (0, 1, 2) else ""

    facts.interfaces = interfaces_from(try_parse("ip_json", await out(IP_ADDR), notes))
    links = try_parse("rdma_link", await out(RDMA_LINK), notes)
    devinfo = try_parse("ibv_devinfo", await out(DEVINFO), notes) if links else None
    gids = try_parse("sysfs_gids", await read_gid_text(grep), notes) if links else None
    facts.rdma = rdma_from(links, devinfo, gids)
    facts.netplan_file = _text(await ex.read_file(NETPLAN_PATH, sudo=True))
    if facts.netplan_file is not None:
        stat = (await out(["stat", "-c", "%a %U:%G", NETPLAN_PATH], sudo=True)).split()
        facts.netplan_mode, facts.netplan_owner = (stat + [None, None])[:2] if stat else (None, None)
    found = await ex.run(FIND_NETPLAN, sudo=True)
    for path in sorted(line.strip() for line in found.stdout.splitlines() if line.strip().endswith(".yaml")):
        if path != NETPLAN_PATH and (content := await ex.read_file(path, sudo=True)) is not None:
            facts.netplan_others[path] = _text(content) or ""
    facts.sysctl_file = _text(await ex.read_file(SYSCTL_PATH, sudo=True))
    names = [n for n, i in facts.interfaces.items() if i.link_type in ("ether", "infiniband") or i.kind == "bond"]
    facts.sysctl_live = parse_sysctl((await ex.run(sysctl_argv(names))).stdout)
    # Which daemon renders netplan here (steps/network/renderer.py): `systemctl is-active` prints one state per unit.
    states = (await ex.run(RENDERERS)).stdout
    facts.nm_active, facts.networkd_active = [line.strip() == "active" for line in (states.splitlines() + ["", ""])[:2]]
    facts.rules = rules_from(_json(await out(RULES)))
    facts.routes = routes_from(_json(await out(ROUTES)))
    return facts
