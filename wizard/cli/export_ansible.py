"""`roce-wizard export ansible`: the plan of every chosen stage as an Ansible project (inventory, roles, asserts)."""

from __future__ import annotations

import argparse
import sys

from wizard.cli.options import (
    add_stage_options,
    add_target_options,
    answers_path,
    check_target,
    command_parser,
    path_arg,
    run_async,
    select_stages,
)


def parser() -> argparse.ArgumentParser:
    """The command's options (also read by tests/engine/test_cli_options.py)."""
    p = command_parser(
        "export ansible",
        "Plan every chosen stage (reading the hosts, changing nothing) and write it as an Ansible project.",
    )
    add_target_options(p)
    add_stage_options(p, only="comma-separated stages (discovery always runs: its facts go into host_vars)",
                      from_stage=False)  # fmt: skip
    p.add_argument(
        "-o", "--out", type=path_arg, required=True, metavar="DIR", help="directory to write the project into"
    )
    return p


def main(argv: list[str]) -> int:
    """`roce-wizard export ansible ARGS` (``argv`` is what follows `ansible`)."""
    args = parser().parse_args(argv)
    check_target(args, "export ansible")
    stages = select_stages(args.only, None)
    if "discovery" not in stages:
        stages.insert(0, "discovery")
    from wizard.answers.model import load_answers

    return run_async(_export(args, load_answers(answers_path(args)), stages))


async def _export(args: argparse.Namespace, answers, stages: list[str]) -> int:  # type: ignore[no-untyped-def]
    from wizard.engine.plan_export import planning_failures
    from wizard.engine.session import session_for_args
    from wizard.export.ansible_project import write_project

    async with session_for_args(args, answers) as session:
        outcomes = await session.runner.plan_all(stages)
        view = session.runner.view()
        failures = planning_failures(session.store, outcomes)
    roles = write_project(args.out, answers, view, outcomes, simulated=args.demo, failures=failures)
    tag = " (SIMULATED cluster)" if args.demo else ""
    sys.stderr.write(
        f"roce-wizard: Ansible project{tag} written to {args.out}: roles {', '.join(roles) or 'none'}; "
        f"run: ansible-playbook -i {args.out}/inventory.yml {args.out}/site.yml\n"
    )
    for host, why in sorted(failures.items()):
        sys.stderr.write(f"roce-wizard: {host}: not planned: {why}\n")
    return 1 if failures else 0
