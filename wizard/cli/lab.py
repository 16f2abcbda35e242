"""`roce-wizard lab serve`: the SIMULATED cluster as a standalone SSH server on 127.0.0.1 (to point another tool,
or a second wizard, at it)."""

from __future__ import annotations

import argparse

from wizard.answers.profiles import PROFILE_CHOICES, is_switched, profile_arg
from wizard.cli.options import (
    SWITCH_OS,
    add_target_options,
    answers_path,
    check_target,
    command_parser,
    path_arg,
    run_async,
)
from wizard.errors import UsageError


def parser() -> argparse.ArgumentParser:
    """The command's options (also read by tests/engine/test_cli_options.py)."""
    p = command_parser("lab", "The simulated cluster.")
    sub = p.add_subparsers(dest="action", required=True)
    serve = sub.add_parser(
        "serve",
        help="serve SIMULATED hosts over SSH on 127.0.0.1 until interrupted",
        description="Serve SIMULATED hosts over SSH on 127.0.0.1 until interrupted, each on its own port, for any "
        "SSH client (--write-answers gives the wizard, or another tool, what it needs to reach them).",
    )
    serve.add_argument("--hosts", type=int, default=2, metavar="N", help="number of hosts (2 = the reference pair)")
    serve.add_argument("--port", type=int, default=0, help="first port (host i listens on PORT+i); 0 = any free")
    from wizard.lab.faults import FAULT_HELP

    serve.add_argument(
        "--fault", action="append", default=[], metavar="HOST:KIND[=ARG]", help="; ".join(FAULT_HELP.values())
    )
    serve.add_argument(
        "--write-answers",
        type=path_arg,
        metavar="FILE",
        help="write an answers file (plus key and known_hosts) for them",
    )
    serve.add_argument(
        "--profile",
        type=profile_arg,
        metavar=PROFILE_CHOICES,
        default=None,
        help="rails-N: N HGX H100 hosts gpu-001.. (16 to 1024; gpu-0001.. past 999) on rail leaves, 32 hosts per leaf "
        "and 8 spines past 32 hosts (rails-16: 16 hosts on 8 rail leaves); ib-seed003: 2 V100 + 2 A100 nodes on "
        "InfiniBand (--hosts is then ignored)",
    )
    serve.add_argument(
        "--switch-os",
        choices=SWITCH_OS,
        default=None,
        help="(--profile rails-N) the NOS the simulated leaves and spines run (default cumulus)",
    )
    apply = sub.add_parser(
        "switch-apply",
        help="load switch-config's files into the SIMULATED switches of a demo state, as each switch's NOS loads "
        "them (bash of nv commands, config load, a configuration session); kept for the next --demo run",
        description="Load switch-config's files into the SIMULATED switches of a demo state directory, as each "
        "switch's NOS loads them (bash of nv commands, config load, a configuration session); the switches keep "
        "them for the next --demo run. Exit 1 when a NOS rejected anything (its own message is printed).",
    )
    add_target_options(apply)
    apply.add_argument("files", nargs="+", type=path_arg, help="<switch>.<ext> files (switch-config --out DIR/...)")
    return p


def main(argv: list[str]) -> int:
    args = parser().parse_args(argv)
    if args.action == "switch-apply":
        return _switch_apply(args)
    from wizard.lab.serve import serve_lab

    if args.switch_os and not is_switched(args.profile):
        raise UsageError("--switch-os needs --profile rails-N (the other labs have no modelled switches)")
    return run_async(serve_lab(args.hosts, args.port, args.fault, args.write_answers, args.profile, args.switch_os))


def _switch_apply(args: argparse.Namespace) -> int:
    """Load each file into its switch; exit 1 when any NOS rejected anything (its own message is printed)."""
    args.demo = True  # only the simulated switches can be loaded this way
    args.profile = args.profile or "rails-16"
    check_target(args, "lab switch-apply")
    from wizard.answers.model import load_answers
    from wizard.engine.session import check_faults, demo_state_dir
    from wizard.lab.demo_switches import demo_lab, load_files

    answers = load_answers(answers_path(args))
    state_dir = demo_state_dir(answers, args.state_dir, reset=False)
    files = [f for f in args.files if f.name != "README.txt"]
    missing = [str(f) for f in files if not f.is_file()]
    if missing:
        raise UsageError(f"lab switch-apply: no such file: {missing[0]}")
    try:
        lab = demo_lab(answers, state_dir, args.profile, args.switch_os, check_faults(answers, args.fault))
        results = load_files(lab, files)
    except ValueError as exc:
        raise UsageError(f"lab switch-apply: {exc}") from None
    for switch, path, result in results:
        nos = lab.fabric.switches.switches[switch].os  # type: ignore[union-attr]
        verdict = "applied" if result.applied else "nothing applied"
        print(f"[simulated] {switch} ({nos}): {path.name}: exit {result.exit_code}, {verdict}")
        for line in result.output.splitlines():
            print(f"[simulated]   {line}")
    return 1 if any(r.exit_code for _, _, r in results) else 0
