"""`roce-wizard bwtest` and `roce-wizard doctor`: validation and troubleshooting, headless."""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

from wizard.errors import EXIT_FAILED, EXIT_OK, UsageError

PREP_STAGES = ["discovery", "ofed", "network", "roce"]


def _common(p: argparse.ArgumentParser) -> None:
    p.add_argument("--answers", type=Path, help="answers file (default with --demo: the reference example)")
    p.add_argument("--demo", action="store_true", help="test the SIMULATED cluster on 127.0.0.1")
    p.add_argument("--state-dir", type=Path, help="where results are saved (default: the cluster's state dir)")
    p.add_argument("--fault", action="append", default=[], metavar="HOST:KIND[=ARG]", help="(--demo) inject a fault")
    from wizard.answers.profiles import add_profile_option

    add_profile_option(p)
    p.add_argument("--json", action="store_true", help="print the results as one JSON document on stdout")


def bwtest_cmd(argv: list[str]) -> int:
    from wizard.cli.main import _Parser

    p = _Parser(prog="roce-wizard bwtest", description="Per-rail and all-pairs RDMA bandwidth, latency, NCCL and "
                "the consistency lint; results saved with the state.")  # fmt: skip
    _common(p)
    p.add_argument("--report", type=Path, metavar="FILE.html", help="write a self-contained HTML report")
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
                   "every rail j != i of another (switched fabrics), instead of the pair tests and NCCL")  # fmt: skip
    p.add_argument("--pair", metavar="A,B", help="(--cross-rail) client and server host (default: the first two)")
    args = p.parse_args(argv)
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
    return asyncio.run(_bwtest(args, options))


async def _bwtest(args: argparse.Namespace, options: Any) -> int:
    from wizard.validate import store
    from wizard.validate.html_report import render
    from wizard.validate.run import Validation

    async with _executors(args) as (answers, executors, state_dir):
        say = _progress(args.demo)
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


def doctor_cmd(argv: list[str]) -> int:
    from wizard.cli.main import _Parser

    p = _Parser(prog="roce-wizard doctor", description="Walk the troubleshooting trees on every host: each check, "
                "its evidence and the fix, most likely cause first.")  # fmt: skip
    _common(p)
    args = p.parse_args(argv)
    return asyncio.run(_doctor(args))


async def _doctor(args: argparse.Namespace) -> int:
    from wizard.validate import store
    from wizard.validate.doctor import diagnose

    async with _executors(args) as (answers, executors, state_dir):
        findings = await diagnose(answers, executors, store.load_latest(state_dir), on_event=_progress(args.demo))
    if args.json:
        print(json.dumps([f.model_dump(mode="json") for f in findings], indent=2))
    else:
        print_findings(findings, simulated=args.demo)
    return EXIT_FAILED if any(f.status == "fail" for f in findings) else EXIT_OK


@asynccontextmanager
async def _executors(args: argparse.Namespace) -> AsyncIterator[tuple[Any, dict[str, Any], Path]]:
    """Answers, one connected executor per host (simulated with --demo) and the state directory."""
    from wizard.answers.model import load_answers
    from wizard.engine.session import (
        check_profile,
        demo_answers,
        demo_state_dir,
        production_targets,
        simulated_targets,
        sudo_password,
    )
    from wizard.paths import default_state_dir, example_answers

    if args.answers is None and not args.demo:
        raise UsageError("needs --answers FILE (or --demo)")
    if args.fault and not args.demo:
        raise UsageError("--fault only applies to the simulated cluster (--demo)")
    profile = check_profile(getattr(args, "profile", None), args.demo)
    answers = load_answers(args.answers or (demo_answers(profile) if args.demo else example_answers()))
    password = sudo_password(answers, interactive=True)
    if args.demo:
        state_dir = demo_state_dir(answers, args.state_dir, reset=False)
        sys.stderr.write("[simulated] SIMULATED CLUSTER on 127.0.0.1; results are labelled simulated.\n")
        async with simulated_targets(answers, args.fault, password, state_dir, profile) as targets:
            await _prepare_demo(answers, targets, state_dir, password)
            async with _open(answers, targets, state_dir, password, simulated=True) as executors:
                yield answers, executors, state_dir
        return
    state_dir = args.state_dir or default_state_dir(answers.cluster.name, demo=False)
    async with _open(answers, production_targets(answers, password), state_dir, password, simulated=False) as ex:
        yield answers, ex, state_dir


@asynccontextmanager
async def _open(answers: Any, targets: Any, state_dir: Path, password: str | None, *, simulated: bool):  # type: ignore[no-untyped-def]
    from steps import all_steps
    from wizard.engine.events import EventBus
    from wizard.engine.session import open_session

    session = open_session(answers, all_steps(), targets, state_dir, EventBus(), simulated=simulated, password=password)
    try:
        yield dict(session.executors)
    finally:
        await session.close()


async def _prepare_demo(answers: Any, targets: Any, state_dir: Path, password: str | None) -> None:
    """The simulated hosts start bare: bring them through stages discovery..roce first unless that is done
    (a fault injected into hosts configured earlier meets the saved configuration, as on real hosts)."""
    from steps import all_steps
    from wizard.cli.reporters import HumanReporter
    from wizard.engine.events import EventBus
    from wizard.engine.runner import RunOptions
    from wizard.engine.session import open_session
    from wizard.engine.state import StateStore

    store = StateStore(state_dir)
    done = all(store.host(h.name).stage(s).status == "done" for h in answers.hosts for s in PREP_STAGES)
    if done:
        return
    sys.stderr.write(f"[simulated] preparing the simulated hosts first: stages {', '.join(PREP_STAGES)}\n")
    bus = EventBus()
    bus.subscribe(HumanReporter(simulated=True))
    session = open_session(answers, all_steps(), targets, state_dir, bus, simulated=True, password=password)
    try:
        code = await session.runner.run(RunOptions(stages=PREP_STAGES, allow_disruptive=True, demo=True))
    finally:
        await session.close()
    if code:
        sys.stderr.write("[simulated] preparation did not verify every host; testing what is there\n")


def _progress(simulated: bool) -> Callable[[str, dict[str, Any]], None]:
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
