"""`roce-wizard bwtest`: per-rail and all-pairs RDMA bandwidth, latency, incast, cross-rail and NCCL, with the
consistency lint; results saved with the state, optionally as a self-contained HTML report."""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Callable
from typing import Any

from wizard.cli.connect import connected_hosts
from wizard.cli.options import (
    add_json_option,
    add_target_options,
    check_target,
    command_parser,
    path_arg,
    run_async,
)
from wizard.errors import EXIT_FAILED, EXIT_OK, UsageError

TARGET_HELP = {
    "demo": "test the SIMULATED cluster on 127.0.0.1",
    "state_dir": "where results are saved (default: the cluster's state dir)",
}


def parser() -> argparse.ArgumentParser:
    """The command's options (also read by tests/engine/test_cli_options.py)."""
    p = command_parser("bwtest", "Per-rail and all-pairs RDMA bandwidth, latency, NCCL and the consistency lint; "
                       "results saved with the state.")  # fmt: skip
    add_target_options(p, **TARGET_HELP)
    add_json_option(p, "print the results as one JSON document on stdout")
    p.add_argument("--report", type=path_arg, metavar="FILE.html", help="write a self-contained HTML report")
    p.add_argument("--seconds", type=float, default=3.0, help="duration of the all-rails-at-once runs (default 3)")
    p.add_argument("--no-sweep", action="store_true", help="skip the per-rail message-size sweeps")
    p.add_argument("--no-nccl", action="store_true", help="skip the NCCL run")
    p.add_argument("--incast", action="store_true", help="N:1 incast rounds on every rail at once (PFC pauses, no "
                   "drops, ECN CNPs) instead of the pair tests and NCCL; the lint and counters stay")  # fmt: skip
    p.add_argument("--fanin", type=int, metavar="K", help="(--incast) senders per receiver (default: all other "
                   "hosts, at most 15)")  # fmt: skip
    p.add_argument("--incast-rounds", type=int, metavar="R", help="(--incast) rounds, the receiver rotating "
                   "(default: every host receives once)")  # fmt: skip
    p.add_argument("--cross-rail", action="store_true", help="rail x rail through the spine: rail i of one host to "
                   "every rail j != i of another (switched fabrics), instead of the pair tests and NCCL; with --incast "
                   "the incast rounds run again with every sender on the next rail, so each flow crosses the uplinks "
                   "and the spine")  # fmt: skip
    p.add_argument("--pair", metavar="A,B", help="(--cross-rail) client and server host (default: the first two)")
    return p


def main(argv: list[str]) -> int:
    args = parser().parse_args(argv)
    check_target(args, "bwtest")
    from wizard.validate.run import Options

    options = Options(sweep=not args.no_sweep, together_s=args.seconds, nccl=not args.no_nccl)
    if args.incast:
        from wizard.validate.incast import plan_from_args

        options.incast = plan_from_args(args)  # a usage error before any host is touched where N:1 makes no sense
        options.sweep = options.latency = options.nccl = False
    elif args.fanin is not None or args.incast_rounds is not None:
        raise UsageError("--fanin and --incast-rounds only apply with --incast")
    if args.cross_rail:
        from wizard.validate.cross_rail import plan

        options.cross_rail = plan(args.pair, args.seconds)
        options.sweep = options.latency = options.nccl = False
    elif args.pair is not None:
        raise UsageError("--pair only applies with --cross-rail")
    return run_async(_bwtest(args, options))


async def _bwtest(args: argparse.Namespace, options: Any) -> int:
    from wizard.validate import store
    from wizard.validate.html_report import render
    from wizard.validate.run import Validation

    async with connected_hosts(args) as (answers, executors, state_dir):
        say = progress_printer(args.demo)
        report = await Validation(answers, executors, simulated=args.demo, options=options, on_event=say).run()
    saved = store.save(state_dir, report)
    if args.report:
        args.report.write_text(render(report), encoding="utf-8")
        sys.stderr.write(f"roce-wizard: HTML report written to {args.report}\n")
    if args.json:
        print(json.dumps(store.to_json(report), indent=2))
    else:
        print_summary(report)
    sys.stderr.write(f"roce-wizard: results saved in {saved}\n")
    return EXIT_OK if report.verdict == "pass" else EXIT_FAILED


def progress_printer(simulated: bool) -> Callable[[str, dict[str, Any]], None]:
    """Validation events as progress lines on stderr (bwtest and doctor)."""
    tag = "[simulated] " if simulated else ""

    def say(kind: str, data: dict[str, Any]) -> None:
        if kind == "phase":
            sys.stderr.write(f"{tag}== {data['text']}\n")
        elif kind == "rail":
            x = data["result"]
            rate = f"{x.gbps:.2f} Gb/s" if x.gbps is not None else "no result"
            sys.stderr.write(f"{tag}   {x.mode:8} {x.label}: {rate} {x.status.upper()}\n")
        elif kind == "incast":
            x = data["round"]
            sys.stderr.write(f"{tag}   incast   {incast_line(x)}\n")
        elif kind == "check":
            f = data["finding"]
            sys.stderr.write(f"{tag}   {f.status.upper():5} {f.tree}: {f.title}\n")

    return say


def print_summary(report: Any) -> None:
    tag = "SIMULATED " if report.simulated else ""
    print(f"{tag}fabric validation of {report.cluster}: {report.verdict.upper()}")
    for x in report.rails:
        ratio = f" ({x.ratio:.0%} of {x.expected_gbps:.0f})" if x.ratio is not None else ""
        rate = f"{x.gbps:.2f} Gb/s{ratio}" if x.gbps is not None else "no result"
        print(f"  {x.status.upper():4}  {x.label}: {rate}")
    for a in report.aggregate:
        print(f"  {a.status.upper():4}  aggregate {a.hosts[0]}<->{a.hosts[1]}: {a.gbps:.1f} of {a.expected_gbps:.0f}"
              " Gb/s")  # fmt: skip
    from wizard.validate.incast import summary_lines

    for line in summary_lines(report.incast):
        print(f"  {line}")
    from wizard.validate.cross_rail import summary_lines as cross_lines

    for line in cross_lines(report.cross_rail):
        print(f"  {line}")
    for lat in report.latency:
        typical = f"{lat.typical_us:.2f} us" if lat.typical_us is not None else "no result"
        print(f"  {lat.status.upper():4}  latency rail {lat.rail}: typical {typical}")
    bad = [i for i in report.lint if i.status != "pass"]
    print(f"  lint: {len(report.lint) - len(bad)}/{len(report.lint)} pass" + "".join(
        f"\n  {i.status.upper():4}  {i.title}: {i.evidence}" for i in bad))  # fmt: skip
    print(f"  NCCL: {report.nccl.status.upper()} {report.nccl.transport or ''} {report.nccl.reason}".rstrip())
    for n, cause in enumerate(report.causes, 1):
        print(f"  cause {n}: {cause}")


def incast_line(x: Any) -> str:
    """One incast round on one rail: K -> receiver (switch port), total of line, pauses, drops, CNPs."""
    sw = f" ({x.receiver_switch_port})" if x.receiver_switch_port else ""
    total = f"{x.total_gbps:.1f}" if x.total_gbps is not None else "-"
    line = f" of {x.line_gbps:.0f}" if x.line_gbps else ""
    return (f"rail {x.rail} round {x.round}: {len(x.senders)} -> {x.receiver.host} {x.receiver.netdev}{sw}: {total}"
            f"{line} Gb/s, pauses {x.pauses}, drops {x.drops}, CNPs {x.cnps}")  # fmt: skip
