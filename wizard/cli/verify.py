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
from wizard.errors import EXIT_OK

EXIT_BROKEN = 1


def parser() -> argparse.ArgumentParser:
    """The command's options (also read by tests/engine/test_cli_options.py)."""
    p = command_parser(
        "verify", "Re-check every stage on every host, changing nothing, and print what no longer holds."
    )
    add_target_options(p)
    add_stage_options(p, only="comma-separated stages to re-check (default: every stage done on some host)")
    add_json_option(p, "print one JSON line per host and stage on stdout")
    return p


def main(argv: list[str]) -> int:
    args = parser().parse_args(argv)
    check_target(args, "verify")
    stages = select_stages(args.only, args.from_stage)
    from wizard.answers.model import load_answers

    return run_async(_verify(args, load_answers(answers_path(args)), stages, chosen=bool(args.only or args.from_stage)))


async def _verify(args: argparse.Namespace, answers: Any, stages: list[str], *, chosen: bool) -> int:
    from wizard.engine.interactive import saved_progress, verify_stage
    from wizard.engine.session import session_for_args

    failed_checks: dict[tuple[str, str], list[dict[str, Any]]] = {}

    def collect(event: Any) -> None:
        d = event.data
        if event.kind == "check" and d.get("status") == "fail":
            failed_checks.setdefault((d["stage"], d["host"]), []).append(d)

    results: list[dict[str, Any]] = []
    async with session_for_args(args, answers) as session:
        hosts = [h.name for h in answers.hosts]
        saved = saved_progress(session.store, hosts, stages)
        if not chosen:  # a stage no host ever finished has nothing to re-check yet
            stages = [s for s in stages if any(saved[h][s].status == "done" for h in hosts)]
        session.runner.bus.subscribe(collect)
        for stage in stages:
            outcome = await verify_stage(session.runner, stage)
            for host in hosts:
                status = outcome.statuses.get(host, "skipped")
                was = saved[host][stage].status
                results.append(_result(stage, host, status, was, session, failed_checks.get((stage, host), [])))
    _print(results, stages, as_json=args.json, simulated=args.demo)
    return EXIT_BROKEN if any(r["status"] == "failed" for r in results) else EXIT_OK


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
