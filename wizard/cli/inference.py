"""`roce-wizard inference restart [--replica N]`: restart the serving replicas one at a time, each only after the
previous one answers again, never the last healthy one, so the entry point keeps serving."""

from __future__ import annotations

import argparse
import sys

from wizard.cli.options import add_target_options, check_target, command_parser, run_async
from wizard.errors import EXIT_FAILED, EXIT_OK, EXIT_USAGE


def parser() -> argparse.ArgumentParser:
    """The command's options (also read by tests/engine/test_cli_options.py)."""
    p = command_parser("inference", "Operate the inference service the wizard deployed.")
    sub = p.add_subparsers(dest="action", required=True)
    restart = sub.add_parser(
        "restart",
        help="restart the replicas one at a time (Ray, then the engine), waiting for each to answer /health; the"
        " entry point keeps serving from the others",
        description="Restart the serving replicas one at a time (Ray head, workers, engine), each back in the entry "
        "point's rotation before the next goes down, and never the last healthy one without --force.",
    )
    add_target_options(restart, demo="the SIMULATED cluster on 127.0.0.1 (run the demo first: it deploys them)")
    restart.add_argument("--replica", type=int, metavar="N", help="only replica N (1-based, as the plan numbers them)")
    restart.add_argument(
        "--force", action="store_true", help="restart a replica even when no other one answers (an outage)"
    )
    return p


def main(argv: list[str]) -> int:
    args = parser().parse_args(argv)
    check_target(args, "inference restart")
    return run_async(_restart(args))


async def _restart(args: argparse.Namespace) -> int:
    from steps.inference.restart import rolling_restart
    from wizard.cli.connect import connected_hosts
    from wizard.engine.state import StateStore
    from wizard.engine.step import ClusterView

    tag = "[simulated] " if args.demo else ""

    def say(line: str) -> None:
        sys.stdout.write(f"{tag}{line}\n")
        sys.stdout.flush()

    async with connected_hosts(args) as (answers, executors, state_dir):
        store = StateStore(state_dir)
        view = ClusterView(answers, {h.name: store.load_facts(h.name) for h in answers.hosts})
        try:
            done = await rolling_restart(view, executors, replica=args.replica, force=args.force, say=say)
        except ValueError as exc:
            sys.stderr.write(f"roce-wizard inference restart: {exc}\n")
            return EXIT_USAGE
    for item in done:
        say(f"{'ok  ' if item.ok else 'FAIL'} replica {item.replica} (head {item.head}): {item.detail}")
    return EXIT_OK if done and all(item.ok for item in done) else EXIT_FAILED
