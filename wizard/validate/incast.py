"""`bwtest --incast`: K senders into one receiver port on every rail at once, counters before and after each round.

A round oversubscribes the receiver's leaf port K:1 on purpose: only then must the switch pause the senders (PFC)
and mark ECN, so a fabric that is lossless only while uncongested is caught. The receiver runs one ``ib_write_bw
-D`` server per sender; all servers of one rail start in a single remote shell, so a receiver needs one SSH
session per rail, not one per flow (OpenSSH allows 10 sessions per connection by default: sshd_config MaxSessions).
"""

from __future__ import annotations

import argparse
import asyncio
import shlex
from dataclasses import dataclass
from typing import TYPE_CHECKING

from wizard.errors import UsageError
from wizard.executors.base import CommandResult, ExecutorError
from wizard.parsers import ParseError, parse
from wizard.parsers.perftest import PerftestBw
from wizard.validate import counters as ctr
from wizard.validate import perftest as pt
from wizard.validate.incast_verdict import judge, switch_port
from wizard.validate.model import IncastFlow, IncastRound

if TYPE_CHECKING:
    from wizard.validate.run import Validation

MAX_FANIN = 15  # a 16-host leaf: every other host into one
Counters = dict[tuple[str, str], dict[str, int]]


@dataclass
class IncastPlan:
    """What `--incast` asked for: senders per round (None: all other hosts, at most 15) and rounds (None: one per
    host, so every host receives once)."""

    fanin: int | None = None
    rounds: int | None = None


def check_plan(hosts: list[str], plan: IncastPlan) -> tuple[int, int]:
    """(fan-in, rounds) for these hosts; UsageError where N:1 cannot oversubscribe anything."""
    n = len(hosts)
    if n < 3:
        raise UsageError(
            f"--incast needs at least 3 hosts (2 senders into 1 receiver); the answers have {n} "
            f"({', '.join(hosts)}): two hosts back to back cannot oversubscribe a port"
        )
    fanin = plan.fanin if plan.fanin is not None else min(n - 1, MAX_FANIN)
    if not 2 <= fanin <= n - 1:
        raise UsageError(f"--fanin {fanin}: must be between 2 and {n - 1} (the other hosts)")
    rounds = plan.rounds if plan.rounds is not None else n
    if rounds < 1:
        raise UsageError(f"--incast-rounds {rounds}: must be at least 1")
    return fanin, rounds


def plan_from_args(args: argparse.Namespace) -> IncastPlan:
    """The plan of `bwtest --incast`, checked against the answers the run will load (before any host is touched)."""
    from wizard.answers.model import load_answers
    from wizard.answers.profiles import check_profile, demo_answers

    plan = IncastPlan(args.fanin, args.incast_rounds)
    if args.answers is None and not args.demo:
        return plan  # the run itself reports the missing --answers
    profile = check_profile(getattr(args, "profile", None), args.demo)
    answers = load_answers(args.answers or demo_answers(profile))
    check_plan([h.name for h in answers.hosts], plan)
    return plan


def schedule(hosts: list[str], fanin: int, rounds: int) -> list[tuple[str, list[str]]]:
    """(receiver, senders) per round: the receiver rotates through the hosts, the senders are the next ``fanin``
    hosts after it (wrapping), so with the defaults every host receives once and sends in every other round."""
    n = len(hosts)
    return [(hosts[r % n], [hosts[(r + k) % n] for k in range(1, fanin + 1)]) for r in range(rounds)]


def estimate_s(rounds: int, seconds: float) -> float:
    """Wall time: each round runs all rails at once for ``seconds``, plus setup and two counter reads."""
    return rounds * (seconds + pt.START_DELAY_S + 2.0)


async def run_incast(v: Validation, plan: IncastPlan, *, cross: bool = False, first: int = 0) -> list[IncastRound]:
    """Every round on every rail at once; each rail's result is judged and emitted as an ``incast`` event. With
    ``cross`` (`--cross-rail --incast`) the senders use the next rail, so every flow crosses both leaves' uplinks
    and the spine: PFC is hop by hop, so this proves those ports lossless too. Rounds are numbered from ``first``."""
    hosts = [h for h in v.hosts if h in v.facts and not v.facts[h].error]
    fanin, n_rounds = check_plan(hosts, plan)
    seconds = v.options.together_s
    rounds = schedule(hosts, fanin, n_rounds)
    where = "from the next rail through the spine into" if cross else "into"
    v.emit(
        "phase",
        {
            "name": "incast",
            "text": f"incast: {fanin} senders {where} one port on every rail at once, "
            f"{len(rounds)} rounds of {seconds:g} s: about {estimate_s(len(rounds), seconds):.0f} s",
        },
    )
    v.emit("estimate", {"phase": "incast", "rounds": len(rounds), "seconds": estimate_s(len(rounds), seconds)})
    out: list[IncastRound] = []
    for number, (receiver, senders) in enumerate(rounds, start=first):
        out += await _round(v, number, receiver, senders, seconds, shift=1 if cross else 0)
    return out


async def _round(
    v: Validation, number: int, receiver: str, senders: list[str], seconds: float, shift: int = 0
) -> list[IncastRound]:

    n_rails = min(len(v.facts[h].rails()) for h in [receiver, *senders])
    ports = {
        h: [(p.netdev, p.rdma_device) for p in v.facts[h].rails()[:n_rails] if p.netdev and p.rdma_device]
        for h in [receiver, *senders]
    }
    before = await ctr.read(v.executors, ports)
    rails: list[IncastRound] = []
    specs: list[list[pt.Spec]] = []
    for i in range(n_rails):
        recv = v.end(receiver, i)
        assert recv is not None
        j = (i + shift) % n_rails if n_rails > 1 else i
        x = IncastRound(rail=i, round=number, receiver=recv, line_gbps=recv.speed_gbps,
                        sender_rail=j if shift else None, seconds=seconds)  # fmt: skip
        x.receiver_switch_port = switch_port(v.facts[receiver], i)
        flows = []
        for s in senders:
            end = v.end(s, j)
            assert end is not None
            x.senders.append(IncastFlow(sender=end, switch_port=switch_port(v.facts[s], j)))
            flows.append(pt.Spec(v.options.tool, recv, end, v._next_port(), v.answers.roce.tos, duration_s=seconds))
        rails.append(x)
        specs.append(flows)
    await asyncio.gather(*(_rail(v, x, flows) for x, flows in zip(rails, specs, strict=True)))
    after = await ctr.read(v.executors, ports)
    for x in rails:
        moved = {key: _moved(before.get(key, {}), now) for key, now in after.items()}
        x.receiver_deltas = moved.get((x.receiver.host, x.receiver.netdev), {})
        for f in x.senders:
            f.deltas = moved.get((f.sender.host, f.sender.netdev), {})
        rates = [f.gbps for f in x.senders if f.gbps is not None]
        x.total_gbps = sum(rates) if rates else None
        judge(x, v.facts, after, v.answers.roce.priority, ecn=v.answers.roce.ecn)
        v.emit("incast", {"round": x})
    return rails


def _moved(was: dict[str, int], now: dict[str, int]) -> dict[str, int]:
    return {k: value - was.get(k, 0) for k, value in now.items() if value - was.get(k, 0)}


async def _rail(v: Validation, x: IncastRound, flows: list[pt.Spec]) -> None:
    """One server per sender on the receiver (one shell), then every sender's client at once."""
    ex = v.executors[x.receiver.host]
    if x.receiver.ipv4 is None:
        for f in x.senders:
            f.errors.append(f"{x.receiver.host} {x.receiver.netdev} has no IPv4 address to connect to")
        return
    script = " & ".join(shlex.join(pt.server_argv(spec)) for spec in flows) + " & wait"
    limit = max(pt.time_limit(spec) for spec in flows)
    servers = asyncio.ensure_future(ex.run(["sh", "-c", script], timeout_s=limit + 60))
    await asyncio.sleep(pt.START_DELAY_S)
    await asyncio.gather(*(_client(v, f, spec) for f, spec in zip(x.senders, flows, strict=True)))
    try:
        await asyncio.wait_for(asyncio.shield(servers), pt.SERVER_GRACE_S)
    except (TimeoutError, ExecutorError):
        v._leftovers.append(servers)  # `timeout` ends the servers whose client never came


async def _client(v: Validation, flow: IncastFlow, spec: pt.Spec) -> None:
    spec.line_buffered = v._stdbuf.get(flow.sender.host, False)
    ex = v.executors[flow.sender.host]
    result: CommandResult | None = None
    try:
        for _attempt in range(3):  # the servers may still be starting
            result = await ex.run(pt.client_argv(spec), timeout_s=pt.time_limit(spec) + 60)
            if result.ok or "Couldn't connect" not in result.stdout + result.stderr:
                break
            await asyncio.sleep(pt.START_DELAY_S)
    except ExecutorError as exc:
        flow.errors.append(str(exc))
        return
    assert result is not None
    try:
        parsed = parse(spec.tool, result.stdout + "\n" + result.stderr)
    except ParseError:
        parsed = None
    if isinstance(parsed, PerftestBw) and parsed.results:
        flow.gbps = parsed.results[-1].average.gbps
        flow.errors += parsed.errors
    else:
        flow.errors.append(result.first_error_line() or f"{spec.tool} printed no result")


def summary_lines(rounds: list[IncastRound]) -> list[str]:
    """One line per round whose rails all passed, one line per rail otherwise (with its cause)."""
    out: list[str] = []
    numbers = sorted({x.round for x in rounds})
    for number in numbers:
        rails = [x for x in rounds if x.round == number]
        first = rails[0]
        via = " (senders on the next rail, through the spine)" if first.sender_rail is not None else ""
        if all(x.status == "pass" for x in rails):
            total = sum(x.total_gbps or 0 for x in rails)
            line = sum(x.line_gbps or 0 for x in rails)
            out.append(
                f"PASS  incast round {number}{via}: {len(first.senders)} -> {first.receiver.host} on {len(rails)} "
                "rail(s): "
                f"{total:.0f} of {line:.0f} Gb/s, pauses {sum(x.pauses for x in rails)}, drops 0, "
                f"CNPs {sum(x.cnps for x in rails)}"
            )
            continue
        for x in rails:
            sw = f" ({x.receiver_switch_port})" if x.receiver_switch_port else ""
            total = f"{x.total_gbps:.1f}" if x.total_gbps is not None else "-"
            of = f" of {x.line_gbps:.0f}" if x.line_gbps else ""
            out.append(
                f"{x.status.upper():4}  incast round {number}{via} rail {x.rail}: {len(x.senders)} -> "
                f"{x.receiver.host} {x.receiver.netdev}{sw}: {total}{of} Gb/s, pauses {x.pauses}, "
                f"drops {x.drops}, CNPs {x.cnps}"
            )
            if x.status == "fail" and x.cause:
                out.append(f"      {x.cause}")
    return out
