"""``roce-wizard verify``: re-check every stage on every host, changing nothing, and say what no longer holds.

The checks are the stages' own, the ones a run ends with (a link's MTU, a rail's route, the DSCP trust and PFC
bits, the peer-memory module, nccl.conf, the serving units...), run again from fresh probes. What a day, a reboot or
a port flap undid shows here with its host, its check, the evidence and the fix, as the stage found it. Nothing on a
host is changed; the saved progress records the outcome, as a verify from the wizard does.
"""

from __future__ import annotations

import argparse
import json
import sys
from typing import Any

from wizard.cli.options import (
    add_json_option,
    add_stage_options,
    add_target_options,
    answers_path,
    check_target,
    command_parser,
    run_async,
    select_stages,
)
from wizard.errors import EXIT_OK, UsageError

EXIT_BROKEN = 1


def parser() -> argparse.ArgumentParser:
    """The command's options (also read by tests/engine/test_cli_options.py)."""
    p = command_parser(
        "verify", "Re-check every stage on every host, changing nothing, and print what no longer holds."
    )
    add_target_options(p)
    add_stage_options(p, only="comma-separated stages to re-check (default: every stage done on some host)")
    add_json_option(
        p, "print one JSON line per host and stage on stdout (with --reboot: per rebooted host; --flap: the port)"
    )
    p.add_argument(
        "--no-bandwidth",
        action="store_true",
        help="skip the short same-rail bandwidth check (each host with its ring neighbours, 2 s per round)",
    )
    p.add_argument(
        "--reboot",
        action="store_true",
        help="then reboot the hosts in waves, verify each after its reboot and say what did not survive, and why",
    )
    p.add_argument(
        "--max-unavailable",
        type=positive_int,
        default=1,
        metavar="N",
        help="with --reboot: hosts down at once (default 1; inference replicas still go one at a time)",
    )
    p.add_argument(
        "--boot-timeout",
        type=positive_int,
        default=900,
        metavar="S",
        help="with --reboot: seconds a host may take to come back before the run stops (default 900)",
    )
    p.add_argument("--flap", metavar="HOST:PORT", help="take one rail port down and up, then verify that host")
    p.add_argument("--yes", action="store_true", help="allow --reboot and --flap without asking")
    return p


def positive_int(text: str) -> int:
    value = int(text)
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be at least 1, not {value}")
    return value


def main(argv: list[str]) -> int:
    args = parser().parse_args(argv)
    check_target(args, "verify")
    if args.reboot and args.flap:
        raise UsageError("verify: --reboot and --flap are separate checks; run one, then the other")
    if (args.reboot or args.flap) and not args.yes and not sys.stdin.isatty():
        what = "--reboot reboots hosts" if args.reboot else "--flap takes a live link down"
        raise UsageError(f"verify: {what}: pass --yes, or run it at a terminal to be asked")
    stages = select_stages(args.only, args.from_stage)
    from wizard.answers.model import load_answers

    answers = load_answers(answers_path(args))
    if args.flap:
        from wizard.cli.verify_flap import parse_target

        parse_target(args.flap, [h.name for h in answers.hosts])  # a mistyped host fails before anything runs
    return run_async(_verify(args, answers, stages, chosen=bool(args.only or args.from_stage)))


async def _verify(args: argparse.Namespace, answers: Any, stages: list[str], *, chosen: bool) -> int:
    from wizard.engine.interactive import failed_checks, saved_progress, verify_stage
    from wizard.engine.session import session_for_args

    results: list[dict[str, Any]] = []
    tag = "[simulated] " if args.demo else ""

    def emit(line: str) -> None:
        sys.stderr.write(f"{tag}{line}\n")
        sys.stderr.flush()

    async with session_for_args(args, answers) as session:
        if args.flap:  # a port that must not go down is refused before anything runs
            from wizard.cli.verify_flap import check_port, parse_target

            check_port(session.runner, *parse_target(args.flap, [h.name for h in answers.hosts]))
        hosts = [h.name for h in answers.hosts]
        saved = saved_progress(session.store, hosts, stages)
        if not chosen:  # a stage no host ever finished has nothing to re-check yet
            stages = [s for s in stages if any(saved[h][s].status == "done" for h in hosts)]
        with failed_checks(session.runner) as found:
            for stage in stages:
                outcome = await verify_stage(session.runner, stage)
                for host in hosts:
                    status = outcome.statuses.get(host, "skipped")
                    was = saved[host][stage].status
                    if status == "skipped" and was == "done":
                        status = "failed"  # could not be re-checked (its host cannot be read): it is not known to hold
                    results.append(_result(stage, host, status, was, session, found.get((stage, host), [])))
        broken = any(r["status"] == "failed" for r in results)
        _print(results, stages, as_json=args.json and not (args.reboot or args.flap), simulated=args.demo)
        if _wants_bandwidth(args, results, hosts):
            from wizard.cli.verify_bandwidth import bandwidth_check

            emit("roce-wizard: verify: same-rail bandwidth, each host with its ring neighbours (--no-bandwidth skips)")
            passed, lines = await bandwidth_check(session, simulated=args.demo)
            for line in lines:
                emit(f"    {line}" if line is not lines[0] else f"roce-wizard: verify: {line}")
            if args.json and not (args.reboot or args.flap):
                print(json.dumps({"host": None, "stage": "bandwidth", "status": "done" if passed else "failed",
                                  "lines": lines}))  # fmt: skip
            broken = broken or not passed
        if broken or not stages or not (args.reboot or args.flap):
            if broken and (args.reboot or args.flap):
                what = "rebooted" if args.reboot else "flapped"
                emit(f"roce-wizard: verify: nothing was {what}: what fails now would fail after it too and prove "
                     "nothing about persistence; fix it first")  # fmt: skip
            return EXIT_BROKEN if broken else EXIT_OK
        if args.flap:
            from wizard.cli.verify_flap import flap_check

            return await flap_check(args, session, stages, emit)
        from wizard.cli.verify_reboot import reboot_check

        return await reboot_check(args, session, stages, emit)


def _wants_bandwidth(args: argparse.Namespace, results: list[dict[str, Any]], hosts: list[str]) -> bool:
    """The short bandwidth check runs where lossless rails exist to carry it: the network and roce stages hold on
    two hosts or more (before the roce stage, bwtest's own verdict fails on the missing PFC anyway)."""
    if args.no_bandwidth or len(hosts) < 2:
        return False
    holding = {s: sum(r["stage"] == s and r["status"] == "done" for r in results) for s in ("network", "roce")}
    return min(holding.values()) >= 2


def _result(stage: str, host: str, status: str, was: str, session: Any, checks: list[dict[str, Any]]) -> dict[str, Any]:
    reason = session.store.host(host).stage(stage).reason
    return {
        "host": host,
        "stage": stage,
        "status": status,
        "was": was,  # what the saved progress said before: "done" and now failed is what no longer holds
        "reason": reason,
        "failed_checks": [
            {"check": c.get("title", c.get("id", "")), "evidence": c.get("evidence", ""), "fix": c.get("fix")}
            for c in checks
        ],
    }


def _print(results: list[dict[str, Any]], stages: list[str], *, as_json: bool, simulated: bool) -> None:
    tag = "[simulated] " if simulated else ""
    if as_json:
        for r in results:
            print(json.dumps(r))
    broken = [r for r in results if r["status"] == "failed"]
    for r in broken:
        lost = "no longer holds" if r["was"] == "done" else f"fails (saved as {r['was']})"
        # The failed checks say it all, each with its fix; the reason (the first of them) only when none came.
        lines = [f"{tag}{r['host']}: {r['stage']} {lost}" + ("" if r["failed_checks"] else f": {r['reason']}")]
        for c in r["failed_checks"]:
            lines.append(f"{tag}    {c['check']}: {c['evidence']}" + (f" (fix: {c['fix']})" if c["fix"] else ""))
        sys.stderr.write("\n".join(lines) + "\n")
    hosts = sorted({r["host"] for r in results})
    if not stages:
        sys.stderr.write(f"{tag}roce-wizard: nothing to verify: no stage is done on any host yet\n")
    elif broken:
        bad = sorted({r["host"] for r in broken})
        sys.stderr.write(
            f"{tag}roce-wizard: verify: {len(broken)} stage(s) on {len(bad)} of {len(hosts)} hosts fail; "
            f"{', '.join(stages)} re-checked, nothing changed\n"
        )
    else:
        sys.stderr.write(
            f"{tag}roce-wizard: verify: {', '.join(stages)} {'holds' if len(stages) == 1 else 'hold'} on all "
            f"{len(hosts)} hosts; nothing changed\n"
        )
