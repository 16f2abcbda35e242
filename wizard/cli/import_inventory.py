"""`roce-wizard import inventory FILE`: an answers file from an Ansible inventory (INI or YAML) or an ssh_config's
Host blocks, resolved by wizard/answers/inventory_import.py and validated before it is written."""

from __future__ import annotations

import argparse
import sys

from wizard.cli.options import command_parser, path_arg
from wizard.errors import EXIT_USAGE, UsageError


def parser() -> argparse.ArgumentParser:
    """The command's options (also read by tests/engine/test_cli_options.py)."""
    p = command_parser(
        "import", "Write an answers file from an Ansible inventory (INI or YAML) or the Host blocks of an ssh_config."
    )
    p.add_argument("what", choices=["inventory"], help="what to import")
    p.add_argument("file", type=path_arg, help="inventory file or ssh_config")
    p.add_argument("--group", default="all", help="only this group (and its children); default all")
    p.add_argument("--format", dest="fmt", choices=["ini", "yaml", "ssh_config"], help="default: detected")
    p.add_argument(
        "-o", "--output", type=path_arg, metavar="FILE", help="answers file to write; default standard output"
    )
    p.add_argument("--force", action="store_true", help="overwrite the output file if it exists")
    return p


def main(argv: list[str]) -> int:
    """roce-wizard import inventory FILE [--group G] [-o answers.yaml] [--format ini|yaml|ssh_config]."""
    args = parser().parse_args(argv)
    from wizard.answers.inventory import detect_format, parse_inventory
    from wizard.answers.inventory_import import answers_text, cluster_name, import_hosts
    from wizard.answers.model import parse_answers
    from wizard.paths import example_answers

    try:
        text = args.file.read_text(encoding="utf-8")
    except OSError as exc:
        raise UsageError(f"{args.file}: cannot read ({exc.strerror or exc})") from None
    fmt = args.fmt or detect_format(text, args.file.name)
    if fmt == "ssh_config" and args.group != "all":
        raise UsageError("--group applies to Ansible inventories; an ssh_config has no groups")
    imported = import_hosts(parse_inventory(text, fmt, str(args.file)), args.group)
    where = f"{args.file}" + (f" (group {args.group})" if args.group != "all" else "")
    answers = answers_text(
        imported, example_answers().read_text(encoding="utf-8"), cluster_name(args.group, args.file), where
    )
    parse_answers(answers, "imported answers")  # refuse to write a file the wizard would not load
    for warning in imported.warnings:
        sys.stderr.write(f"roce-wizard: warning: {warning}\n")
    if args.output is None:
        sys.stdout.write(answers)
        return 0
    if args.output.exists() and not args.force:
        sys.stderr.write(f"roce-wizard: {args.output} exists; give --force to overwrite it\n")
        return EXIT_USAGE
    args.output.write_text(answers, encoding="utf-8")
    sys.stderr.write(f"roce-wizard: wrote {args.output} with {len(imported.hosts)} hosts\n")
    return 0
