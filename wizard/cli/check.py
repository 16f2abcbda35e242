"""`roce-wizard check`: the connection test of the Hosts screen, headless: every host reachable, key accepted,
sudo working, operating system named. Changes nothing on any host, so it is the first thing to run on a new rack
(and in a cron job before a maintenance window)."""

from __future__ import annotations

import argparse
import json
import sys

from wizard.cli.options import (
    add_json_option,
    add_target_options,
    answers_path,
    check_target,
    command_parser,
    run_async,
)
from wizard.errors import EXIT_FAILED, EXIT_OK, UsageError

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing (bench/startup.py)
if TYPE_CHECKING:
    from wizard.engine.conn_test import ConnectionReport


def parser() -> argparse.ArgumentParser:
    """The command's options (also read by tests/engine/test_cli_options.py)."""
    p = command_parser("check", "Test SSH, key and sudo on every host; read-only, nothing is changed.")
    add_target_options(p, state_dir="where logs are kept (the command lines it ran, per host)")
    p.add_argument("--host", action="append", default=[], help="host to test (repeatable; default: all)")
    add_json_option(p, "one JSON object per host on stdout")
    p.add_argument("--limit", type=int, default=64, help="hosts tested at once (default 64)")
    return p


def main(argv: list[str]) -> int:
    args = parser().parse_args(argv)
    check_target(args, "check")
    if args.limit < 1:
        raise UsageError("--limit must be at least 1")
    # The engine is imported only now: `check --help` and usage errors stay cheap (bench/startup.py).
    from wizard.answers.model import load_answers
    from wizard.engine.session import chosen_hosts

    answers = load_answers(answers_path(args))
    return run_async(_check(args, answers, chosen_hosts(answers, args.host)))


async def _check(args: argparse.Namespace, answers, hosts: list[str]) -> int:  # type: ignore[no-untyped-def]
    from steps import all_steps
    from wizard.engine.conn_test import check_hosts
    from wizard.engine.session import command_session, sudo_password

    password = sudo_password(answers, interactive=True)
    if args.demo:
        sys.stderr.write("[simulated] SIMULATED CLUSTER: hosts run on 127.0.0.1; nothing real is contacted.\n")
    async with command_session(
        answers, all_steps(), demo=args.demo, faults=args.fault, state_dir=args.state_dir, password=password,
        hosts=hosts, profile=args.profile, switch_os=args.switch_os,
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
