"""The `roce-wizard` command line: headless runs, plan, status, schema, parse, the lab, and the TUI."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence

from wizard import __version__
from wizard.errors import EXIT_FAILED, EXIT_USAGE, AnswersError, StateError, UsageError, WizardError

STAGE_IDS = ("discovery", "ofed", "network", "roce", "gpudirect", "nccl", "inference")
SUBCOMMANDS = (
    "check",
    "plan",
    "status",
    "schema",
    "parse",
    "lab",
    "rollback",
    "bwtest",
    "doctor",
    "switch-config",
    "export",
    "metrics",
    "report",
)


class _Formatter(argparse.HelpFormatter):
    """argparse's formatter, told the width: left to find it, argparse imports shutil, and shutil tries zlib, bz2
    and lzma, which is about a tenth of what `roce-wizard --help` costs (bench/startup.py)."""

    def __init__(self, prog: str, indent_increment: int = 2, max_help_position: int = 24, width: int | None = None):
        super().__init__(prog, indent_increment, max_help_position, width or _terminal_columns() - 2)


def _terminal_columns() -> int:
    """What shutil.get_terminal_size() answers: $COLUMNS, else the terminal on stdout, else 80."""
    import os

    try:
        columns = int(os.environ.get("COLUMNS", "0"))
    except ValueError:
        columns = 0
    if columns <= 0:
        try:
            columns = os.get_terminal_size(sys.__stdout__.fileno()).columns  # type: ignore[union-attr]
        except (AttributeError, ValueError, OSError):
            columns = 0
    return columns or 80


class _Parser(argparse.ArgumentParser):
    def __init__(self, *args: object, **kwargs: object) -> None:
        kwargs.setdefault("formatter_class", _Formatter)
        super().__init__(*args, **kwargs)  # type: ignore[arg-type]

    def error(self, message: str) -> None:  # type: ignore[override]
        raise UsageError(f"{self.prog}: {message}")


def _path(text: str) -> object:
    """argparse's type for paths; pathlib (with urllib and ipaddress behind it) loads only when a path is given."""
    from pathlib import Path

    return Path(text)


def _run_parser() -> argparse.ArgumentParser:
    p = _Parser(
        prog="roce-wizard",
        description="From bare GPU servers to a verified RoCE fabric. Without --answers (and without --demo) "
        "it opens the terminal wizard.",
        epilog="Other commands: roce-wizard {" + ",".join((*SUBCOMMANDS, "import")) + "} --help",
    )
    p.add_argument("--answers", type=_path, help="answers file; runs every stage headless")
    p.add_argument("--demo", action="store_true", help="run against the built-in SIMULATED cluster on 127.0.0.1")
    p.add_argument("--only", help="comma-separated stages to run (" + ",".join(STAGE_IDS) + ")")
    p.add_argument("--from", dest="from_stage", choices=STAGE_IDS, help="start at this stage")
    p.add_argument("--yes", action="store_true", help="allow changes marked disruptive or reboot")
    p.add_argument("--json", action="store_true", help="one JSON event per line on stdout; progress on stderr")
    p.add_argument("--state-dir", type=_path, help="where progress, facts and logs are kept")
    p.add_argument("--fault", action="append", default=[], metavar="HOST:KIND[=ARG]", help="(--demo) inject a fault")
    p.add_argument("--reset", action="store_true", help="(--demo) start from bare simulated hosts, forget progress")
    p.add_argument("--verbose", "-v", action="store_true", help="also print every command's output")
    from wizard.answers.profiles import add_profile_option

    add_profile_option(p)
    p.add_argument("--version", action="version", version=f"roce-wizard {__version__}")
    return p


def select_stages(only: str | None, from_stage: str | None) -> list[str]:
    """The stages a run covers, in the fixed order."""
    if only and from_stage:
        raise UsageError("use either --only or --from, not both")
    if only:
        wanted = [s.strip() for s in only.split(",") if s.strip()]
        unknown = [s for s in wanted if s not in STAGE_IDS]
        if unknown or not wanted:
            raise UsageError(
                f"--only: unknown stage(s) {', '.join(unknown) or '(none)'}; stages: {', '.join(STAGE_IDS)}"
            )
        return [s for s in STAGE_IDS if s in wanted]
    if from_stage:
        return list(STAGE_IDS[STAGE_IDS.index(from_stage) :])
    return list(STAGE_IDS)


def raise_open_file_limit(wanted: int = 65536) -> int:
    """Each host holds an SSH socket and a log file for the whole run, so 1,000 hosts need over 2,000 descriptors;
    many systems start processes with a soft limit of 1,024. Raise the soft limit towards the hard one (no privilege
    needed) and return the limit in force."""
    try:
        import resource
    except ImportError:  # not POSIX
        return -1
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    target = wanted if hard == resource.RLIM_INFINITY else min(wanted, hard)
    if soft != resource.RLIM_INFINITY and soft < target:
        try:
            resource.setrlimit(resource.RLIMIT_NOFILE, (target, hard))
            soft = target
        except (ValueError, OSError):
            pass
    return soft


def main(argv: Sequence[str] | None = None) -> int:
    args = list(sys.argv[1:] if argv is None else argv)
    raise_open_file_limit()
    try:
        if args and args[0] == "import":
            from wizard.answers.inventory_import import import_cmd

            return import_cmd(args[1:])
        if args and args[0] in SUBCOMMANDS:
            from wizard.cli import commands

            return commands.dispatch(args[0], args[1:])
        return _main_run(_run_parser().parse_args(args))
    except AnswersError as exc:
        for problem in exc.problems:
            _error(f"{exc.source}: {problem}")
        return EXIT_USAGE
    except UsageError as exc:
        _error(str(exc))
        return EXIT_USAGE
    except StateError as exc:
        _error(str(exc))
        return EXIT_USAGE
    except WizardError as exc:
        _error(str(exc))
        return EXIT_FAILED
    except KeyboardInterrupt:
        _error("interrupted; progress is saved - run the same command again to resume")
        return 130


def _error(message: str) -> None:
    sys.stderr.write(f"roce-wizard: {message}\n")


def _main_run(args: argparse.Namespace) -> int:
    headless_only = args.json or args.yes or args.only or args.from_stage or args.verbose
    if args.answers is None and not headless_only and sys.stdin.isatty() and sys.stdout.isatty():
        from screens.app import run_app
        from wizard.answers.profiles import check_profile

        profile = check_profile(args.profile, args.demo)
        return run_app(state_dir=args.state_dir, demo=args.demo, faults=args.fault, reset=args.reset, profile=profile)
    if args.answers is None and not args.demo:
        raise UsageError("no terminal for the wizard: give --answers FILE to run headless (or --demo)")
    from wizard.answers.profiles import check_profile, demo_answers

    # Usage errors first: they need nothing but the arguments, and must not wait for pydantic to load.
    args.profile = check_profile(args.profile, args.demo)
    stages = select_stages(args.only, args.from_stage)
    if (args.fault or args.reset) and not args.demo:
        raise UsageError("--fault and --reset only apply to the simulated cluster (--demo)")
    from wizard.answers.model import load_answers

    answers = load_answers(args.answers or demo_answers(args.profile))
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


if __name__ == "__main__":
    raise SystemExit(main())
