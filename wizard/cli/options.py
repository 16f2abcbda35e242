"""What every subcommand shares, defined once: the parser (mistakes become one-line usage errors), the option
groups (target: ``--answers --demo --profile --fault --state-dir``; output: ``--json``; stages: ``--only --from``)
and the checks that go with them. A new option every command needs is added here and nowhere else.

Imports stay cheap: ``--help`` and usage errors load nothing but argparse (bench/startup.py).
"""

from __future__ import annotations

import argparse
import re
import sys

from wizard.answers.profiles import PROFILE_CHOICES, check_profile, demo_answers, is_switched, profile_arg
from wizard.engine.stage_order import STAGE_IDS
from wizard.errors import UsageError

SWITCH_OS = ("cumulus", "sonic", "eos")  # wizard.lab.switch_os.NOS_NAMES, without importing the lab for --help

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing (bench/startup.py)
if TYPE_CHECKING:
    from collections.abc import Coroutine
    from pathlib import Path
    from typing import Any


class HelpFormatter(argparse.HelpFormatter):
    """argparse's formatter, told the width: left to find it, argparse imports shutil, and shutil tries zlib, bz2
    and lzma, which is about a tenth of what `roce-wizard --help` costs (bench/startup.py)."""

    def __init__(self, prog: str, indent_increment: int = 2, max_help_position: int = 24, width: int | None = None):
        super().__init__(prog, indent_increment, max_help_position, width or terminal_columns() - 2)


class ListingFormatter(HelpFormatter):
    """Wraps descriptions as usual but keeps indented lines (a listing such as the subcommands) as written."""

    def _fill_text(self, text: str, width: int, indent: str) -> str:
        return "\n".join(
            indent + line if line.startswith("  ") else super(ListingFormatter, self)._fill_text(line, width, indent)
            for line in text.splitlines()
        )


def terminal_columns() -> int:
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


class CommandParser(argparse.ArgumentParser):
    """An ArgumentParser whose errors are UsageError (one line, exit 2, printed once by ``main``)."""

    def __init__(self, *args: object, **kwargs: object) -> None:
        kwargs.setdefault("formatter_class", HelpFormatter)
        super().__init__(*args, **kwargs)  # type: ignore[arg-type]

    def error(self, message: str) -> None:  # type: ignore[override]
        # main() puts "roce-wizard: " in front of every message; a subcommand names itself after it
        prefix = "" if self.prog == "roce-wizard" else f"{self.prog.removeprefix('roce-wizard ')}: "
        raise UsageError(f"{prefix}{explain(self, message)} (see {self.prog} --help)")


def explain(parser: argparse.ArgumentParser, message: str) -> str:
    """argparse's message, made specific: the unknown option or command first, with the closest real one."""
    import difflib

    match = re.match(r"unrecognized arguments: (\S+)", message)
    if not match:
        return message
    first = match.group(1)
    if first.startswith("-"):
        option = first.split("=", 1)[0]
        known = [s for action in parser._actions for s in action.option_strings]
        close = difflib.get_close_matches(option, known, n=1, cutoff=0.6)
        return f"unknown option {option}" + (f"; did you mean {close[0]}?" if close else "")
    if parser.prog == "roce-wizard":
        from wizard.cli.main import SUBCOMMANDS

        close = difflib.get_close_matches(first, list(SUBCOMMANDS), n=1, cutoff=0.6)
        hint = f"did you mean {close[0]!r}?" if close else f"commands: {', '.join(SUBCOMMANDS)}"
        return f"unknown command {first!r}; {hint}"
    return f"unexpected argument {first!r}"


def command_parser(name: str, description: str) -> CommandParser:
    """The parser of ``roce-wizard NAME``."""
    return CommandParser(prog=f"roce-wizard {name}", description=description)


def path_arg(text: str) -> Path:
    """argparse's type for paths; pathlib (with urllib and ipaddress behind it) loads only when a path is given."""
    from pathlib import Path

    return Path(text)


def add_target_options(
    p: argparse.ArgumentParser,
    *,
    faults: bool = True,
    answers: str = "answers file (default with --demo: the profile's example)",
    demo: str = "the SIMULATED cluster on 127.0.0.1 (nothing real is contacted)",
    state_dir: str = "where progress, facts and logs are kept (default: the cluster's own)",
) -> None:
    """Which cluster a command works on: ``--answers``, ``--demo``, ``--profile``, ``--fault``, ``--state-dir``.
    ``faults=False`` for commands that only read a state directory (status, report): nothing to inject into."""
    p.add_argument("--answers", type=path_arg, help=answers)
    p.add_argument("--demo", action="store_true", help=demo)
    p.add_argument(
        "--profile",
        type=profile_arg,
        metavar=PROFILE_CHOICES,
        default=None,
        help="(--demo) simulated cluster: reference (2 x L20 servers back to back, the default), rails-N "
        "(N from 16 to 1024 HGX H100 hosts, 8 x ConnectX-7 400GbE each, on rail leaves: one per rail up to 32 "
        "hosts, else one per rail per 32-host unit under 8 spines; rails-16 is the shipped one) or ib-seed003 "
        "(2 V100 + 2 A100 nodes on InfiniBand, two IB switches); its answers file is the default --answers",
    )
    if faults:
        p.add_argument(
            "--fault", action="append", default=[], metavar="HOST:KIND[=ARG]", help="(--demo) inject a fault"
        )
        p.add_argument(
            "--switch-os",
            choices=SWITCH_OS,
            default=None,
            help="(--demo --profile rails-N) the NOS the simulated leaves and spines run: cumulus (the default), "
            "sonic or eos; they start from its defaults and are lossless only once switch-config's files are "
            "loaded (lab switch-apply). Default: what the state directory's switches run",
        )
    p.add_argument("--state-dir", type=path_arg, help=state_dir)


def add_json_option(p: argparse.ArgumentParser, help: str = "print the result as JSON on stdout") -> None:
    p.add_argument("--json", action="store_true", help=help)


def add_stage_options(p: argparse.ArgumentParser, *, only: str | None = None, from_stage: bool = True) -> None:
    p.add_argument("--only", help=only or "comma-separated stages (" + ",".join(STAGE_IDS) + ")")
    if from_stage:
        p.add_argument("--from", dest="from_stage", choices=STAGE_IDS, help="start at this stage")


def check_target(args: argparse.Namespace, command: str, *, required: bool = True) -> None:
    """Usage errors of the target options, before anything is loaded: a cluster must be named (``--answers`` or
    ``--demo``) where ``required``, and ``--fault`` and ``--profile`` only apply to the simulated cluster. Sets
    ``args.profile`` to the profile in force."""
    if required and args.answers is None and not args.demo:
        raise UsageError(f"{command} needs --answers FILE (or --demo)")
    if getattr(args, "fault", None) and not args.demo:
        raise UsageError("--fault only applies to the simulated cluster (--demo)")
    args.profile = check_profile(args.profile, args.demo)
    if getattr(args, "switch_os", None) and (not args.demo or not is_switched(args.profile)):
        raise UsageError("--switch-os only applies to the simulated switches of --demo --profile rails-N")


def answers_path(args: argparse.Namespace) -> Path:
    """The answers file a checked target names: ``--answers``, else the demo profile's own."""
    return args.answers or demo_answers(args.profile)


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


def run_async(coroutine: Coroutine[Any, Any, int]) -> int:
    """asyncio.run, imported on use: a subcommand's --help or usage error must not pay for asyncio."""
    import asyncio

    return asyncio.run(coroutine)
