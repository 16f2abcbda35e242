"""`roce-wizard parse TOOL FILE`: one real tool output through the wizard's own parser, printed as JSON (to check
what the wizard makes of a host's output without running anything on it)."""

from __future__ import annotations

import argparse
import sys

from wizard.cli.options import command_parser, path_arg
from wizard.errors import EXIT_OK, EXIT_USAGE


def parser() -> argparse.ArgumentParser:
    """The command's options (also read by tests/engine/test_cli_options.py)."""
    from wizard.parsers import TOOLS

    p = command_parser("parse", "Parse one real tool output and print it as JSON.")
    p.add_argument("tool", choices=sorted(TOOLS), metavar="TOOL", help="one of: " + ", ".join(sorted(TOOLS)))
    p.add_argument("file", nargs="?", default="-", help="file with the output, or - for stdin")
    return p


def main(argv: list[str]) -> int:
    args = parser().parse_args(argv)
    from wizard.parsers import ParseError, parse

    try:
        text = sys.stdin.read() if args.file == "-" else path_arg(args.file).read_text(errors="replace")
    except OSError as exc:
        sys.stderr.write(f"roce-wizard parse: cannot read {args.file}: {exc.strerror}\n")
        return EXIT_USAGE
    try:
        result = parse(args.tool, text)
    except ParseError as exc:
        sys.stderr.write(f"roce-wizard parse: {args.file}: not {args.tool} output: {exc}\n")
        return EXIT_USAGE
    print(result.model_dump_json(indent=2))
    return EXIT_OK
