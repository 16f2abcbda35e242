"""IPv4 route lookup as the kernel does it: policy rules in priority order, then the tables they name.

Sources: fib_rules_lookup/fib4_rule_match (net/core/fib_rules.c, net/ipv4/fib_rules.c: rules are tried in
priority order, a ``from`` selector matches the flow's source address by prefix, a table without a matching route
passes the lookup on to the next rule), fib_table_lookup (net/ipv4/fib_trie.c: longest prefix first; with an output
interface in the flow only next hops on that interface count, fib_lookup_good_nhc) and
ip_route_output_key_hash_rcu (net/ipv4/route.c: a source address that is not local is -EINVAL; a lookup bound to
an interface that finds no route "assumes that the destination is on link" on that interface). The answer is
printed by iproute2 from rt_fill_info: RTA_SRC when ``from`` was given, RTA_PREFSRC only when the chosen source
differs from it, RTA_TABLE with the table the route came from (ip/iproute.c print_route prints it unless main).
"""

from __future__ import annotations

import ipaddress
from dataclasses import dataclass
from typing import TYPE_CHECKING

from wizard.lab import netops

if TYPE_CHECKING:
    from wizard.lab.host import SimHost

UNREACHABLE = "RTNETLINK answers: Network is unreachable"
INVALID = "RTNETLINK answers: Invalid argument"


class RouteError(Exception):
    """The kernel refused the lookup; the message is what iproute2 prints."""


@dataclass
class Route:
    """The kernel's answer for one flow (what ``ip route get`` shows)."""

    dst: str
    dev: str
    via: str | None = None
    src: str = ""  # the source address the flow gets (prefsrc or the ``from`` address)
    table: str | None = None  # "local", "main", "101"; None: no table matched (on-link on the bound interface)
    kind: str = "unicast"  # unicast | local | broadcast
    from_addr: str | None = None  # the ``from`` of the request, echoed back as RTA_SRC

    def text(self) -> str:
        """iproute2's text form, as `ip route get` prints it (5.15: trailing spaces, the cache line)."""
        out = f"{self.kind} {self.dst} " if self.kind != "unicast" else f"{self.dst} "
        if self.from_addr:
            out += f"from {self.from_addr} "
        if self.via:
            out += f"via {self.via} "
        out += f"dev {self.dev} "
        if self.table and self.table != "main":
            out += f"table {self.table} "
        if self.src and self.src != self.from_addr:
            out += f"src {self.src} "
        out += "uid 0 \n    cache "
        if self.kind == "local":
            out += "<local> "
        elif self.kind == "broadcast":
            out += "<brd> "
        return out

    def json(self) -> dict[str, object]:
        """iproute2's JSON object for the same answer (keys in print_route's order)."""
        d: dict[str, object] = {}
        if self.kind != "unicast":
            d["type"] = self.kind
        d["dst"] = self.dst
        if self.from_addr:
            d["from"] = self.from_addr
        if self.via:
            d["gateway"] = self.via
        d["dev"] = self.dev
        if self.table and self.table != "main":
            d["table"] = self.table
        if self.src and self.src != self.from_addr:
            d["prefsrc"] = self.src
        d["flags"] = []
        d["uid"] = 0
        d["cache"] = ["local"] if self.kind == "local" else ["brd"] if self.kind == "broadcast" else []
        return d


def _local_dev(host: SimHost, ip: ipaddress.IPv4Address) -> str | None:
    for name, dev in host.netdevs.items():
        if dev.admin_up and any(a.ip == ip for a in dev.ipv4):
            return name
    return None


def _net(dst: object) -> ipaddress.IPv4Network:
    text = str(dst)
    return ipaddress.IPv4Network("0.0.0.0/0" if text == "default" else text, strict=False)


def _rule_matches(rule: dict[str, object], src: ipaddress.IPv4Address | None, dst: ipaddress.IPv4Address) -> bool:
    """fib4_rule_match: ``from``/``to`` by prefix; a flow without a source (0.0.0.0) fails any ``from`` prefix."""
    if rule.get("src", "all") != "all":
        if src is None or src not in ipaddress.IPv4Network(str(rule["src"]), strict=False):
            return False
    if rule.get("dst") and dst not in ipaddress.IPv4Network(str(rule["dst"]), strict=False):
        return False
    return True


def _table_lookup(host: SimHost, table: str, dst: ipaddress.IPv4Address, oif: str | None) -> dict[str, object] | None:
    best: dict[str, object] | None = None
    best_len = -1
    for e in netops.route_entries(host, table):
        net = _net(e["dst"])
        if dst not in net or (oif is not None and e["dev"] != oif):
            continue
        if net.prefixlen > best_len:
            best, best_len = e, net.prefixlen
    return best


def _source_on(host: SimHost, dev: str, toward: str | None) -> str:
    """inet_select_addr: an address of ``dev``, preferring the one whose subnet holds the next hop."""
    addrs = host.netdevs[dev].ipv4 if dev in host.netdevs else []
    if toward:
        ip = ipaddress.IPv4Address(toward)
        for a in addrs:
            if ip in a.network:
                return str(a.ip)
    return str(addrs[0].ip) if addrs else ""


def lookup(host: SimHost, dst: str, *, src: str | None = None, oif: str | None = None) -> Route:
    """The route of a flow to ``dst`` (optionally from ``src`` and bound to ``oif``); RouteError if refused."""
    daddr = ipaddress.IPv4Address(dst)
    saddr = ipaddress.IPv4Address(src) if src else None
    if saddr is not None and _local_dev(host, saddr) is None:
        raise RouteError(INVALID)
    if oif is not None and oif not in host.netdevs:
        raise RouteError(f'Cannot find device "{oif}"')
    for rule in netops.rule_entries(host):
        if not _rule_matches(rule, saddr, daddr):
            continue
        table = str(rule["table"])
        if table == "local":
            owner = _local_dev(host, daddr)
            if owner is not None and (oif is None or oif == owner):
                # a local destination leaves through lo (ip_route_output_key_hash_rcu: dev_out = loopback)
                return Route(dst, "lo", None, src or dst, "local", "local", src)
            continue
        if table == "default":
            continue
        e = _table_lookup(host, table, daddr, oif)
        if e is None:
            continue
        via = str(e["gateway"]) if e.get("gateway") else None
        dev = str(e["dev"])
        chosen = src or str(e.get("prefsrc") or "") or _source_on(host, dev, via or dst)
        return Route(dst, dev, via, chosen, table, "unicast", src)
    if oif is not None:
        # no table has a route through oif: the kernel assumes the destination is on that link
        return Route(dst, oif, None, src or _source_on(host, oif, dst), None, "unicast", src)
    raise RouteError(UNREACHABLE)
