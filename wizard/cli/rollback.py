"""`roce-wizard rollback`: show, then with --yes do, the putting back of the files stages replaced (and removal of
those they created) on chosen hosts and stages, from the backups the wizard kept (wizard/engine/rollback.py)."""

from __future__ import annotations

import argparse
import sys

from wizard.cli.options import add_target_options, answers_path, check_target, command_parser, run_async
from wizard.engine.stage_order import STAGE_IDS
from wizard.errors import EXIT_OK


def parser() -> argparse.ArgumentParser:
    """The command's options (also read by tests/engine/test_cli_options.py)."""
    p = command_parser(
        "rollback", "Put back the files the wizard replaced (and remove those it created) on chosen hosts."
    )
    add_target_options(p)
    p.add_argument("--host", action="append", default=[], help="host to roll back (repeatable; default: all)")
    p.add_argument("--stage", action="append", default=[], choices=STAGE_IDS, help="stage (repeatable; default: all)")
    p.add_argument("--yes", action="store_true", help="do it (without --yes the rollback is only shown)")
    return p


def main(argv: list[str]) -> int:
    args = parser().parse_args(argv)
    check_target(args, "rollback")
    from wizard.answers.model import load_answers
    from wizard.engine.session import chosen_hosts

    answers = load_answers(answers_path(args))
    stages = [s for s in reversed(STAGE_IDS) if not args.stage or s in args.stage]
    if args.yes:  # it changes hosts: one writer per state directory (without --yes it only shows)
        from wizard.engine.state_lock import lock_state_dir
        from wizard.paths import default_state_dir

        lock_state_dir(args.state_dir or default_state_dir(answers.cluster.name, demo=args.demo))
    return run_async(_rollback(args, answers, chosen_hosts(answers, args.host), stages))


async def _rollback(args: argparse.Namespace, answers, hosts: list[str], stages: list[str]) -> int:  # type: ignore[no-untyped-def]
    from wizard.engine.rollback import roll_back, rollback_plans
    from wizard.engine.session import session_for_args

    failed = 0
    async with session_for_args(args, answers) as session:
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
