"""`roce-wizard bwtest`: per-rail and all-pairs RDMA bandwidth, latency, incast, cross-rail and NCCL, with the
consistency lint; results saved with the state, optionally as a self-contained HTML report."""

from __future__ import annotations

import argparse
import gc
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
    fleet = p.add_argument_group("fleet validation (switched fabrics of any size)")
    fleet.add_argument("--quick", action="store_true", help="every host's every rail against a neighbour on its own "
                       "leaves and a host on other leaves, plus a cross-rail canary per SU, in at most 7 rounds of "
                       "disjoint pairs for any host count; then the suspects (no sweeps, latency, NCCL)")  # fmt: skip
    fleet.add_argument("--budget", type=duration_arg, metavar="DURATION", help="stop cleanly before a round that would "
                       "not fit in this much fabric time (15m, 900s, 1h), most informative rounds first; the report "
                       "says what was covered and what was not")  # fmt: skip
    fleet.add_argument("--suspects", action="store_true", help="re-test only the last run's suspects against "
                       "known-good peers, and say which are confirmed and which cleared")  # fmt: skip
    fleet.add_argument("--compare", nargs="?", const="", metavar="RUN", help="name the host ports slower than in an "
                       "earlier run (default: the one before this; RUN: a saved run's name or a part of it, such as a "
                       "date), by validation.regression_pct (default 5 %%)")  # fmt: skip
    fleet.add_argument("--history", action="store_true", help="list the saved runs and exit (no host is contacted)")
    return p


def duration_arg(text: str) -> float:
    """Seconds from `90`, `90s`, `15m`, `1h`, `1h30m`."""
    import re

    match = re.fullmatch(r"\s*(?:(\d+(?:\.\d+)?)h)?\s*(?:(\d+(?:\.\d+)?)m)?\s*(?:(\d+(?:\.\d+)?)s?)?\s*", text)
    if not text.strip() or match is None or not any(match.groups()):
        raise argparse.ArgumentTypeError(f"{text!r} is not a duration (15m, 900s, 1h30m)")
    hours, minutes, seconds = (float(g) if g else 0.0 for g in match.groups())
    total = hours * 3600 + minutes * 60 + seconds
    if total <= 0:
        raise argparse.ArgumentTypeError(f"{text!r}: a budget must be longer than 0 s")
    return total


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
    fleet_options(args, options)
    if args.history:
        return show_history(args)
    return run_async(_bwtest(args, options))


def fleet_options(args: argparse.Namespace, options: Any) -> None:
    """--quick / --budget / --suspects: the rounds come from wizard/validate/fleet_run.py; nothing else runs."""
    if (args.quick or args.suspects) and (args.incast or args.cross_rail):
        raise UsageError("--quick and --suspects replace the pair tests: not with --incast or --cross-rail")
    if args.quick and args.suspects:
        raise UsageError("--suspects re-tests the last run's suspects; run --quick first, then --suspects")
    options.quick = args.quick
    options.budget_s = args.budget
    if args.quick or args.suspects:
        options.sweep = options.latency = options.nccl = False
    elif args.budget is not None:
        options.sweep = options.latency = False  # the budget orders the all-pairs rounds; sweeps have no budget


def show_history(args: argparse.Namespace) -> int:
    from wizard.validate.history import history_lines

    lines = history_lines(state_dir_of(args))
    print("\n".join(lines) if lines else f"no saved run in {state_dir_of(args) / 'validation'}")
    return EXIT_OK


def state_dir_of(args: argparse.Namespace) -> Any:
    from wizard.answers.model import load_answers
    from wizard.cli.options import answers_path
    from wizard.paths import default_state_dir

    if args.state_dir:
        return args.state_dir
    answers = load_answers(answers_path(args))
    return default_state_dir(answers.cluster.name, demo=args.demo)


async def _bwtest(args: argparse.Namespace, options: Any) -> int:
    from wizard.validate import store
    from wizard.validate.html_report import render
    from wizard.validate.run import Validation

    async with connected_hosts(args) as (answers, executors, state_dir):
        if args.suspects:
            options.retest = last_suspects(state_dir)
        if args.compare is not None:
            from wizard.validate.history import earlier_rates, find_run

            earlier = find_run(state_dir, args.compare or None)  # before any test runs: a wrong RUN costs nothing
            rates = earlier_rates(earlier)
        say = progress_printer(args.demo, fleet=bool(args.quick or args.suspects or args.budget is not None))
        report = await Validation(answers, executors, simulated=args.demo, options=options, on_event=say).run()
    # The hosts' facts and connections are garbage now, held in reference cycles: freed before the earlier run is
    # read and this one is saved (megabytes each at a thousand hosts), not after.
    gc.collect()
    if args.compare is not None:  # before the run is saved, so that it is written once (22 MB at 1,024 hosts)
        from wizard.validate.fleet_model import FleetSummary
        from wizard.validate.history import compare

        found = compare(rates, report, earlier.stem, answers.validation.regression_pct)
        report.fleet = report.fleet or FleetSummary()
        report.fleet.regressions, report.fleet.compared_with = found, earlier.stem
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


def last_suspects(state_dir: Any) -> list[Any]:
    """The suspects of the latest run that had any (a re-test's cleared ones are not tested again)."""
    from wizard.validate.history import load, runs

    for path in reversed(runs(state_dir)):
        report = load(path)
        if report.fleet is not None and report.fleet.suspects:
            left = [s for s in report.fleet.suspects if s.status != "cleared"]
            if left:
                return left
    raise UsageError(f"--suspects: no saved run with suspects in {state_dir}/validation (run bwtest --quick first)")


def progress_printer(simulated: bool, fleet: bool = False) -> Callable[[str, dict[str, Any]], None]:
    """Validation events as progress lines on stderr (bwtest and doctor). On a fleet (``fleet``: --quick, --budget,
    --suspects) a flow that passed is counted, not printed: 8,000 lines a round would bury the slow ones."""
    tag = "[simulated] " if simulated else ""
    tally = {"pass": 0, "other": 0}

    def flush_tally() -> None:
        if tally["pass"] or tally["other"]:
            sys.stderr.write(f"{tag}   {tally['pass']} flows at full rate, {tally['other']} slow or failed\n")
        tally["pass"] = tally["other"] = 0

    def say(kind: str, data: dict[str, Any]) -> None:
        if kind == "phase":
            flush_tally()
            sys.stderr.write(f"{tag}== {data['text']}\n")
        elif kind == "rail":
            x = data["result"]
            if fleet:
                tally["pass" if x.status == "pass" else "other"] += 1
                if x.status == "pass":
                    return
            rate = f"{x.gbps:.2f} Gb/s" if x.gbps is not None else "no result"
            sys.stderr.write(f"{tag}   {x.mode:8} {x.label}: {rate} {x.status.upper()}\n")
        elif kind == "counters":
            flush_tally()
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
    aggregates = report.aggregate
    if report.fleet is not None:  # a fleet: the slow pairs only (the suspects below say what they mean)
        aggregates = [a for a in aggregates if a.status != "pass"]
        print(f"  {len(report.aggregate) - len(aggregates)} of {len(report.aggregate)} host pairs at full rate")
    for a in aggregates[: 20 if report.fleet is not None else None]:
        print(f"  {a.status.upper():4}  aggregate {a.hosts[0]}<->{a.hosts[1]}: {a.gbps:.1f} of {a.expected_gbps:.0f}"
              " Gb/s")  # fmt: skip
    from wizard.validate.incast import summary_lines

    for line in summary_lines(report.incast):
        print(f"  {line}")
    from wizard.validate.fleet_text import summary_lines as fleet_lines

    for line in fleet_lines(report.fleet):
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
    from wizard.validate.fleet_text import MAX_FLEET_CAUSES

    shown = report.causes[:MAX_FLEET_CAUSES] if report.fleet is not None else report.causes
    for n, cause in enumerate(shown, 1):
        print(f"  cause {n}: {cause}")
    if len(shown) < len(report.causes):
        print(f"  ... {len(report.causes) - len(shown)} more causes in the saved report (--json, --report FILE)")


def incast_line(x: Any) -> str:
    """One incast round on one rail: K -> receiver (switch port), total of line, pauses, drops, CNPs."""
    sw = f" ({x.receiver_switch_port})" if x.receiver_switch_port else ""
    total = f"{x.total_gbps:.1f}" if x.total_gbps is not None else "-"
    line = f" of {x.line_gbps:.0f}" if x.line_gbps else ""
    return (f"rail {x.rail} round {x.round}: {len(x.senders)} -> {x.receiver.host} {x.receiver.netdev}{sw}: {total}"
            f"{line} Gb/s, pauses {x.pauses}, drops {x.drops}, CNPs {x.cnps}")  # fmt: skip
