"""Parsers for Linux netdevs: `ip link`/`ip addr` text and `ip -j` JSON (bonding files re-exported)."""

from __future__ import annotations

import json
import re
from typing import Any

from wizard.parsers._text import prompt_command, require_lines, split_pairs, to_int
from wizard.parsers.bonding import BondAggregator, Bonding, BondSlave, parse_bonding
from wizard.parsers.common import Parsed, ParseError

__all__ = [
    "BondAggregator",
    "BondSlave",
    "Bonding",
    "IpInterface",
    "IpInterfaces",
    "IpLinkEntry",
    "IpLinks",
    "IpVf",
    "parse_bonding",
    "parse_ip_json",
    "parse_ip_link",
]

# --------------------------------------------------------------------------------------------- ip link / addr


class IpVf(Parsed):
    """One `vf N` line of an SR-IOV PF in `ip link`."""

    vf: int
    mac: str | None = None
    spoof_checking: bool | None = None
    link_state: str | None = None
    trust: bool | None = None


class IpLinkEntry(Parsed):
    """One interface of `ip link`/`ip addr` text (with `-d`: kind and details, with `-s`: counters).

    ``kind`` is the link kind of `-d` (bond, vlan, ...), or `bond_slave`-style slave kind when the
    interface has no kind of its own; ``slave_kind`` is the master's kind (bond, bridge, ...).
    """

    ifindex: int
    ifname: str
    link: str | None = None
    flags: list[str]
    mtu: int | None = None
    qdisc: str | None = None
    master: str | None = None
    operstate: str | None = None
    link_type: str | None = None
    mac: str | None = None
    permaddr: str | None = None
    kind: str | None = None
    slave_kind: str | None = None
    info: dict[str, str] = {}
    slave_info: dict[str, str] = {}
    altnames: list[str] = []
    parent_bus: str | None = None
    parent_dev: str | None = None
    ipv4: list[str] = []
    ipv6: list[str] = []
    vfs: list[IpVf] = []
    stats: dict[str, int] = {}

    @property
    def up(self) -> bool:
        """Tell whether the interface is administratively up (UP flag)."""
        return "UP" in self.flags


class IpLinks(Parsed):
    """Every interface of an `ip link`/`ip addr` listing, in printed order."""

    interfaces: list[IpLinkEntry]

    def get(self, ifname: str) -> IpLinkEntry | None:
        """Return the interface named ``ifname``."""
        return next((i for i in self.interfaces if i.ifname == ifname), None)

    def slaves_of(self, master: str) -> list[IpLinkEntry]:
        """Return the interfaces enslaved to ``master``."""
        return [i for i in self.interfaces if i.master == master]


_IP_HEADER = re.compile(r"^(\d+):\s+([^:@\s]+)(?:@([^:\s]+))?:\s+<([^>]*)>\s*(.*)$")
_IP_ONELINE_ADDR = re.compile(r"^(\d+):\s+(\S+)\s+(inet6?)\s+(\S+)")
_KINDS = {
    "bond", "bridge", "vlan", "vxlan", "veth", "macvlan", "macvtap", "ipvlan", "ipvtap", "team", "ipoib",
    "dummy", "tun", "geneve", "gre", "gretap", "ip6gre", "ipip", "sit", "vrf", "openvswitch", "wireguard",
    "ifb", "macsec", "nlmon", "bareudp", "hsr", "vti", "xfrm", "erspan",
}  # fmt: skip
_STATS_HEADER = re.compile(r"^\s*(RX|TX)(\s+errors)?:\s+([a-z_ ]+)$")


def _add_detail(entry: IpLinkEntry, words: list[str]) -> None:
    """Read one `-d` detail line: the link kind line, a `*_slave` line, or generic attributes."""
    head = words[0]
    words = [w for w in words if not w.startswith("<")]  # vlan `<REORDER_HDR>` flags break the pairs
    if head.endswith("_slave"):
        entry.slave_kind = head.removesuffix("_slave")
        entry.kind = entry.kind or head
        pairs = entry.slave_info = split_pairs(words[1:])
    elif head in _KINDS:
        entry.kind = head
        pairs = entry.info = split_pairs(words[1:])
    else:
        pairs = split_pairs(words)
    entry.parent_bus = pairs.pop("parentbus", entry.parent_bus)
    entry.parent_dev = pairs.pop("parentdev", entry.parent_dev)


def _add_vf(entry: IpLinkEntry, line: str) -> None:
    match = re.match(r"^\s*vf\s+(\d+)\s+(.*)$", line)
    if match is None:
        return
    rest = match.group(2)
    mac = re.search(r"(?:link/ether|MAC)\s+([0-9a-fA-F:]{17})", rest)
    spoof = re.search(r"spoof checking (on|off)", rest)
    state = re.search(r"link-state (\w+)", rest)
    trust = re.search(r"trust (on|off)", rest)
    entry.vfs.append(
        IpVf(
            vf=int(match.group(1)),
            mac=mac.group(1) if mac else None,
            spoof_checking=spoof.group(1) == "on" if spoof else None,
            link_state=state.group(1) if state else None,
            trust=trust.group(1) == "on" if trust else None,
        )
    )


def _address(words: list[str]) -> str:
    """Return `inet A/P` (or `inet A peer B/P`) as CIDR; a bare address gets a host prefix."""
    local = words[1]
    if "/" not in local and "peer" in words and "/" in words[words.index("peer") + 1]:
        local += "/" + words[words.index("peer") + 1].split("/")[1]
    elif "/" not in local:
        local += "/32" if words[0] == "inet" else "/128"
    return local


def _new_entry(match: re.Match[str]) -> IpLinkEntry:
    attrs = split_pairs(match.group(5).split())
    return IpLinkEntry(
        ifindex=int(match.group(1)),
        ifname=match.group(2),
        link=match.group(3),
        flags=[f for f in match.group(4).split(",") if f],
        mtu=to_int(attrs.get("mtu")),
        qdisc=attrs.get("qdisc"),
        master=attrs.get("master"),
        operstate=attrs.get("state"),
    )


def parse_ip_link(text: str) -> IpLinks:
    """Parse `ip link` / `ip addr` text, with or without `-d`, `-s` and `-o` (one line per interface)."""
    # `ip -o` folds each interface onto one line with `\` where the newlines were.
    lines = [part for line in require_lines(text, "ip link") for part in re.split(r"\s*\\\s+", line)]
    entries: list[IpLinkEntry] = []
    entry: IpLinkEntry | None = None
    stats_keys: list[str] | None = None
    for line in lines:
        if match := _IP_HEADER.match(line):
            entry = _new_entry(match)
            entries.append(entry)
            stats_keys = None
            continue
        if match := _IP_ONELINE_ADDR.match(line):  # `ip -o addr`: `2: eth0    inet 10.0.0.5/24 ...`
            entry = next((e for e in entries if e.ifname == match.group(2)), None)
            if entry is None:
                entry = IpLinkEntry(ifindex=int(match.group(1)), ifname=match.group(2), flags=[])
                entries.append(entry)
            line = line[match.start(3) :]
        elif not line[:1].isspace() and prompt_command(line) is not None:
            entry = None  # the next pasted command's output is not about this interface
        if entry is None:
            continue
        words = line.split()
        if not words:
            continue
        if stats_keys is not None and all(w.isdigit() for w in words):
            entry.stats.update({k: int(v) for k, v in zip(stats_keys, words, strict=False)})
            stats_keys = None
        elif match := _STATS_HEADER.match(line):
            prefix = match.group(1).lower() + ("_errors" if match.group(2) else "")
            stats_keys = [f"{prefix}_{name}" for name in match.group(3).split()]
        elif words[0].startswith("link/"):
            entry.link_type = words[0].removeprefix("link/")
            entry.mac = words[1] if len(words) > 1 and ":" in words[1] else None
            rest = words[2:] if entry.mac else words[1:]
            pairs = split_pairs(rest)
            entry.permaddr = pairs.get("permaddr")
            entry.parent_bus = pairs.get("parentbus", entry.parent_bus)
            entry.parent_dev = pairs.get("parentdev", entry.parent_dev)
        elif words[0] in ("inet", "inet6") and len(words) > 1:
            (entry.ipv4 if words[0] == "inet" else entry.ipv6).append(_address(words))
        elif words[0] == "altname" and len(words) > 1:
            entry.altnames.append(words[1])
        elif words[0] == "vf" and len(words) > 1 and words[1].isdigit():
            _add_vf(entry, line)
        elif words[0] in _KINDS or words[0].endswith("_slave") or words[0] in ("addrgenmode", "numtxqueues"):
            _add_detail(entry, words)
    if not entries:
        raise ParseError("no 'N: IFNAME: <FLAGS> mtu ...' line: not ip link/addr output")
    return IpLinks(interfaces=entries)


# --------------------------------------------------------------------------------------------- ip -j


class IpInterface(Parsed):
    """One interface of `ip -j [-d] addr|link show`; addresses are CIDR strings."""

    ifname: str
    ifindex: int | None = None
    mtu: int | None = None
    operstate: str | None = None
    flags: list[str] = []
    link_type: str | None = None
    mac: str | None = None
    permaddr: str | None = None
    link: str | None = None
    kind: str | None = None
    slave_kind: str | None = None
    master: str | None = None
    info_data: dict[str, Any] = {}
    slave_data: dict[str, Any] = {}
    altnames: list[str] = []
    ipv4: list[str] = []
    ipv6: list[str] = []
    parent_bus: str | None = None
    parent_dev: str | None = None

    @property
    def up(self) -> bool:
        """Tell whether the interface is administratively up (UP flag)."""
        return "UP" in self.flags


class IpInterfaces(Parsed):
    """Every interface of an `ip -j` listing, in printed order."""

    interfaces: list[IpInterface]

    def get(self, ifname: str) -> IpInterface | None:
        """Return the interface named ``ifname``."""
        return next((i for i in self.interfaces if i.ifname == ifname), None)

    def slaves_of(self, master: str) -> list[IpInterface]:
        """Return the interfaces enslaved to ``master``."""
        return [i for i in self.interfaces if i.master == master]


def _json_interface(raw: dict[str, Any]) -> IpInterface:
    linkinfo = raw.get("linkinfo") or {}
    ipv4, ipv6 = [], []
    for addr in raw.get("addr_info") or []:
        if "local" not in addr:
            continue
        cidr = f"{addr['local']}/{addr.get('prefixlen', 32 if addr.get('family') == 'inet' else 128)}"
        if addr.get("family") == "inet":
            ipv4.append(cidr)
        elif addr.get("family") == "inet6":
            ipv6.append(cidr)
    return IpInterface(
        ifname=raw["ifname"],
        ifindex=raw.get("ifindex"),
        mtu=raw.get("mtu"),
        operstate=raw.get("operstate"),
        flags=list(raw.get("flags") or []),
        link_type=raw.get("link_type"),
        mac=raw.get("address"),
        permaddr=raw.get("permaddr"),
        link=raw.get("link"),
        kind=linkinfo.get("info_kind"),
        slave_kind=linkinfo.get("info_slave_kind"),
        master=raw.get("master"),
        info_data=linkinfo.get("info_data") or {},
        slave_data=linkinfo.get("info_slave_data") or {},
        altnames=list(raw.get("altnames") or []),
        ipv4=ipv4,
        ipv6=ipv6,
        parent_bus=raw.get("parentbus"),
        parent_dev=raw.get("parentdev"),
    )


def parse_ip_json(text: str) -> IpInterfaces:
    """Parse `ip -j [-d] addr show` / `ip -j link show` JSON (a prompt line before it is skipped)."""
    start = text.find("[")
    if not text.strip() or start < 0:
        raise ParseError("no JSON array: not ip -j output")
    try:
        data = json.loads(text[start:])
    except json.JSONDecodeError as err:
        raise ParseError(f"invalid ip -j JSON: {err.msg} at line {err.lineno}") from None
    if not isinstance(data, list) or not all(isinstance(item, dict) for item in data):
        raise ParseError("ip -j output must be a JSON array of interface objects")
    # Old iproute2 prints `{}` for interfaces an address filter skipped.
    return IpInterfaces(interfaces=[_json_interface(item) for item in data if item.get("ifname")])
