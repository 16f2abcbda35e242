"""Subcommands besides the headless run: plan, status, schema, parse, switch-config and the lab server."""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Coroutine, Sequence

from wizard.cli.main import _path  # argparse's type for paths: pathlib loads only when a path is given
from wizard.errors import EXIT_OK, EXIT_USAGE

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing (bench/startup.py)
if TYPE_CHECKING:
    from typing import Any


def dispatch(name: str, args: Sequence[str]) -> int:
    if name == "check":
        from wizard.cli.check import check_cmd

        return check_cmd(list(args))
    if name == "switch-config":
        from wizard.cli.switch_config import switch_config_cmd

        return switch_config_cmd(list(args))
    if name in ("bwtest", "doctor"):
        from wizard.cli.bwtest import bwtest_cmd, doctor_cmd

        return {"bwtest": bwtest_cmd, "doctor": doctor_cmd}[name](list(args))
    if name == "export":
        return export_cmd(list(args))
    if name == "report":
        from wizard.cli.report import report_cmd

        return report_cmd(list(args))
    if name == "metrics":
        from wizard.cli.metrics import metrics_cmd

        return metrics_cmd(list(args))
    handler = {
        "plan": plan_cmd,
        "status": status_cmd,
        "schema": schema_cmd,
        "parse": parse_cmd,
        "lab": lab_cmd,
        "rollback": rollback_cmd,
    }[name]
    return handler(list(args))


def _run_async(coroutine: Coroutine[Any, Any, int]) -> int:
    """asyncio.run, imported on use: a subcommand's --help or usage error must not pay for asyncio."""
    import asyncio

    return asyncio.run(coroutine)


# -- export -----------------------------------------------------------------------------------------------
EXPORTS = {  # what `roce-wizard export KIND` writes -> (module, entry point taking the arguments after KIND)
    "ansible": ("wizard.cli.export_ansible", "export_ansible_cmd"),
    "k8s": ("wizard.cli.export_k8s", "k8s_cmd"),
}


def export_cmd(argv: list[str]) -> int:
    """`roce-wizard export KIND ...`: hand the verified design to another engine (each kind has its own --help)."""
    import importlib

    from wizard.errors import UsageError

    kinds = ",".join(sorted(EXPORTS))
    if argv[:1] in (["-h"], ["--help"]):
        print(f"usage: roce-wizard export {{{kinds}}} [--help] ...\n")
        print("Write the design the wizard verified as input for another engine; each kind has its own --help:")
        print("; ".join(f"roce-wizard export {k} --help" for k in sorted(EXPORTS)))
        return EXIT_OK
    if not argv or argv[0] not in EXPORTS:
        got = f" {argv[0]!r}" if argv else ""
        raise UsageError(f"export: unknown kind{got}; one of {kinds} (roce-wizard export KIND --help)")
    module, function = EXPORTS[argv[0]]
    return int(getattr(importlib.import_module(module), function)(argv[1:]))


def _parser(prog: str, description: str) -> argparse.ArgumentParser:
    from wizard.cli.main import _Parser

    return _Parser(prog=f"roce-wizard {prog}", description=description)


# -- plan -------------------------------------------------------------------------------------------------
def plan_cmd(argv: list[str]) -> int:
    p = _parser("plan", "Read facts only, change nothing, and print the ordered changes per host.")
    p.add_argument("--answers", type=_path, help="answers file (default with --demo: the reference example)")
    p.add_argument("--demo", action="store_true", help="plan against the SIMULATED cluster on 127.0.0.1")
    p.add_argument("--out", type=_path, help="write DIR/<host>/files/<path> and DIR/<host>/commands.sh")
    p.add_argument("--only", help="comma-separated stages")
    p.add_argument("--from", dest="from_stage")
    p.add_argument("--state-dir", type=_path)
    p.add_argument("--json", action="store_true", help="print the plans as one JSON document on stdout")
    p.add_argument("--fault", action="append", default=[])
    from wizard.answers.profiles import add_profile_option, check_profile, demo_answers

    add_profile_option(p)
    args = p.parse_args(argv)
    from wizard.answers.model import load_answers
    from wizard.cli.main import select_stages
    from wizard.errors import UsageError

    if args.answers is None and not args.demo:
        raise UsageError("plan needs --answers FILE (or --demo)")
    args.profile = check_profile(args.profile, args.demo)
    answers = load_answers(args.answers or demo_answers(args.profile))
    stages = select_stages(args.only, args.from_stage)
    return _run_async(_plan(args, answers, stages))


async def _plan(args: argparse.Namespace, answers, stages: list[str]) -> int:  # type: ignore[no-untyped-def]
    from wizard.engine.plan_export import print_plans, write_plan_dir
    from wizard.engine.session import session_for_args

    async with session_for_args(args, answers) as session:
        outcomes = await session.runner.plan_all(stages)
    failures = {h: r for o in outcomes for h, r in _failures(session, o).items()}
    print_plans(outcomes, failures, as_json=args.json, simulated=args.demo)
    if args.out:
        write_plan_dir(args.out, outcomes, simulated=args.demo, failures=failures)
        sys.stderr.write(f"roce-wizard: plan written to {args.out}/<host>/\n")
    return 1 if failures else EXIT_OK


def _failures(session, outcome) -> dict[str, str]:  # type: ignore[no-untyped-def]
    return {
        host: session.store.host(host).stage(outcome.stage).reason
        for host, status in outcome.statuses.items()
        if status == "failed"
    }


# -- status -----------------------------------------------------------------------------------------------
def status_cmd(argv: list[str]) -> int:
    p = _parser("status", "Saved progress per stage and host.")
    p.add_argument("--state-dir", type=_path)
    p.add_argument("--answers", type=_path, help="find the state directory from this answers file's cluster name")
    p.add_argument("--demo", action="store_true", help="the demo's state directory")
    p.add_argument("--json", action="store_true")
    args = p.parse_args(argv)
    from wizard.cli.status import find_state_dir, print_status

    state_dir = find_state_dir(args.state_dir, args.answers, demo=args.demo)
    if state_dir is None:
        return EXIT_USAGE
    return print_status(state_dir, as_json=args.json)


# -- schema -----------------------------------------------------------------------------------------------
def schema_cmd(argv: list[str]) -> int:
    _parser("schema", "Print the JSON Schema of the answers file.").parse_args(argv)
    from wizard.answers.model import answers_schema

    print(json.dumps(answers_schema(), indent=2))
    return EXIT_OK


# -- parse ------------------------------------------------------------------------------------------------
def parse_cmd(argv: list[str]) -> int:
    from wizard.parsers import TOOLS, ParseError, parse

    p = _parser("parse", "Parse one real tool output and print it as JSON.")
    p.add_argument("tool", choices=sorted(TOOLS), metavar="TOOL", help="one of: " + ", ".join(sorted(TOOLS)))
    p.add_argument("file", nargs="?", default="-", help="file with the output, or - for stdin")
    args = p.parse_args(argv)
    try:
        text = sys.stdin.read() if args.file == "-" else _path(args.file).read_text(encoding="utf-8", errors="replace")  # type: ignore[attr-defined]
    except OSError as exc:
        sys.stderr.write(f"roce-wizard parse: cannot read {args.file}: {exc.strerror}\n")
        return EXIT_USAGE
    try:
        result = parse(args.tool, text)
    except ParseError as exc:
        sys.stderr.write(f"roce-wizard parse: {args.file}: not {args.tool} output: {exc}\n")
        return EXIT_USAGE
    print(result.model_dump_json(indent=2))
    return EXIT_OK


# -- lab --------------------------------------------------------------------------------------------------
def lab_cmd(argv: list[str]) -> int:
    p = _parser("lab", "The simulated cluster.")
    sub = p.add_subparsers(dest="action", required=True)
    serve = sub.add_parser("serve", help="serve SIMULATED hosts over SSH on 127.0.0.1 until interrupted")
    serve.add_argument("--hosts", type=int, default=2, help="number of hosts (2 = the reference pair)")
    serve.add_argument("--port", type=int, default=0, help="first port (host i listens on PORT+i); 0 = any free")
    from wizard.lab.faults import FAULT_HELP

    serve.add_argument(
        "--fault", action="append", default=[], metavar="HOST:KIND[=ARG]", help="; ".join(FAULT_HELP.values())
    )
    serve.add_argument("--write-answers", type=_path, help="write an answers file (plus key and known_hosts) for them")
    serve.add_argument(
        "--profile",
        choices=("reference", "rails-16"),
        default=None,
        help="rails-16: 16 HGX H100 hosts gpu-001..gpu-016 on 8 rail leaves (--hosts is then ignored)",
    )
    args = p.parse_args(argv)
    from wizard.lab.serve import serve_lab

    return _run_async(serve_lab(args.hosts, args.port, args.fault, args.write_answers, args.profile))


# -- rollback ---------------------------------------------------------------------------------------------
def rollback_cmd(argv: list[str]) -> int:
    from wizard.cli.main import STAGE_IDS

    p = _parser("rollback", "Put back the files the wizard replaced (and remove those it created) on chosen hosts.")
    p.add_argument("--answers", type=_path, help="answers file (default with --demo: the reference example)")
    p.add_argument("--demo", action="store_true", help="the SIMULATED cluster")
    p.add_argument("--host", action="append", default=[], help="host to roll back (repeatable; default: all)")
    p.add_argument("--stage", action="append", default=[], choices=STAGE_IDS, help="stage (repeatable; default: all)")
    p.add_argument("--yes", action="store_true", help="do it (without --yes the rollback is only shown)")
    p.add_argument("--state-dir", type=_path)
    args = p.parse_args(argv)
    from wizard.answers.model import load_answers
    from wizard.errors import UsageError
    from wizard.paths import example_answers

    if args.answers is None and not args.demo:
        raise UsageError("rollback needs --answers FILE (or --demo)")
    from wizard.engine.session import chosen_hosts

    answers = load_answers(args.answers or example_answers())
    stages = [s for s in reversed(STAGE_IDS) if not args.stage or s in args.stage]
    if args.yes:  # it changes hosts: one writer per state directory (without --yes it only shows)
        from wizard.engine.state_lock import lock_state_dir
        from wizard.paths import default_state_dir

        lock_state_dir(args.state_dir or default_state_dir(answers.cluster.name, demo=args.demo))
    return _run_async(_rollback(args, answers, chosen_hosts(answers, args.host), stages))


async def _rollback(args: argparse.Namespace, answers, hosts: list[str], stages: list[str]) -> int:  # type: ignore[no-untyped-def]
    from steps import all_steps
    from wizard.engine.rollback import roll_back, rollback_plans
    from wizard.engine.session import command_session, sudo_password

    password = sudo_password(answers, interactive=True)
    failed = 0
    async with command_session(
        answers, all_steps(), demo=args.demo, faults=[], state_dir=args.state_dir, password=password
    ) as session:
        for host, change in rollback_plans(session.store, hosts, stages).items():
            if change is None:
                print(f"{host}: nothing to roll back for {', '.join(stages)}")
                continue
            print(f"{host}: {change.summary}")
            for command in change.commands:
                print(f"    $ {command.shell()}")
        if args.yes:
            for outcome in await roll_back(session.store, session.executors, hosts, stages):
                failed += outcome.status == "failed"
                if outcome.status != "nothing":
                    print(f"{outcome.host}: {outcome.detail}")
    if not args.yes:
        sys.stderr.write("roce-wizard rollback: nothing done; add --yes to roll back as shown\n")
        return 1
    return 1 if failed else EXIT_OK
