"""Cabling tests across hosts: which port reaches which peer port (IPv6 link-local), and the jumbo path per rail."""

from __future__ import annotations

import asyncio
import functools
import ipaddress
import re
import uuid
from typing import Any

from steps.network.design import Endpoint
from wizard.executors.base import Executor

_REPLY = re.compile(r"^\d+ bytes from (?:\S+ \()?([0-9A-Fa-f:.]+)(?:%[^\s):]+)?\)?: icmp_seq=")
_SUMMARY = re.compile(r"(\d+) packets transmitted, (\d+) (?:packets )?received")


def parse_ping(text: str) -> dict[str, Any]:
    """iputils ping output -> {"replies": [addresses in order], "sent": n, "received": n} (numeric -n form)."""
    replies: list[str] = []
    for line in text.splitlines():
        match = _REPLY.match(line.strip())
        if match and match.group(1) not in replies:
            replies.append(match.group(1))
    summary = _SUMMARY.search(text)
    return {
        "replies": replies,
        "sent": int(summary.group(1)) if summary else None,
        "received": int(summary.group(2)) if summary else None,
    }


@functools.lru_cache(maxsize=65536)  # a fleet's pings name the same few thousand link-local addresses again and again
def normal(address: str) -> str:
    """Canonical text of an IPv6 address (so fe80::0e42:... and fe80::e42:... compare equal)."""
    try:
        return str(ipaddress.ip_address(address.split("%")[0]))
    except ValueError:
        return address.lower()


KEPT_REPLIES = 64  # a segment larger than this (one L2 rail across a fleet) keeps only the nearest repliers
KEPT_PEERS = 8  # ... the next hosts' ports in answers order, which still chain every segment together


def nearest_replies(
    replies: list[str], own: set[str], owners: dict[str, tuple[str, str]], order: list[str], host: str
) -> tuple[list[str], int]:
    """The replies worth keeping of a multicast ping on a large segment, and how many ports replied.

    A rail that is one L2 segment across 1,024 hosts answers ff02::1 with 1,023 link-locals per port: kept whole,
    8,192 ports held 8 million addresses in the stage's facts and every check item listed a thousand peers. What the
    cabling verdict needs is the segment each port is on (wiring.segment_rails): each port keeping the next
    KEPT_PEERS hosts' ports after its own host (wrapping) links every member to its successor, so the segments
    still come out whole; and a few addresses no host of the run owns, for the evidence."""
    distinct = list(dict.fromkeys(normal(a) for a in replies))
    others = [a for a in distinct if a not in own]
    if len(others) <= KEPT_REPLIES:
        return replies, len(others)
    rank = {h: i for i, h in enumerate(order)}
    start, size = rank.get(host, 0), max(1, len(order))
    known = [a for a in others if a in owners and owners[a][0] != host]
    known.sort(key=lambda a: ((rank.get(owners[a][0], 0) - start) % size, owners[a][1]))
    unknown = [a for a in others if a not in owners][:KEPT_PEERS]
    mine = [a for a in distinct if a in own]
    return mine + known[:KEPT_PEERS] + unknown, len(others)


def multicast_argv(netdev: str) -> list[str]:
    return ["ping", "-6", "-n", "-c", "2", "-w", "3", "-I", netdev, "ff02::1"]


def jumbo_size(mtu: int, peer_ip: str) -> int:
    """ICMP payload that makes the packet exactly one MTU (IP + ICMP headers: 28 bytes IPv4, 48 IPv6)."""
    return mtu - (48 if ":" in peer_ip else 28)


def jumbo_argv(netdev: str, peer_ip: str, mtu: int) -> list[str]:
    """Ping the peer's rail address out of this port with don't-fragment: proves the jumbo path end to end."""
    family = ["-6"] if ":" in peer_ip else []
    size = str(jumbo_size(mtu, peer_ip))
    return ["ping", *family, "-n", "-c", "2", "-w", "3", "-M", "do", "-s", size, "-I", netdev, peer_ip]


def ring_peer(order: list[str], host: str, with_key: dict[str, set[str]], key: str) -> str | None:
    """The next host after ``host`` (wrapping) that also has rail ``key``: every port is pinged and pings."""
    start = order.index(host)
    for step in range(1, len(order)):
        other = order[(start + step) % len(order)]
        if key in with_key.get(other, set()):
            return other
    return None


async def probe_host(
    ex: Executor,
    endpoints: list[Endpoint],
    carrier: dict[str, bool],
    ipv6_less: set[str],
    peers: dict[str, tuple[str, str] | None],
    mtu: int,
) -> dict[str, Any]:
    """Run the link-local and jumbo pings of one host, all ports at once."""

    async def one(e: Endpoint) -> tuple[str, dict[str, Any]]:
        result: dict[str, Any] = {"key": e.key}
        if not carrier.get(e.netdev, False):
            result["skipped"] = "no carrier"
            return e.netdev, result
        if e.netdev in ipv6_less:
            result["skipped"] = "no IPv6 link-local address (IPv6 disabled?): cabling is judged by the IPv4 ping"
        else:
            ll = await ex.run(multicast_argv(e.netdev))
            result["link_local"] = {**parse_ping(ll.stdout), "exit": ll.exit_status, "error": _error(ll)}
        peer = peers.get(e.key)
        if peer is not None:
            jumbo = await ex.run(jumbo_argv(e.netdev, peer[1], mtu))
            result["jumbo"] = {
                "peer": peer[0],
                "peer_ip": peer[1],
                "size": jumbo_size(mtu, peer[1]),
                **parse_ping(jumbo.stdout),
                "exit": jumbo.exit_status,
                "error": _error(jumbo),
            }
        return e.netdev, result

    done = await asyncio.gather(*(one(e) for e in endpoints if e.rdma))
    return dict(done)


def _error(result: Any) -> str | None:
    if result.exit_status == 0:
        return None
    lines = [ln.strip() for ln in (result.stderr + "\n" + result.stdout).splitlines() if ln.strip()]
    telling = [ln for ln in lines if "error" in ln.lower() or "unreachable" in ln.lower() or "frag" in ln.lower()]
    if telling:
        return telling[0]
    parsed = parse_ping(result.stdout)
    if parsed["sent"] is not None:
        return f"no reply ({parsed['sent']} sent, {parsed['received']} received)"
    return lines[-1] if lines else f"exit status {result.exit_status}"


def new_probe_id() -> str:
    return uuid.uuid4().hex[:12]
