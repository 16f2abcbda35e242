"""``roce-wizard`` without a subcommand: the terminal wizard, or with ``--answers``/``--demo`` and no terminal (or
any of ``--yes --json --only --from --verbose``) every chosen stage headless, through the same runner."""

from __future__ import annotations

import argparse
import sys

from wizard import __version__
from wizard.cli.options import (
    CommandParser,
    ListingFormatter,
    add_json_option,
    add_stage_options,
    add_target_options,
    answers_path,
    check_target,
    select_stages,
)
from wizard.engine.stage_order import STAGE_IDS
from wizard.errors import EXIT_FAILED, UsageError


def parser() -> argparse.ArgumentParser:
    from wizard.cli.main import SUBCOMMANDS

    width = max(len(name) for name in SUBCOMMANDS)
    p = CommandParser(
        prog="roce-wizard",
        description="From bare GPU servers to a verified RoCE fabric. Without --answers (and without --demo) "
        "it opens the terminal wizard; roce-wizard tui --answers FILE opens the wizard on an answers file.",
        epilog="other commands (each has --help):\n"
        + "\n".join(f"  {name:<{width}}  {summary}" for name, (_, summary) in SUBCOMMANDS.items()),
        formatter_class=ListingFormatter,
    )
    add_target_options(p, answers="answers file; runs every stage headless (tui --answers FILE opens it in the wizard)")
    add_stage_options(p, only="comma-separated stages to run (" + ",".join(STAGE_IDS) + ")")
    p.add_argument("--yes", action="store_true", help="allow changes marked disruptive or reboot")
    add_json_option(p, "one JSON event per line on stdout; progress on stderr")
    p.add_argument("--reset", action="store_true", help="(--demo) start from bare simulated hosts, forget progress")
    p.add_argument("--verbose", "-v", action="store_true", help="also print every command's output")
    p.add_argument("--version", action="version", version=f"roce-wizard {__version__}")
    return p


def main(argv: list[str]) -> int:
    args = parser().parse_args(argv)
    headless_only = args.json or args.yes or args.only or args.from_stage or args.verbose
    if args.answers is None and not headless_only and sys.stdin.isatty() and sys.stdout.isatty():
        from wizard.cli.tui import open_wizard

        check_target(args, "the wizard", required=False)
        return open_wizard(args)
    if args.answers is None and not args.demo:
        raise UsageError("no terminal for the wizard: give --answers FILE to run headless (or --demo)")
    # Usage errors first: they need nothing but the arguments, and must not wait for pydantic to load.
    check_target(args, "the wizard")
    stages = select_stages(args.only, args.from_stage)
    if args.reset and not args.demo:
        raise UsageError("--reset only applies to the simulated cluster (--demo)")
    from wizard.answers.model import load_answers

    answers = load_answers(answers_path(args))
    import asyncio  # not at the top: --help and usage errors must stay cheap (bench/startup.py)

    return asyncio.run(_headless(args, answers, stages))


async def _headless(args: argparse.Namespace, answers: object, stages: list[str]) -> int:
    from steps import all_steps
    from wizard.cli.reporters import HumanReporter, JsonLinesReporter
    from wizard.engine.events import EventBus
    from wizard.engine.runner import RunOptions
    from wizard.engine.session import production_targets, simulated_targets, sudo_password

    bus = EventBus()
    bus.subscribe(HumanReporter(simulated=args.demo, verbose=args.verbose))
    if args.json:
        bus.subscribe(JsonLinesReporter())
    password = sudo_password(answers, interactive=True)  # type: ignore[arg-type]
    options = RunOptions(
        stages=stages,
        allow_disruptive=args.yes,
        demo=args.demo,
        answers_path=str(args.answers) if args.answers else None,
        reboot_timeout_s=60.0 if args.demo else 900.0,
    )
    from wizard.engine.apply import guard_for
    from wizard.engine.session import lab_time_scale
    from wizard.engine.state import writing_state
    from wizard.engine.state_lock import lock_state_dir

    options.guard = guard_for(answers, lab_time_scale() if args.demo else 1.0)  # type: ignore[arg-type]
    if args.demo:
        from wizard.engine.session import check_faults, demo_state_dir

        check_faults(answers, args.fault)  # type: ignore[arg-type]
        # One writer per state directory (wizard/engine/state_lock.py), taken before --reset wipes it: a second wizard
        # must not remove the progress of one that is running.
        args.state_dir = demo_state_dir(answers, args.state_dir, reset=False)  # type: ignore[arg-type]
        with writing_state(args.state_dir):  # a full or read-only directory: one line, exit 2
            lock_state_dir(args.state_dir)
            if args.reset:
                demo_state_dir(answers, args.state_dir, reset=True)  # type: ignore[arg-type]
                lock_state_dir(args.state_dir)  # the fresh directory (the old lock file went with it)
        sys.stderr.write(
            "[simulated] SIMULATED CLUSTER: every host below is simulated on 127.0.0.1; "
            "addresses in the answers file are never contacted.\n"
        )
        async with simulated_targets(
            answers,
            args.fault,
            password,
            args.state_dir,
            args.profile,  # type: ignore[arg-type]
            args.switch_os,
        ) as targets:  # type: ignore[arg-type]
            return await _run_session(answers, all_steps(), targets, args, bus, options, password)
    from wizard.paths import default_state_dir

    state_dir = args.state_dir or default_state_dir(answers.cluster.name)  # type: ignore[attr-defined]
    with writing_state(state_dir):
        lock_state_dir(state_dir)
    targets = production_targets(answers, password)  # type: ignore[arg-type]
    return await _run_session(answers, all_steps(), targets, args, bus, options, password)


async def _run_session(answers, steps, targets, args, bus, options, password) -> int:  # type: ignore[no-untyped-def]
    import asyncio
    import signal

    from wizard.engine.session import open_session

    session = open_session(answers, steps, targets, args.state_dir, bus, simulated=args.demo, password=password)
    runner = session.runner
    loop = asyncio.get_running_loop()
    task = asyncio.current_task()

    def stop(name: str) -> None:
        # The first signal stops the run (remote commands get SIGTERM, hosts are recorded as interrupted); a second
        # one while that cleanup runs changes nothing (the task is already cancelled).
        if runner.stop_reason is None and task is not None:
            runner.stop_reason = name
            task.cancel()

    for sig in (signal.SIGINT, signal.SIGTERM):
        loop.add_signal_handler(sig, stop, sig.name)
    try:
        return await runner.run(options)
    except asyncio.CancelledError:
        from wizard.engine.runner import INTERRUPT_EXIT

        if task is not None:
            task.uncancel()  # handled here: the cleanup below must not look cancelled to asyncio.timeout()
        stopped = runner.interruption
        what = stopped.summary() if stopped else (runner.stop_reason or "a cancel")
        sys.stderr.write(
            f"roce-wizard: interrupted by {what}; progress is saved - run the same command again to resume\n"
        )
        return INTERRUPT_EXIT.get(runner.stop_reason or "", EXIT_FAILED)
    finally:
        for sig in (signal.SIGINT, signal.SIGTERM):
            loop.remove_signal_handler(sig)
        await session.close()
