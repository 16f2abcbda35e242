"""`roce-wizard export ansible`: the plan of every chosen stage as an Ansible project (inventory, roles, asserts)."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path


def export_ansible_cmd(argv: list[str]) -> int:
    """Entry point for `roce-wizard export ansible ARGS` (``argv`` is what follows `ansible`)."""
    from wizard.cli.main import _Parser

    p = _Parser(
        prog="roce-wizard export ansible",
        description="Plan every chosen stage (reading the hosts, changing nothing) and write it as an Ansible project.",
    )
    p.add_argument("--answers", type=Path, help="answers file (default with --demo: the reference example)")
    p.add_argument("--demo", action="store_true", help="plan against the SIMULATED cluster on 127.0.0.1")
    p.add_argument("--state-dir", type=Path)
    p.add_argument("--only", help="comma-separated stages (discovery always runs: its facts go into host_vars)")
    p.add_argument("-o", "--out", type=Path, required=True, help="directory to write the project into")
    p.add_argument("--fault", action="append", default=[], help=argparse.SUPPRESS)
    args = p.parse_args(argv)
    from wizard.answers.model import load_answers
    from wizard.answers.profiles import demo_answers
    from wizard.cli.main import select_stages
    from wizard.errors import UsageError

    if args.answers is None and not args.demo:
        raise UsageError("export ansible needs --answers FILE (or --demo)")
    answers = load_answers(args.answers or demo_answers("reference"))
    stages = select_stages(args.only, None)
    if "discovery" not in stages:
        stages.insert(0, "discovery")
    import asyncio

    return asyncio.run(_export(args, answers, stages))


async def _export(args: argparse.Namespace, answers, stages: list[str]) -> int:  # type: ignore[no-untyped-def]
    from wizard.cli.commands import _failures
    from wizard.engine.session import session_for_args
    from wizard.export.ansible_project import write_project

    async with session_for_args(args, answers) as session:
        outcomes = await session.runner.plan_all(stages)
        view = session.runner.view()
        failures = {h: r for o in outcomes for h, r in _failures(session, o).items()}
    roles = write_project(args.out, answers, view, outcomes, simulated=args.demo, failures=failures)
    tag = " (SIMULATED cluster)" if args.demo else ""
    sys.stderr.write(
        f"roce-wizard: Ansible project{tag} written to {args.out}: roles {', '.join(roles) or 'none'}; "
        f"run: ansible-playbook -i {args.out}/inventory.yml {args.out}/site.yml\n"
    )
    for host, why in sorted(failures.items()):
        sys.stderr.write(f"roce-wizard: {host}: not planned: {why}\n")
    return 1 if failures else 0
