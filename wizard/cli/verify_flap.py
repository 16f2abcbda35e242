"""``roce-wizard verify --flap HOST:PORT``: take one rail port down and up, then prove the host got it all back.

A rail that bounces (a reseated cable, a switch reload, a flapping optic) must come back with its MTU, routes,
QoS and GIDs. What a flap really does on a host (sources in wizard/lab/netops.py and wizard/lab/flap.py): the
kernel drops the port's IPv6 link-local address and its routes; systemd-networkd removes its addresses on the
carrier loss and puts them, and its routes, back on the carrier gain (systemd#26721); mlx5 rebuilds the port's GID
entries, first free slot first, so an index still referenced by a running job's queue pairs is skipped and the
address's RoCE v2 GID can come back at another index (NVIDIA/nccl#2157). A job started before the flap keeps the
GID it looked up when its communicator was made; NCCL does not look again (NVIDIA/nccl#1333: "restart the
application"), so such processes are named.

Only a rail port is flapped: never the interface the wizard's SSH session uses, never a port discovery did not
list. The port is taken down and brought up by ONE remote command, so the up does not depend on the session.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import re
import shlex
import sys
import time
from dataclasses import dataclass, field
from typing import Any

from steps.discovery.facts import DiscoveryFacts
from wizard.engine.interactive import failed_checks, verify_stage, what_failed
from wizard.errors import EXIT_OK, UsageError
from wizard.executors.base import ExecutorError

EXIT_BROKEN = 1
DOWN_S = 3  # long enough for the peer and the switch to see the link go (LLDP, PFC state), short for a rail
LINK_BACK_S = 60.0  # an mlx5 port retrains in seconds; a minute without carrier is a cable, not a flap
NETDEV = re.compile(r"^[A-Za-z0-9_.:@-]{1,15}$")  # IFNAMSIZ 16, with the terminating NUL
# Processes that open RDMA queue pairs and keep them: NCCL jobs and tests, the inference engines and Ray.
RDMA_USERS = re.compile(
    r"vllm|sglang|ray start|raylet|gcs_server|ray::|torchrun|mpirun|\w+_perf\b|ib_(write|read|send)_(bw|lat)"
)
# Engines that run on one node: their NCCL talks over NVLink and PCIe and opens no queue pair on a rail.
ONE_NODE = re.compile(r"--distributed-executor-backend[ =]mp\b|--nnodes[ =]1\b")


def may_use_rails(args: str) -> bool:
    """Whether a process's command line says it may hold queue pairs (and so GIDs) on the rails."""
    if not RDMA_USERS.search(args) or ONE_NODE.search(args):
        return False
    return not ("sglang" in args and "--nnodes" not in args)  # SGLang without --nnodes is one node


@dataclass
class FlapResult:
    host: str
    port: str
    came_back: bool = False
    seconds: float | None = None
    gid_before: tuple[int | None, str | None] = (None, None)
    gid_after: tuple[int | None, str | None] = (None, None)
    lost: dict[str, list[dict[str, Any]]] = field(default_factory=dict)
    stale: list[tuple[int, str]] = field(default_factory=list)  # (pid, command line) started before the flap

    @property
    def gid_moved(self) -> bool:
        return self.gid_before != self.gid_after

    @property
    def held(self) -> bool:
        return self.came_back and not self.lost and not (self.gid_moved and self.stale)


def parse_target(text: str, hosts: list[str]) -> tuple[str, str]:
    """HOST:PORT, the host one of the answers' and the port a valid interface name."""
    host, sep, port = text.rpartition(":")
    if not sep or not host or not NETDEV.match(port):
        raise UsageError(f"verify: --flap takes HOST:PORT (a rail interface, e.g. server1:ens1f0np0), not {text!r}")
    if host not in hosts:
        raise UsageError(f"verify: --flap: {host} is not a host of the answers file (hosts: {', '.join(hosts)})")
    return host, port


def port_problem(disc: DiscoveryFacts, port: str) -> str | None:
    """Why ``port`` must not be flapped on this host, or None."""
    rails = [p.netdev for p in disc.rdma_ports() + disc.soft_rdma if p.netdev]
    if port == disc.ssh_interface:
        return f"{port} carries this SSH session; taking it down would cut the host off"
    if port not in rails:
        return f"{port} is not a rail port of this host (rails: {', '.join(rails) or 'none'})"
    return None


def v2_gid(disc: DiscoveryFacts, port: str) -> tuple[int | None, str | None]:
    """The port's RoCE v2 IPv4 GID: (index, GID) as show_gids lists it."""
    p = disc.port_by_netdev(port) or next((s for s in disc.soft_rdma if s.netdev == port), None)
    if p is None:
        return None, None
    found = next((g for g in p.gids if g.version == "v2" and g.ipv4), None)
    return (found.index, found.gid) if found else (None, None)


def compact(gid: str | None) -> str:
    """A GID as rdma-core prints it (::ffff:192.168.1.11), not sysfs's full form."""
    import ipaddress

    if gid is None:
        return "none"
    try:
        addr = ipaddress.IPv6Address(gid)
    except ValueError:
        return gid
    return f"::ffff:{addr.ipv4_mapped}" if addr.ipv4_mapped else str(addr)


def parse_ps(text: str) -> list[tuple[int, int, str]]:
    """``ps -eo pid=,etimes=,args=``: (pid, seconds since it started, command line)."""
    found = []
    for line in text.splitlines():
        parts = line.split(None, 2)
        if len(parts) == 3 and parts[0].isdigit() and parts[1].isdigit():
            found.append((int(parts[0]), int(parts[1]), parts[2]))
    return found


def started_before(ps_text: str, since_s: float) -> list[tuple[int, str]]:
    """The rail users (pid, command line) in ``ps -eo pid=,etimes=,args=`` that started before a flap ``since_s``
    seconds ago. etimes is whole seconds, cut down: a job started 0.1 s before the flap reads 5 after 5.8 s. One
    started in the flap's first second reads the same and is named too: it may have opened its queue pairs on a port
    going down, and a needless restart costs less than a job left on a moved GID."""
    return [(pid, args) for pid, age, args in parse_ps(ps_text) if age + 1 > since_s and may_use_rails(args)]


async def wait_for_carrier(executor: Any, port: str, timeout_s: float) -> bool:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        result = await executor.run(["ip", "-j", "link", "show", "dev", port], timeout_s=30)
        try:
            flags = json.loads(result.stdout or "[]")[0].get("flags", [])
        except (ValueError, IndexError, AttributeError):
            flags = []
        if "LOWER_UP" in flags:
            return True
        await asyncio.sleep(1.0)
    return False


def check_port(runner: Any, host: str, port: str) -> DiscoveryFacts:
    """The host's discovery facts, once they show ``port`` may be flapped; UsageError otherwise."""
    disc = _disc(runner, host)
    if disc is None:
        raise UsageError(f"verify: --flap: {host} has no discovery facts; run discovery on it first")
    problem = port_problem(disc, port)
    if problem:
        raise UsageError(f"verify: --flap: not flapping {host}:{port}: {problem}")
    return disc


def _disc(runner: Any, host: str) -> DiscoveryFacts | None:
    raw = runner.facts.get(host, {}).get("discovery")
    return DiscoveryFacts.model_validate(raw) if raw else None


async def flap(session: Any, stages: list[str], host: str, port: str, emit: Any) -> FlapResult:
    runner, executor = session.runner, session.executors[host]
    result = FlapResult(host, port)
    disc = check_port(runner, host, port)  # again, on the facts the verify just read
    result.gid_before = v2_gid(disc, port)
    q = shlex.quote(port)
    emit(f"{host}: taking {port} down for {DOWN_S} s, then up")
    started = time.monotonic()
    await executor.run(
        ["sh", "-c", f"ip link set dev {q} down; sleep {DOWN_S}; ip link set dev {q} up"], sudo=True, timeout_s=60
    )
    if not await wait_for_carrier(executor, port, LINK_BACK_S):
        return result
    result.came_back, result.seconds = True, time.monotonic() - started
    emit(f"{host}: {port} has its link again after {result.seconds:.0f} s; verifying")
    with failed_checks(runner) as found:
        for stage in stages:
            outcome = await verify_stage(runner, stage, only=[host])
            if outcome.statuses.get(host) not in ("done", None):
                result.lost[stage] = what_failed(runner, found, stage, host)
    after = _disc(runner, host)
    result.gid_after = v2_gid(after, port) if after else (None, None)
    ps = await executor.run(["ps", "-eo", "pid=,etimes=,args="], timeout_s=30)
    result.stale = started_before(ps.stdout, time.monotonic() - started)
    return result


async def flap_check(args: argparse.Namespace, session: Any, stages: list[str], emit: Any) -> int:
    tag = "[simulated] " if args.demo else ""
    host, port = parse_target(args.flap, [h.name for h in session.answers.hosts])
    if not args.yes and not _confirmed(f"{tag}Take {host}:{port} down and up? [y/N] "):
        return EXIT_BROKEN
    try:
        result = await flap(session, stages, host, port, emit)
    except ExecutorError as exc:
        sys.stderr.write(f"{tag}roce-wizard: verify --flap: {host}: {exc.detail}\n")
        return EXIT_BROKEN
    _print(result, stages, as_json=args.json, tag=tag)
    return EXIT_OK if result.held else EXIT_BROKEN


def _confirmed(question: str) -> bool:
    return sys.stdin.isatty() and input(question).strip().lower() in ("y", "yes")


def _print(r: FlapResult, stages: list[str], *, as_json: bool, tag: str) -> None:
    if as_json:
        print(json.dumps({
            "host": r.host, "port": r.port, "came_back": r.came_back, "seconds": r.seconds,
            "gid_before": list(r.gid_before), "gid_after": list(r.gid_after), "lost": r.lost,
            "stale_processes": [{"pid": pid, "args": a} for pid, a in r.stale],
        }))  # fmt: skip
    where = f"{r.host}:{r.port}"
    lines: list[str] = []
    if not r.came_back:
        lines.append(f"{tag}{where}: no link {LINK_BACK_S:g} s after it was brought up again: check the cable, the "
                     "transceiver and the switch port (ip link, ethtool)")  # fmt: skip
    for stage, checks in r.lost.items():
        lines.append(f"{tag}{r.host}: {stage} did not come back after the flap of {r.port}")
        lines += [f"{tag}    {c.get('title', '')}: {c.get('evidence', '')}" for c in checks]
    (bi, bg), (ai, ag) = r.gid_before, r.gid_after
    if r.came_back and r.gid_moved:
        lines.append(f"{tag}{where}: its RoCE v2 IPv4 GID {compact(bg)} moved from index {bi} to {ai}"
                     + ("" if bg == ag else f" ({compact(ag)})"))  # fmt: skip
    elif r.came_back:
        lines.append(f"{tag}{where}: RoCE v2 IPv4 GID unchanged at index {ai}")
    if r.stale:
        advice = ("they keep the GID index they looked up before the flap, so their traffic on this rail fails: "
                  "restart them" if r.gid_moved else "the GID did not move; restart them if they report errors on "
                  "this rail")  # fmt: skip
        lines.append(f"{tag}{r.host}: started before the flap and may hold queue pairs on {r.port}: {advice} "
                     "(NCCL looks a GID up only when a communicator is made: NVIDIA/nccl#1333)")  # fmt: skip
        lines += [f"{tag}    pid {pid}: {a}" for pid, a in r.stale]
    verdict = "came back whole" if r.held else "did not come back whole"
    lines.append(f"{tag}roce-wizard: verify --flap: {where} {verdict}; {', '.join(stages)} re-checked on {r.host}")
    sys.stderr.write("\n".join(lines) + "\n")
