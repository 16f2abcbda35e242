"""``roce-wizard tui``: the terminal wizard opened on an answers file.

``roce-wizard --answers FILE`` runs every stage headless, and scripts rely on that; ``tui --answers FILE`` opens
the same file in the wizard instead: its hosts and every stage's answers, validated as headless mode validates
them (a bad key is one line naming it, exit 2), progress kept in the state directory headless mode would use for
that file (the cluster's own, or ``--state-dir``). Without ``--answers`` it opens what ``roce-wizard`` opens on a
terminal: the state directory's saved answers, else the last ones used, else an empty bring-up.
"""

from __future__ import annotations

import argparse
import sys

from wizard.cli.options import add_target_options, check_target, command_parser
from wizard.errors import UsageError

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing (bench/startup.py)
if TYPE_CHECKING:
    from wizard.answers.model import Answers


def parser() -> argparse.ArgumentParser:
    """The command's options (also read by tests/engine/test_cli_options.py)."""
    p = command_parser(
        "tui",
        "Open the terminal wizard on an answers file (roce-wizard --answers FILE runs it headless instead).",
    )
    add_target_options(
        p,
        answers="answers file to open in the wizard, validated first (default: the state directory's saved "
        "answers, else the last ones used, else a new cluster with no hosts; with --demo the profile's)",
        state_dir="where progress, facts and logs are kept (default: the answers' cluster's own, as headless mode)",
    )
    p.add_argument("--reset", action="store_true", help="(--demo) start from bare simulated hosts, forget progress")
    return p


def prepare(argv: list[str]) -> tuple[argparse.Namespace, Answers | None]:
    """The checked options and the answers file's validated content (None without --answers): every usage
    mistake is raised before the wizard takes the terminal."""
    args = parser().parse_args(argv)
    check_target(args, "tui", required=False)
    if args.reset and not args.demo:
        raise UsageError("tui: --reset only applies to the simulated cluster (--demo)")
    if args.answers is None:
        return args, None
    from wizard.answers.model import load_answers

    return args, load_answers(args.answers)  # AnswersError: one line per bad key, exit 2 (wizard/cli/main.py)


def main(argv: list[str]) -> int:
    args, answers = prepare(argv)
    if not (sys.stdin.isatty() and sys.stdout.isatty()):
        raise UsageError("tui needs a terminal; without one run the stages headless: roce-wizard --answers FILE")
    return open_wizard(args, answers)


def open_wizard(args: argparse.Namespace, answers: Answers | None = None) -> int:
    """The terminal wizard on the checked target options (``roce-wizard`` on a terminal, and ``tui``): Textual is
    imported only here, so headless runs and usage errors never load it."""
    from screens.app import run_app

    return run_app(
        state_dir=args.state_dir,
        demo=args.demo,
        faults=args.fault,
        reset=args.reset,
        profile=args.profile,
        answers=answers,
        switch_os=args.switch_os,  # the wizard's simulated switches, as headless mode's
    )
