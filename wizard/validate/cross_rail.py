"""``bwtest --cross-rail``: rail i of one host to every other rail j of another, through the leaves and the spine.

On a rail-optimized fabric same-rail traffic never leaves its leaf; what crosses rails (a GPU talking to a peer's
NIC on another rail, PXN disabled, a misplaced QP) is routed leaf -> spine -> leaf. Each run is one ib_write_bw
from the client's rail-i GID to the server's rail-j GID: the kernel resolves the server's address from the
client's GID address over the client's port only (drivers/infiniband/core/addr.c binds the lookup to the GID's
netdev), so without the per-rail table and rule the QP cannot reach RTR and perftest says "Failed to modify QP .. to
RTR". Results are RailResult(mode="cross", rail=i, peer_rail=j), judged against the line rate like the others.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from steps.network.design import fabric_of
from wizard.errors import UsageError
from wizard.validate import perftest as pt
from wizard.validate.model import PASS_RATIO, CheckResult, RailEnd, RailResult

if TYPE_CHECKING:
    from wizard.answers.model import Answers
    from wizard.validate.run import Validation

PEER_GONE = "Failed to exchange data between server and clients"  # perftest, when the other side gave up
NO_SPINE = "the rails are back-to-back cables: no leaf or spine joins two rails, so no cross-rail path exists"
FIX_ROUTES = (
    "run stage network on {host}: rail {rail} needs its routing table (100 + rail: the rail subnet, the other rails "
    "via {gw}) and the rule `from {ip}`; check with `ip route get {dst} from {ip}` (it must say dev {nd} via {gw})"
)


@dataclass
class CrossRailPlan:
    pair: tuple[str, str] | None = None  # (client host, server host); None: the first two hosts
    seconds: float = 3.0


def plan(pair: str | None, seconds: float) -> CrossRailPlan:
    """The plan from ``--pair A,B`` and ``--seconds``; UsageError for a malformed pair."""
    if pair is None:
        return CrossRailPlan(None, seconds)
    names = [p.strip() for p in pair.split(",") if p.strip()]
    if len(names) != 2 or names[0] == names[1]:
        raise UsageError("--pair takes two different host names: --pair gpu-001,gpu-002")
    return CrossRailPlan((names[0], names[1]), seconds)


def skip_reason(answers: Answers) -> str | None:
    """Why there is nothing to route between rails (back-to-back, or no rail gateway); None on a routed fabric."""
    if fabric_of(answers) != "switched" or not any(r.gateway for r in answers.network.rails):
        return NO_SPINE
    return None


async def run_cross_rail(v: Validation, p: CrossRailPlan) -> list[RailResult]:
    """Every rail i of the client host to every rail j != i of the server host, one run at a time."""

    why = skip_reason(v.answers)
    if why:
        v.emit("phase", {"name": "cross_rail", "text": f"cross-rail: skipped: {why}"})
        v.report.lint.append(CheckResult(id="cross_rail", title="cross-rail paths", status="skip", evidence=why))
        return []
    a, b = p.pair if p.pair else (v.hosts[0], v.hosts[1]) if len(v.hosts) >= 2 else ("", "")
    if a not in v.facts or b not in v.facts or v.facts[a].error or v.facts[b].error:
        v.emit("phase", {"name": "cross_rail", "text": f"cross-rail: skipped: no facts for the pair {a}, {b}"})
        return []
    n_a, n_b = len(v.facts[a].rails()), len(v.facts[b].rails())
    total = sum(1 for i in range(n_a) for j in range(n_b) if i != j)
    v.emit(
        "phase",
        {
            "name": "cross_rail",
            "text": f"rail x rail through the spine: {a} rail i -> {b} rail j != i, {total} runs of "
            f"{p.seconds:g} s: about {total * (p.seconds + 2):.0f} s",
        },
    )
    results = []
    for i in range(n_a):
        for j in range(n_b):
            if i == j:
                continue
            client, server = v.end(a, i), v.end(b, j)
            if client is None or server is None:
                continue
            result = await _one(v, client, server, i, j, p.seconds)
            v.emit("rail", {"result": result})
            results.append(result)
    return results


async def _one(v: Validation, client: RailEnd, server: RailEnd, i: int, j: int, seconds: float) -> RailResult:
    spec = pt.Spec(v.options.tool, server, client, v._next_port(), v.answers.roce.tos, duration_s=seconds)
    spec.line_buffered = v._stdbuf.get(client.host, False)
    result = RailResult(rail=i, peer_rail=j, server=server, client=client, mode="cross")
    result.expected_gbps = v._expected(server, client, (i, j))
    result.command = " ".join(pt.client_argv(spec))
    v.emit("rail_start", {"rail": i, "mode": "cross", "pair": (client.host, server.host), "label": label(result)})
    out = await pt.run_pair(v.executors[server.host], v.executors[client.host], spec, None, v._leftovers)
    result.errors = out.errors
    if out.client is not None:
        result.output = "\n".join((out.client.stdout + "\n" + out.client.stderr).strip().splitlines()[-60:])
    parsed = out.parsed
    rows = getattr(parsed, "results", None)
    if rows:
        result.gbps = rows[-1].average.gbps
        result.mtu = getattr(parsed, "mtu", None)
    rails = v.answers.network.rails
    gateways = tuple(rails[k].gateway if k < len(rails) else None for k in (i, j))
    judge(result, out.client.stderr if out.client else "", out.server.stderr if out.server else "", gateways,
          v.pass_ratio)  # fmt: skip
    return result


def label(x: RailResult) -> str:
    return (
        f"rail {x.rail} -> rail {x.peer_rail}: {x.client.host} {x.client.netdev} -> {x.server.host} {x.server.netdev}"
    )


def judge(
    x: RailResult,
    client_err: str,
    server_err: str,
    gateways: tuple[str | None, ...] = (None, None),
    pass_ratio: float = PASS_RATIO,
) -> None:
    """Pass at >= 90 % of line rate; a run without a result fails with the port whose route is wrong."""
    if x.gbps is not None:
        ratio = x.ratio
        x.status = "pass" if ratio is None or ratio >= pass_ratio else "fail"
        if x.status == "fail":
            x.cause = (
                f"{label(x)}: {x.gbps:.1f} of {x.expected_gbps:.0f} Gb/s through the spine "
                "(same-rail runs at line rate point at the leaf uplinks or the spine)"
            )
            x.fix = "compare with bwtest's per-rail results; check the leaf uplink and spine port counters"
        return
    x.status = "fail"
    text = " ".join(x.errors) + " " + client_err
    if "to RTR" in text or "Unable to Connect the HCA" in text:
        end, peer = x.client, x.server
    elif "to RTR" in server_err or "Unable to Connect the HCA" in server_err or PEER_GONE in text:
        # the client's QP reached RTR and the server hung up in the next handshake: the server's QP did not
        end, peer = x.server, x.client
    else:
        x.cause = f"{label(x)}: no result ({'; '.join(x.errors[:2]) or 'perftest printed nothing'})"
        x.fix = "run `roce-wizard doctor`; check that both ports are up and addressed (stage network)"
        return
    rail = x.rail if end is x.client else x.peer_rail
    gw = (gateways[0] if end is x.client else gateways[1]) or f"the rail gateway of {end.network}"
    x.cause = (
        f"{end.host} {end.netdev} ({end.ipv4}) cannot reach {peer.host} {peer.netdev} ({peer.ipv4}) through the "
        f"spine: the kernel resolves the peer from {end.ipv4} over {end.netdev} only, and no route there leads to "
        f"it (the QP could not move to RTR): {end.host}'s rail {rail} policy routing is missing or points elsewhere"
    )
    x.fix = FIX_ROUTES.format(host=end.host, rail=rail, gw=gw, ip=end.ipv4, dst=peer.ipv4, nd=end.netdev)


def summary_lines(results: list[RailResult]) -> list[str]:
    out = []
    for x in results:
        ratio = f" ({x.ratio:.0%} of {x.expected_gbps:.0f})" if x.ratio is not None else ""
        rate = f"{x.gbps:.2f} Gb/s{ratio}" if x.gbps is not None else "no result"
        out.append(f"{x.status.upper():4}  cross {label(x)}: {rate}")
    return out
