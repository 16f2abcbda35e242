"""`roce-wizard doctor`: walk the troubleshooting trees on every host; each check with its evidence and the fix,
most likely cause first."""

from __future__ import annotations

import argparse
import json
import sys
from typing import Any

from wizard.cli.bwtest import TARGET_HELP, progress_printer
from wizard.cli.connect import connected_hosts
from wizard.cli.options import add_json_option, add_target_options, check_target, command_parser, run_async
from wizard.errors import EXIT_FAILED, EXIT_OK


def parser() -> argparse.ArgumentParser:
    """The command's options (also read by tests/engine/test_cli_options.py)."""
    p = command_parser("doctor", "Walk the troubleshooting trees on every host: each check, its evidence and the fix, "
                       "most likely cause first.")  # fmt: skip
    add_target_options(p, **TARGET_HELP)
    add_json_option(p, "print the findings as one JSON document on stdout")
    return p


def main(argv: list[str]) -> int:
    args = parser().parse_args(argv)
    check_target(args, "doctor")
    return run_async(_doctor(args))


async def _doctor(args: argparse.Namespace) -> int:
    from wizard.validate import store
    from wizard.validate.doctor import diagnose

    say = progress_printer(args.demo)
    async with connected_hosts(args) as (answers, executors, state_dir):
        findings = await diagnose(answers, executors, store.load_latest(state_dir), on_event=say)
    if args.json:
        print(json.dumps([f.model_dump(mode="json") for f in findings], indent=2))
    else:
        print_findings(findings, simulated=args.demo)
    return EXIT_FAILED if any(f.status == "fail" for f in findings) else EXIT_OK


def print_findings(findings: list[Any], *, simulated: bool, stream: Any = None) -> None:
    """The doctor's findings as lines, failures first, each failing or warning one with its fix."""
    out = stream or sys.stdout
    tag = "SIMULATED " if simulated else ""
    failed = [f for f in findings if f.status == "fail"]
    out.write(f"{tag}doctor: {len(failed)} failing check(s), most likely cause first\n")
    for f in findings:
        where = f"{f.host}: " if f.host else ""
        out.write(f"  {f.status.upper():4}  [{f.tree}] {where}{f.title}: {f.evidence}\n")
        if f.fix and f.status in ("fail", "warn"):
            out.write(f"        fix: {f.fix}\n")
