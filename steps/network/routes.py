"""Per-rail routing checked end to end on a switched fabric: every rail address routes out of its own rail's port.

With one subnet per rail on leaf switches, a host holds an address in every rail subnet, so the main table alone
sends traffic for rail j out of port j whatever its source address; RoCE binds each QP to its GID's port and the
kernel resolves the peer over that port (drivers/infiniband/core/addr.c), and a reply from rail i must leave by
rail i. The network stage writes a table per rail and a ``from <rail address>`` rule (netplan ``routes: table`` and
``routing-policy``, netplan-yaml docs "Routing" / "routing-policy"). This module asks the kernel, from every rail
address, for the route to the same rail of one other host per subnet of that rail and to one address of each other
rail (``ip route get DST from SRC``, all in one ``ip -force -j -batch -`` per host) and fails naming the source, the
destination, the port the kernel would use and the one it must use.

One destination per subnet, not every peer: the wizard writes no host routes, so every address of a subnet takes
the same rule and route. Asking for every peer was 8 x 1,023 lookups per host on 1,024 hosts (8.4 million, and
2 MB of facts per host) to learn what 64 lookups tell.
"""

from __future__ import annotations

from typing import Any

from steps.network.design import Design
from wizard.engine.step import CheckItem
from wizard.executors.base import Executor, ExecutorError
from wizard.parsers import ParseError
from wizard.parsers.iproute import parse_ip_route_get

ARGV = ["ip", "-force", "-j", "-batch", "-"]
SHOWN = 6  # wrong routes named in the evidence; the rest are counted


def wanted(designs: dict[str, Design], order: list[str], host: str) -> list[dict[str, Any]]:
    """The lookups to make on ``host``: source, destination, the port and gateway the route must use."""
    design = designs[host]
    others = [h for h in order[order.index(host) + 1 :] + order[: order.index(host)] if h in designs]
    queries: list[dict[str, Any]] = []
    for e in design.endpoints:
        if e.table is None or e.subnet.version != 4:
            continue
        subnets: set[object] = set()
        for other in others:
            peer = next((x for x in designs[other].endpoints if x.key == e.key), None)
            if peer is not None and peer.subnet not in subnets:  # one peer per subnet: the next host in ring order
                subnets.add(peer.subnet)
                queries.append({"src": e.ip, "dst": peer.ip, "dev": e.netdev, "via": None, "peer": other})
        if not e.gateway:
            continue
        for rail in design.endpoints:
            if rail.key == e.key or rail.subnet.version != 4:
                continue
            far = next(
                (x for o in others for x in designs[o].endpoints if x.key == rail.key),
                None,
            )
            if far is not None:
                queries.append({"src": e.ip, "dst": far.ip, "dev": e.netdev, "via": e.gateway, "peer": rail.label})
    return queries


def batch_text(queries: list[dict[str, Any]]) -> str:
    return "".join(f"route get {q['dst']} from {q['src']}\n" for q in queries)


async def probe_routes(ex: Executor, queries: list[dict[str, Any]]) -> dict[str, Any]:
    """One ``ip -force -j -batch -`` with every lookup on stdin; the raw output is kept for the check."""
    if not queries:
        return {"queries": []}
    try:
        result = await ex.run(ARGV, input=batch_text(queries))
    except ExecutorError as exc:
        return {"queries": queries, "error": str(exc)}
    return {"queries": queries, "stdout": result.stdout, "stderr": result.stderr}


def route_check(host: str, facts: dict[str, Any] | None) -> list[CheckItem]:
    """One item: every rail address of ``host`` routes out of its own rail (empty when nothing was asked)."""
    if not facts or not facts.get("queries"):
        return []
    title = "per-rail routes (ip route get DST from each rail address)"
    queries = facts["queries"]
    if "error" in facts:
        return [CheckItem(id="policy_routes", title=title, status="fail", evidence=f"{host}: {facts['error']}")]
    try:
        answers = parse_ip_route_get(f"{facts.get('stdout', '')}\n{facts.get('stderr', '')}")
    except ParseError as exc:
        return [CheckItem(id="policy_routes", title=title, status="fail", evidence=f"{host}: ip route get: {exc}")]
    refused = {f.line: f.error for f in answers.failed}
    wrong: list[str] = []
    for number, q in enumerate(queries, start=1):
        want = f"{q['dev']}" + (f" via {q['via']}" if q["via"] else "")
        got = answers.find(q["dst"], q["src"])
        where = f"{host}: from {q['src']} to {q['dst']} ({q['peer']})"
        if got is None:
            wrong.append(f"{where}: no route ({refused.get(number, 'no answer')}); it must leave by {want}")
        elif got.dev != q["dev"] or (q["via"] and got.gateway != q["via"]):
            used = got.dev + (f" via {got.gateway}" if got.gateway else "") + f" (table {got.table})"
            wrong.append(f"{where} would leave by {used}, not by {want}")
    if not wrong:
        rails = len({q["src"] for q in queries})
        return [
            CheckItem(
                id="policy_routes",
                title=title,
                status="pass",
                evidence=f"{host}: {len(queries)} routes from {rails} rail addresses each leave by their own rail",
            )
        ]
    more = f"; and {len(wrong) - SHOWN} more" if len(wrong) > SHOWN else ""
    return [
        CheckItem(
            id="policy_routes",
            title=title,
            status="fail",
            evidence="; ".join(wrong[:SHOWN]) + more,
            fix=(
                f"re-run stage network on {host}: its netplan file must carry, per rail, a routes table (100 + rail) "
                "with the rail subnet and the other rails via the leaf gateway, and a routing-policy rule from the "
                "rail address (`ip rule` must list them; `netplan apply` installs them)"
            ),
        )
    ]
