"""`roce-wizard export KIND`: the design the wizard verified, as input for another engine (each kind is a module
of its own with its own --help)."""

from __future__ import annotations

import importlib

from wizard.errors import EXIT_OK, UsageError

EXPORTS = {  # kind -> module under wizard.cli with main(argv) taking the arguments after KIND
    "ansible": "export_ansible",
    "k8s": "export_k8s",
}


DESCRIPTION = "Write the design the wizard verified as input for another engine; each kind has its own --help:"


def usage() -> str:
    """The usage line (export has no parser of its own; wizard/cli/reference.py shows the same)."""
    return f"usage: roce-wizard export {{{','.join(sorted(EXPORTS))}}} [--help] ..."


def main(argv: list[str]) -> int:
    kinds = ",".join(sorted(EXPORTS))
    if argv[:1] in (["-h"], ["--help"]):
        print(usage() + "\n")
        print(DESCRIPTION)
        print("; ".join(f"roce-wizard export {k} --help" for k in sorted(EXPORTS)))
        return EXIT_OK
    if not argv or argv[0] not in EXPORTS:
        got = f" {argv[0]!r}" if argv else ""
        raise UsageError(f"export: unknown kind{got}; one of {kinds} (roce-wizard export KIND --help)")
    return int(importlib.import_module(f"wizard.cli.{EXPORTS[argv[0]]}").main(argv[1:]))
