"""`roce-wizard lab serve`: the SIMULATED cluster as a standalone SSH server on 127.0.0.1 (to point another tool,
or a second wizard, at it)."""

from __future__ import annotations

import argparse

from wizard.answers.profiles import DEMO_PROFILES
from wizard.cli.options import command_parser, path_arg, run_async


def parser() -> argparse.ArgumentParser:
    """The command's options (also read by tests/engine/test_cli_options.py)."""
    p = command_parser("lab", "The simulated cluster.")
    sub = p.add_subparsers(dest="action", required=True)
    serve = sub.add_parser("serve", help="serve SIMULATED hosts over SSH on 127.0.0.1 until interrupted")
    serve.add_argument("--hosts", type=int, default=2, help="number of hosts (2 = the reference pair)")
    serve.add_argument("--port", type=int, default=0, help="first port (host i listens on PORT+i); 0 = any free")
    from wizard.lab.faults import FAULT_HELP

    serve.add_argument(
        "--fault", action="append", default=[], metavar="HOST:KIND[=ARG]", help="; ".join(FAULT_HELP.values())
    )
    serve.add_argument(
        "--write-answers", type=path_arg, help="write an answers file (plus key and known_hosts) for them"
    )
    serve.add_argument(
        "--profile",
        choices=DEMO_PROFILES,
        default=None,
        help="rails-16: 16 HGX H100 hosts gpu-001..gpu-016 on 8 rail leaves (--hosts is then ignored)",
    )
    return p


def main(argv: list[str]) -> int:
    args = parser().parse_args(argv)
    from wizard.lab.serve import serve_lab

    return run_async(serve_lab(args.hosts, args.port, args.fault, args.write_answers, args.profile))
