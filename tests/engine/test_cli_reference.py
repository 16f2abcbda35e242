"""docs/cli.md is what the parsers say now (it never drifts from ``--help``), and every option of every command, nested
ones included, says what it does."""

from __future__ import annotations

import argparse
import re
from pathlib import Path

import pytest

from wizard.cli.main import SUBCOMMANDS
from wizard.cli.reference import anchor, command_parsers, render

ROOT = Path(__file__).resolve().parents[2]
CLI_MD = ROOT / "docs" / "cli.md"
COMMANDS = [(name, p) for name, p, _ in command_parsers() if p is not None]


def test_docs_cli_md_is_what_the_parsers_say_now() -> None:
    assert CLI_MD.read_text() == render(), (
        "docs/cli.md differs from the parsers: run `python -m wizard.cli.reference > docs/cli.md`"
    )


def test_the_reference_covers_every_command_and_nested_command() -> None:
    names = [name for name, _, _ in command_parsers()]
    assert names[0] == "roce-wizard"
    assert {f"roce-wizard {name}" for name in SUBCOMMANDS} <= set(names)
    nested = {"roce-wizard lab serve", "roce-wizard lab switch-apply", "roce-wizard inference restart"}
    assert nested | {"roce-wizard export ansible", "roce-wizard export k8s"} <= set(names)


def test_every_link_in_the_reference_reaches_a_heading_of_it() -> None:
    text = render()
    headings = {anchor(line.lstrip("#").strip()) for line in text.splitlines() if line.startswith("#")}
    links = set(re.findall(r"\]\((#[^)]+)\)", text))
    assert links and links <= headings, links - headings


def test_the_reference_is_the_same_whatever_the_terminal_width(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("COLUMNS", "40")
    narrow = render()
    monkeypatch.setenv("COLUMNS", "250")
    assert render() == narrow


def _undescribed(name: str, parser: argparse.ArgumentParser) -> list[str]:
    """The options, arguments and nested commands of ``parser`` whose help says nothing, and the parser itself when
    it has no description."""
    missing = [] if (parser.description or "").strip() else [f"{name} (no description)"]
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            helps = {c.dest: c.help or "" for c in action._choices_actions}  # add_parser(help=...) makes these
            missing += [f"{name} {sub}" for sub in action.choices if not helps.get(sub, "").strip()]
        elif not (action.help or "").strip() or action.help == argparse.SUPPRESS:
            missing.append("/".join(action.option_strings) or action.dest)
    return missing


@pytest.mark.parametrize(("name", "parser"), COMMANDS, ids=[name for name, _ in COMMANDS])
def test_every_option_and_argument_is_described(name: str, parser: argparse.ArgumentParser) -> None:
    assert _undescribed(name, parser) == []


def test_an_undescribed_option_or_command_would_be_caught() -> None:
    p = argparse.ArgumentParser(prog="roce-wizard x")
    p.add_argument("--quiet", action="store_true")
    p.add_argument("target")
    p.add_subparsers().add_parser("go")
    assert _undescribed("roce-wizard x", p) == [
        "roce-wizard x (no description)",
        "--quiet",
        "target",
        "roce-wizard x go",
    ]
