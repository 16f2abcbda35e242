"""`roce-wizard check`: the connection test of the Hosts screen, headless: every host reachable, key accepted,
sudo working, operating system named. Changes nothing on any host, so it is the first thing to run on a new rack
(and in a cron job before a maintenance window)."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import TYPE_CHECKING

from wizard.errors import EXIT_FAILED, EXIT_OK, UsageError

if TYPE_CHECKING:
    from wizard.engine.conn_test import ConnectionReport


def check_cmd(argv: list[str]) -> int:
    from wizard.cli.commands import _parser

    p = _parser("check", "Test SSH, key and sudo on every host; read-only, nothing is changed.")
    p.add_argument("--answers", type=Path, help="answers file (default with --demo: the reference example)")
    p.add_argument("--demo", action="store_true", help="the SIMULATED cluster")
    p.add_argument("--host", action="append", default=[], help="host to test (repeatable; default: all)")
    p.add_argument("--json", action="store_true", help="one JSON object per host on stdout")
    p.add_argument("--limit", type=int, default=64, help="hosts tested at once (default 64)")
    p.add_argument("--fault", action="append", default=[], metavar="HOST:KIND[=ARG]", help="(--demo) inject a fault")
    p.add_argument("--state-dir", type=Path, help="where logs are kept (the command lines it ran, per host)")
    args = p.parse_args(argv)
    # The engine is imported only now: `check --help` and usage errors stay cheap (bench/startup.py).
    import asyncio

    from wizard.answers.model import load_answers
    from wizard.engine.session import chosen_hosts
    from wizard.paths import example_answers

    if args.answers is None and not args.demo:
        raise UsageError("check needs --answers FILE (or --demo)")
    if args.fault and not args.demo:
        raise UsageError("--fault only applies to the simulated cluster (--demo)")
    if args.limit < 1:
        raise UsageError("--limit must be at least 1")
    answers = load_answers(args.answers or example_answers())
    return asyncio.run(_check(args, answers, chosen_hosts(answers, args.host)))


async def _check(args: argparse.Namespace, answers, hosts: list[str]) -> int:  # type: ignore[no-untyped-def]
    from steps import all_steps
    from wizard.engine.conn_test import check_hosts
    from wizard.engine.session import command_session, sudo_password

    password = sudo_password(answers, interactive=True)
    if args.demo:
        sys.stderr.write("[simulated] SIMULATED CLUSTER: hosts run on 127.0.0.1; nothing real is contacted.\n")
    async with command_session(
        answers, all_steps(), demo=args.demo, faults=args.fault, state_dir=args.state_dir, password=password,
        hosts=hosts,
    ) as session:  # fmt: skip
        found = await check_hosts(
            session.executors, args.limit, lambda report: _print(report, args.json), close_after=True
        )
    bad = [r.host for r in found.values() if not r.ok]
    sys.stderr.write(
        f"{len(found) - len(bad)} of {len(found)} hosts ready" + (f"; not ready: {', '.join(bad)}\n" if bad else "\n")
    )
    return EXIT_FAILED if bad else EXIT_OK


def _print(report: ConnectionReport, as_json: bool) -> None:
    if as_json:
        row = {
            "host": report.host,
            "ok": report.ok,
            "reachable": report.reachable,
            "authenticated": report.authenticated,
            "sudo": report.sudo,
            "os": report.os,
            "problem": report.problem,
            "seconds": round(report.seconds, 3),
        }
        sys.stdout.write(json.dumps(row) + "\n")
    elif report.ok:
        sys.stdout.write(f"{report.host}: ok - {report.os} ({report.seconds:.1f} s)\n")
    else:
        sys.stdout.write(f"{report.host}: FAILED - {report.problem}\n")
    sys.stdout.flush()
