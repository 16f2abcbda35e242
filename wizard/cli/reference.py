"""The command reference (docs/cli.md), generated from the same parsers ``--help`` prints, so the two never drift.

``python -m wizard.cli.reference > docs/cli.md`` writes it; tests/engine/test_cli_reference.py fails when the file
differs from what this module makes now. Every parser is built the way ``roce-wizard`` builds it (the top level from
wizard/cli/run.py, each subcommand from its module's ``parser()``, ``export KIND`` from its kind's module, nested
subcommands such as ``lab serve`` from their parent), and each one's usage, description and options are written at
a fixed width, so the output does not depend on the terminal it was made in.
"""

from __future__ import annotations

import argparse
import contextlib
import importlib
import os
from collections.abc import Iterator

from wizard.cli import export
from wizard.cli.export import EXPORTS
from wizard.cli.main import SUBCOMMANDS

WIDTH = 100
"""The columns the usage lines are wrapped at (as ``COLUMNS=100 roce-wizard ... --help`` would)."""

HEADER = """# Command reference

Every command and option of `roce-wizard`, generated from the parsers that print `--help`
(`python -m wizard.cli.reference > docs/cli.md`; tests/engine/test_cli_reference.py fails when this page and the
parsers differ, so edit the parsers, never this page). What the commands are for: [the README](../README.md) and
[the documentation index](README.md).
"""


def command_parsers() -> Iterator[tuple[str, argparse.ArgumentParser | None, str]]:
    """Every command as (name, parser, one-line summary), in the order ``roce-wizard --help`` lists them; nested
    subcommands follow their parent. ``export`` has no parser of its own (None): it dispatches on KIND."""
    yield "roce-wizard", importlib.import_module("wizard.cli.run").parser(), ""
    for name, (module, summary) in SUBCOMMANDS.items():
        if name == "export":
            yield "roce-wizard export", None, summary
            for kind_module in EXPORTS.values():
                p = importlib.import_module(f"wizard.cli.{kind_module}").parser()
                yield p.prog, p, p.description or ""
            continue
        p = importlib.import_module(f"wizard.cli.{module}").parser()
        yield p.prog, p, summary
        yield from _nested(p)


def _nested(parent: argparse.ArgumentParser) -> Iterator[tuple[str, argparse.ArgumentParser | None, str]]:
    for action in _subparser_actions(parent):
        helps = {choice.dest: choice.help or "" for choice in action._choices_actions}
        for name, sub in action.choices.items():
            yield sub.prog, sub, helps.get(name, "")
            yield from _nested(sub)


def _subparser_actions(p: argparse.ArgumentParser) -> list[argparse._SubParsersAction]:  # type: ignore[type-arg]
    return [a for a in p._actions if isinstance(a, argparse._SubParsersAction)]


@contextlib.contextmanager
def fixed_width(columns: int = WIDTH) -> Iterator[None]:
    """Format as on a terminal ``columns`` wide (wizard/cli/options.py's formatter reads $COLUMNS)."""
    saved = os.environ.get("COLUMNS")
    os.environ["COLUMNS"] = str(columns)
    try:
        yield
    finally:
        if saved is None:
            os.environ.pop("COLUMNS", None)
        else:
            os.environ["COLUMNS"] = saved


def render() -> str:
    """The whole page."""
    with fixed_width():
        commands = list(command_parsers())
        sections = [HEADER.rstrip("\n")]
        for name, p, summary in commands:
            sections.append(_export_section() if p is None else _section(name, p, summary))
    return "\n\n".join(sections) + "\n"


def anchor(name: str) -> str:
    """The anchor GitHub gives the heading ``## NAME`` (lower case, spaces to hyphens)."""
    return "#" + name.lower().replace(" ", "-")


def _heading(name: str) -> str:
    """``##`` for the wizard and each subcommand, ``###`` for what is nested in one (``lab serve``)."""
    return f"{'##' if name.count(' ') <= 1 else '###'} {name}"


def _section(name: str, p: argparse.ArgumentParser, summary: str) -> str:
    lines = [_heading(name), "", "```text", p.format_usage().rstrip("\n"), "```", ""]
    lines += [_text(p.description or summary), ""]
    if name == "roce-wizard":
        lines += _commands_table()
    elif p.epilog:
        lines += ["```text", p.epilog, "```", ""]
    lines += _options_tables(p)
    return "\n".join(lines).rstrip("\n")


def _export_section() -> str:
    name = "roce-wizard export"
    lines = [_heading(name), "", "```text", export.usage(), "```", "", _text(export.DESCRIPTION), ""]
    lines += ["| kind | what it writes |", "| --- | --- |"]
    for kind, module in EXPORTS.items():
        p = importlib.import_module(f"wizard.cli.{module}").parser()
        lines.append(_link_row(kind, p.prog, p.description or ""))
    return "\n".join(lines)


def _commands_table() -> list[str]:
    rows = [_link_row(name, f"roce-wizard {name}", summary) for name, (_, summary) in SUBCOMMANDS.items()]
    return ["Other commands (each has `--help`):", "", "| command | what it does |", "| --- | --- |", *rows, ""]


def _link_row(label: str, command: str, text: str) -> str:
    """A table row naming a command, linked to its own section."""
    return f"| [{label}]({anchor(command)}) | {_cell(text)} |"


def _options_tables(p: argparse.ArgumentParser) -> list[str]:
    formatter = p._get_formatter()
    positionals: list[str] = []
    options: list[str] = []
    commands: list[str] = []
    for action in p._actions:
        if isinstance(action, argparse._SubParsersAction):
            helps = {choice.dest: choice.help or "" for choice in action._choices_actions}
            commands += [_link_row(sub, f"{p.prog} {sub}", helps.get(sub, "")) for sub in action.choices]
            continue
        row = f"| `{formatter._format_action_invocation(action)}` | {_cell(_expanded_help(formatter, action))} |"
        (options if action.option_strings else positionals).append(row)
    lines: list[str] = []
    for title, rows in (("command", commands), ("argument", positionals), ("option", options)):
        if rows:
            lines += [f"| {title} | description |", "| --- | --- |", *rows, ""]
    return lines


def _expanded_help(formatter: argparse.HelpFormatter, action: argparse.Action) -> str:
    """The help text as ``--help`` prints it (``%(default)s`` and the like filled in)."""
    return formatter._expand_help(action) if action.help else ""


def _text(text: str) -> str:
    """A description as a Markdown paragraph: argparse re-wraps it anyway, so its line breaks carry nothing."""
    return _escape(" ".join(text.split()))


def _cell(text: str) -> str:
    return _escape(" ".join(text.split())).replace("|", "\\|")


def _escape(text: str) -> str:
    """Outside code spans, `<switch>.<ext>` would be read as an HTML tag and vanish from the rendered page."""
    parts = text.split("`")
    for i in range(0, len(parts), 2):
        parts[i] = parts[i].replace("<", "&lt;").replace(">", "&gt;")
    return "`".join(parts)


def main() -> int:
    import sys

    sys.stdout.write(render())
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
