"""The README's and the docs pages' commands work as written: CI runs exactly the README's test command, every
concrete `roce-wizard ...` line they show parses with the command line that is there (parsed only: nothing runs, no
host is contacted), and every link between the pages reaches a file and a heading that exist."""

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
# docs/cli.md is generated from the parsers (tests/engine/test_cli_reference.py); docs/dev/ holds internal briefs
PAGES = {"README.md": README} | {
    f"docs/{p.name}": p.read_text() for p in sorted((ROOT / "docs").glob("*.md")) if p.name != "cli.md"
}


def test_ci_runs_the_readme_test_command_word_for_word() -> None:
    ci_command = (ROOT / ".ci" / "run").read_text().strip().splitlines()[-1]
    blocks = re.findall(r"```bash\n(.*?)\n```", README, re.S)
    assert ci_command in blocks, "README's test command and .ci/run differ"
    assert ci_command.startswith("sh tests/install-lab-tools.sh") and ci_command.endswith("python tests/tiers.py")


def _shown_commands(text: str) -> list[str]:
    inline = re.findall(r"`(roce-wizard(?: [^`]*)?)`", text)
    indented = [line.split("  #")[0].strip() for line in text.splitlines() if line.startswith("    roce-wizard ")]
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


COMMANDS = sorted({command for text in PAGES.values() for command in _shown_commands(text)})


def test_the_readme_and_the_docs_show_commands_to_check() -> None:
    assert len(_shown_commands(README)) >= 5  # the quick start
    assert len(COMMANDS) >= 33  # as many as the README showed before its sections moved to docs/


def test_the_docs_pages_are_found() -> None:
    assert {"docs/README.md", "docs/answers.md", "docs/labs.md", "docs/benchmarks.md"} <= set(PAGES)


@pytest.mark.parametrize("command", COMMANDS)
def test_each_shown_command_parses(command: str) -> None:
    argv = shlex.split(command)[1:]
    parser, rest = _parser_for(argv)
    if "--help" in rest:
        with pytest.raises(SystemExit) as exc:
            parser.parse_args(rest)
        assert exc.value.code == 0
        return
    parser.parse_args(rest)


def _anchors(text: str) -> set[str]:
    """The anchors GitHub makes for a page's headings: lower case, punctuation dropped, spaces to hyphens."""
    headings = [line.lstrip("#").strip() for line in text.splitlines() if re.match(r"#{1,6} ", line)]
    return {re.sub(r"[^\w\- ]", "", h.lower()).replace(" ", "-") for h in headings}


def _links(name: str, text: str) -> list[tuple[str, str]]:
    """(page, link) for every relative Markdown link of a page, outside code."""
    prose = re.sub(r"```.*?```", "", text, flags=re.S)
    prose = re.sub(r"`[^`]*`", "", prose)
    return [(name, target) for target in re.findall(r"\]\(([^)\s]+)\)", prose) if "://" not in target]


@pytest.mark.parametrize(("page", "link"), [pair for name, text in PAGES.items() for pair in _links(name, text)])
def test_each_link_between_the_pages_reaches_a_file_and_heading(page: str, link: str) -> None:
    path, _, fragment = link.partition("#")
    target = (ROOT / page).parent / path if path else ROOT / page
    assert target.exists(), f"{page}: {link} points at a missing file"
    if fragment and target.suffix == ".md":
        assert fragment in _anchors(target.read_text()), f"{page}: {link} names no heading of {target.name}"


def test_a_broken_link_would_be_caught() -> None:
    assert _anchors("# Labs\n## The lab's time scale\n## Reaching 1,000 hosts") == {
        "labs",
        "the-labs-time-scale",
        "reaching-1000-hosts",
    }
    assert _links("README.md", "see [x](docs/x.md#y) and `[z](nowhere.md)`") == [("README.md", "docs/x.md#y")]
