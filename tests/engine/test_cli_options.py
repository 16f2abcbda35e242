"""Every subcommand lives in wizard/cli/, parses, and shares the option groups defined once in wizard/cli/options.py:
a command that takes --demo also takes --profile (and the rest of the target group), so commands cannot drift."""

from __future__ import annotations

import argparse
import importlib

import pytest

from wizard.cli.export import EXPORTS
from wizard.cli.main import SUBCOMMANDS, main
from wizard.errors import EXIT_USAGE

TARGET = {"--answers", "--demo", "--profile", "--state-dir"}  # plus --fault where the command reaches hosts
READS_STATE_ONLY = {"status", "report"}  # nothing to inject a fault into


def _parsers() -> dict[str, argparse.ArgumentParser]:
    found = {}
    for name, (module, _) in SUBCOMMANDS.items():
        if name == "export":
            for kind, kind_module in EXPORTS.items():
                found[f"export {kind}"] = importlib.import_module(f"wizard.cli.{kind_module}").parser()
        else:
            found[name] = importlib.import_module(f"wizard.cli.{module}").parser()
    found["(run)"] = importlib.import_module("wizard.cli.run").parser()
    return found


def _options(parser: argparse.ArgumentParser) -> set[str]:
    return {s for action in parser._actions for s in action.option_strings}


PARSERS = _parsers()


def test_every_subcommand_is_a_module_of_the_cli_package_with_a_parser_named_after_it() -> None:
    for name, parser in PARSERS.items():
        if name != "(run)":
            assert parser.prog == f"roce-wizard {name}"


@pytest.mark.parametrize("name", sorted(PARSERS))
def test_a_command_that_takes_demo_takes_the_whole_target_group(name: str) -> None:
    options = _options(PARSERS[name])
    if "--demo" not in options:
        assert "--profile" not in options or name == "lab", name  # lab serve is always simulated
        return
    assert TARGET <= options, (name, TARGET - options)
    assert ("--fault" in options) == (name not in READS_STATE_ONLY), name
    assert ("--switch-os" in options) == ("--fault" in options), name  # the simulated switches' NOS, beside faults


def test_switch_os_without_the_rails16_demo_is_one_usage_line(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["plan", "--demo", "--switch-os", "sonic"]) == 2
    assert capsys.readouterr().err == (
        "roce-wizard: --switch-os only applies to the simulated switches of --demo --profile rails-N\n"
    )


@pytest.mark.parametrize("name", sorted(PARSERS))
def test_every_command_answers_help(name: str, capsys: pytest.CaptureFixture[str]) -> None:
    argv = [] if name == "(run)" else name.split()
    with pytest.raises(SystemExit) as exc:
        main([*argv, "--help"])
    assert exc.value.code == 0
    assert "usage: roce-wizard" in capsys.readouterr().out


@pytest.mark.parametrize("argv", [["lab", "serve"], ["lab", "switch-apply"], ["inference", "restart"]])
def test_a_nested_command_answers_help_with_what_it_does(argv: list[str], capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exc:
        main([*argv, "--help"])
    assert exc.value.code == 0
    usage, _, rest = capsys.readouterr().out.partition("\n\n")
    assert usage.startswith(f"usage: roce-wizard {' '.join(argv)} ")
    first = rest.split("\n\n")[0]
    assert first.strip() and not first.startswith(("options:", "positional arguments:")), "no description"


def test_the_top_level_help_lists_each_subcommand_with_what_it_does(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit):
        main(["--help"])
    out = capsys.readouterr().out
    for name, (_, summary) in SUBCOMMANDS.items():
        assert f"  {name}" in out and summary in out


@pytest.mark.parametrize("command", ["check", "rollback", "export ansible", "switch-config", "plan", "metrics"])
def test_profile_without_demo_is_one_usage_line(command: str, capsys: pytest.CaptureFixture[str]) -> None:
    extra = {"export ansible": ["-o", "x"], "switch-config": ["--vendor", "sonic"]}.get(command, [])
    argv = [*command.split(), "--answers", "assets/answers.example.yaml", "--profile", "rails-16", *extra]
    assert main(argv) == EXIT_USAGE
    assert capsys.readouterr().err == "roce-wizard: --profile only applies to the simulated cluster (--demo)\n"


def test_the_cli_modules_import_no_private_name_from_each_other() -> None:
    import ast
    from pathlib import Path

    for path in Path("wizard/cli").glob("*.py"):
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.ImportFrom) and (node.module or "").startswith("wizard"):
                private = [a.name for a in node.names if a.name.startswith("_") and not a.name.startswith("__")]
                assert not private, f"{path} imports {private} from {node.module}"


def test_the_stage_ids_the_cli_offers_are_the_stages_in_run_order() -> None:
    from steps import all_steps
    from wizard.engine.stage_order import STAGE_IDS

    assert [step.id for step in all_steps()] == list(STAGE_IDS)


def test_each_stage_package_offers_its_stage_class_without_loading_it_early() -> None:
    import subprocess
    import sys

    code = (
        "import sys, steps.network.facts\n"
        "print('steps.network.stage' in sys.modules)\n"
        "from steps.network import Network\n"
        "print(Network.__module__)\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout.split()
    assert out == ["False", "steps.network.stage"]


@pytest.mark.parametrize(
    ("argv", "line"),
    [
        (
            ["--anwsers", "a.yaml"],
            "roce-wizard: unknown option --anwsers; did you mean --answers? (see roce-wizard --help)",
        ),
        (["repot"], "roce-wizard: unknown command 'repot'; did you mean 'report'? (see roce-wizard --help)"),
        (
            ["bwtest", "--demmo"],
            "roce-wizard: bwtest: unknown option --demmo; did you mean --demo? (see roce-wizard bwtest --help)",
        ),
    ],
)
def test_a_mistyped_option_or_command_is_named_once_with_the_closest_real_one(
    argv: list[str], line: str, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(argv) == EXIT_USAGE
    assert capsys.readouterr().err.splitlines() == [line]
