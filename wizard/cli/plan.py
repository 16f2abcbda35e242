"""`roce-wizard plan`: read facts only, change nothing, and print (or write as scripts) the ordered changes per host."""

from __future__ import annotations

import argparse
import sys

from wizard.cli.options import (
    add_json_option,
    add_stage_options,
    add_target_options,
    answers_path,
    check_target,
    command_parser,
    path_arg,
    run_async,
    select_stages,
)
from wizard.errors import EXIT_OK


def parser() -> argparse.ArgumentParser:
    """The command's options (also read by tests/engine/test_cli_options.py)."""
    p = command_parser("plan", "Read facts only, change nothing, and print the ordered changes per host.")
    add_target_options(p)
    p.add_argument(
        "--out", type=path_arg, metavar="DIR", help="write DIR/<host>/files/<path> and DIR/<host>/commands.sh"
    )
    add_stage_options(p)
    add_json_option(p, "print the plans as one JSON document on stdout")
    return p


def main(argv: list[str]) -> int:
    args = parser().parse_args(argv)
    check_target(args, "plan")
    stages = select_stages(args.only, args.from_stage)
    from wizard.answers.model import load_answers

    return run_async(_plan(args, load_answers(answers_path(args)), stages))


async def _plan(args: argparse.Namespace, answers, stages: list[str]) -> int:  # type: ignore[no-untyped-def]
    from wizard.engine.plan_export import planning_failures, print_plans, write_plan_dir
    from wizard.engine.session import session_for_args

    async with session_for_args(args, answers) as session:
        outcomes = await session.runner.plan_all(stages)
    failures = planning_failures(session.store, outcomes)
    print_plans(outcomes, failures, as_json=args.json, simulated=args.demo)
    if args.out:
        write_plan_dir(args.out, outcomes, simulated=args.demo, failures=failures)
        sys.stderr.write(f"roce-wizard: plan written to {args.out}/<host>/\n")
    return 1 if failures else EXIT_OK
