"""`roce-wizard schema`: the JSON Schema of the answers file (for editors and CI linting of answers files)."""

from __future__ import annotations

import argparse
import json

from wizard.cli.options import command_parser
from wizard.errors import EXIT_OK


def parser() -> argparse.ArgumentParser:
    """The command's options (also read by tests/engine/test_cli_options.py)."""
    return command_parser("schema", "Print the JSON Schema of the answers file.")


def main(argv: list[str]) -> int:
    parser().parse_args(argv)
    from wizard.answers.model import answers_schema

    print(json.dumps(answers_schema(), indent=2))
    return EXIT_OK
