"""`roce-wizard report`: the whole run from a state directory, as a self-contained HTML page and/or JSON."""

from __future__ import annotations

import argparse
import sys
from typing import TYPE_CHECKING, Any

from wizard.cli.options import add_json_option, add_target_options, check_target, command_parser, path_arg
from wizard.errors import EXIT_OK, EXIT_USAGE

if TYPE_CHECKING:
    from pathlib import Path

    from wizard.report.model import RunReport


def parser() -> argparse.ArgumentParser:
    """The command's options (also read by tests/engine/test_cli_options.py)."""
    p = command_parser("report", "Every stage on every host, the checks with evidence and fix, timings, and the "
                       "bandwidth/latency/NCCL results of the latest bwtest, from a state directory; self-contained "
                       "HTML (prints well) or JSON. Secrets are redacted.")  # fmt: skip
    add_target_options(
        p,
        faults=False,
        answers="find the state directory from this answers file's cluster name",
        demo="the SIMULATED cluster's state directory (with --profile: that profile's)",
        state_dir="the run's state directory (default: the one for --answers/--demo)",
    )
    p.add_argument("--html", type=path_arg, metavar="FILE", help="write the report as one HTML file")
    add_json_option(p, "print the report as one JSON document on stdout")
    return p


def main(argv: list[str]) -> int:
    args = parser().parse_args(argv)
    check_target(args, "report", required=False)
    from wizard.cli.status import find_state_dir

    state_dir = find_state_dir(args.state_dir, args.answers, demo=args.demo, profile=args.profile)
    if state_dir is None:
        return EXIT_USAGE
    from wizard.report.collect import collect

    report = collect(state_dir)
    if args.html:
        write_html(report, args.html)
        sys.stderr.write(f"roce-wizard: report written to {args.html}\n")
    if args.json:
        import json

        print(json.dumps(to_json(report), indent=2))
    else:
        print_summary(report)
        if not args.html:
            sys.stderr.write("roce-wizard report: add --html FILE for the full report (or --json)\n")
    return EXIT_OK


def to_json(report: RunReport) -> dict[str, Any]:
    """The report as one JSON document: the same content as the HTML; the bandwidth test as bwtest --json has it."""
    from wizard.validate import store

    data = report.model_dump(mode="json")
    if report.validation is not None:
        data["validation"] = store.to_json(report.validation)
    return data


def write_html(report: RunReport, path: Path) -> Path:
    """Write the page (mode 0600 like the state it comes from: it names hosts, addresses and ports)."""
    from wizard.engine.state import atomic_write
    from wizard.report.render import render

    atomic_write(path, render(report), durable=False)
    return path


def print_summary(report: RunReport) -> None:
    from wizard.report.render import status_rank

    tag = "SIMULATED " if report.simulated else ""
    print(f"{tag}run report of {report.cluster}: {report.verdict.upper()}")
    for total in report.stages:
        counts = ", ".join(f"{n} {k}" for k, n in sorted(total.counts.items(), key=status_rank))
        print(f"  {total.stage:<10} {counts}")
    for host in report.hosts:
        for row in host.stages:
            if row.status == "failed":
                print(f"  FAILED {host.host} {row.stage}: {row.reason}")
    v = report.validation
    print(f"  bandwidth test: {v.verdict.upper()}" if v is not None else f"  {report.validation_note}")
