"""The README's commands work as written: CI runs exactly its test command, and every concrete `roce-wizard ...`
line it shows parses with the command line that is there (parsed only: nothing runs, no host is contacted)."""

from __future__ import annotations

import importlib
import re
import shlex
from pathlib import Path

import pytest

from wizard.cli.export import EXPORTS
from wizard.cli.main import SUBCOMMANDS

ROOT = Path(__file__).resolve().parent.parent
README = (ROOT / "README.md").read_text()


def test_ci_runs_the_readme_test_command_word_for_word() -> None:
    ci_command = (ROOT / ".ci" / "run").read_text().strip().splitlines()[-1]
    blocks = re.findall(r"```bash\n(.*?)\n```", README, re.S)
    assert ci_command in blocks, "README's test command and .ci/run differ"
    assert ci_command.startswith("sh tests/install-lab-tools.sh") and ci_command.endswith("python tests/tiers.py")


def _readme_commands() -> list[str]:
    inline = re.findall(r"`(roce-wizard(?: [^`]*)?)`", README)
    indented = [line.split("  #")[0].strip() for line in README.splitlines() if line.startswith("    roce-wizard ")]
    # `a && b` shows two commands; an inline command may wrap onto the next line
    pieces = [part.strip() for command in inline + indented for part in command.replace("\n", " ").split("&&")]
    concrete = []
    for command in pieces:
        placeholder = any(mark in command for mark in ("[", "|", "NAME", "TOOL", "...", "<"))
        if placeholder or command.startswith("roce-wizard-"):
            continue  # a synopsis with placeholders, or a unit name
        concrete.append(command)
    return sorted(set(concrete))


def _parser_for(argv: list[str]):  # type: ignore[no-untyped-def]
    if argv and argv[0] == "export":
        return importlib.import_module(f"wizard.cli.{EXPORTS[argv[1]]}").parser(), argv[2:]
    if argv and argv[0] in SUBCOMMANDS:
        return importlib.import_module(f"wizard.cli.{SUBCOMMANDS[argv[0]][0]}").parser(), argv[1:]
    return importlib.import_module("wizard.cli.run").parser(), argv


def test_the_readme_shows_commands_to_check() -> None:
    assert len(_readme_commands()) >= 15


@pytest.mark.parametrize("command", _readme_commands())
def test_each_readme_command_parses(command: str) -> None:
    argv = shlex.split(command)[1:]
    parser, rest = _parser_for(argv)
    if "--help" in rest:
        with pytest.raises(SystemExit) as exc:
            parser.parse_args(rest)
        assert exc.value.code == 0
        return
    parser.parse_args(rest)
