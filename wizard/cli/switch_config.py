"""`roce-wizard switch-config`: probe discovery read-only (or read saved facts) and write per-switch files."""

from __future__ import annotations

import argparse
import datetime as dt
import sys

from wizard.cli.options import add_target_options, answers_path, check_target, command_parser, path_arg, run_async
from wizard.errors import EXIT_OK, UsageError


def parser() -> argparse.ArgumentParser:
    """The command's options (also read by tests/engine/test_cli_options.py)."""
    from wizard.switchcfg import VENDORS

    p = command_parser(
        "switch-config",
        "Write the lossless switch configuration (PFC, DSCP map, ECN, MTU) for exactly the switch ports LLDP finds "
        "behind the hosts' RDMA ports, from the same RoCE answers the hosts use. Nothing is sent to a switch: the "
        "operator applies the files.",
    )
    add_target_options(p)
    p.add_argument("--vendor", required=True, choices=sorted(VENDORS), help="switch OS: nvue (Cumulus), sonic, eos")
    p.add_argument("--out", type=path_arg, default="switch-config", help="output folder (default ./switch-config)")
    p.add_argument(
        "--saved",
        action="store_true",
        help="use the discovery facts saved in the state directory instead of probing the hosts (their age is "
        "written in README.txt; recabling since then is not seen)",
    )
    return p


def main(argv: list[str]) -> int:
    args = parser().parse_args(argv)
    check_target(args, "switch-config")
    from wizard.answers.model import load_answers

    return run_async(_run(args, load_answers(answers_path(args))))


async def _run(args: argparse.Namespace, answers) -> int:  # type: ignore[no-untyped-def]
    from wizard.engine.step import ClusterView
    from wizard.switchcfg import SwitchQos, port_map, unconfigured, write

    qos = SwitchQos.from_answers(answers)
    if args.saved:
        view, failed, origin = _saved(args, answers)
    else:
        view, failed, origin = await _probe(args, answers)
    ports = port_map(ClusterView(answers, view))
    missing = unconfigured(ClusterView(answers, view), failed)
    try:
        files = write(args.out, args.vendor, ports, qos, missing, origin=origin)
    except ValueError as exc:  # a renderer refusing an answer the switch cannot carry (MTU)
        raise UsageError(str(exc)) from None
    count = sum(len(u) for u in ports.values())
    print(f"{args.vendor}: {len(ports)} switch(es), {count} port(s): {qos.summary()}")
    for path in files:
        print(f"  {path}")
    for item in missing:
        print(f"  not configured: {item.host} {item.netdev}: {item.reason}")
    if not ports:
        from steps.network.design import fabric_of

        why = " (the answers describe a back-to-back fabric)" if fabric_of(answers) == "back_to_back" else ""
        sys.stderr.write(f"roce-wizard switch-config: no host port has an LLDP neighbour{why}; see README.txt\n")
        return 1
    return 1 if failed else EXIT_OK


async def _probe(args: argparse.Namespace, answers) -> tuple[dict, dict[str, str], str]:  # type: ignore[no-untyped-def]
    """Discovery only, read-only: the probe runs, its (empty) plan is never applied."""
    from wizard.engine.session import session_for_args

    async with session_for_args(args, answers) as session:
        outcomes = await session.runner.plan_all(["discovery"])
        failed = {
            host: session.store.host(host).stage("discovery").reason or status
            for o in outcomes
            for host, status in o.statuses.items()
            if status == "failed"
        }
        facts = session.runner.view().facts
        where = "the SIMULATED cluster" if args.demo else "the hosts"
        stamp = dt.datetime.now(dt.UTC).strftime("%Y-%m-%d %H:%M UTC")
        return facts, failed, f"LLDP read by discovery from {where} at {stamp}"


def _saved(args: argparse.Namespace, answers) -> tuple[dict, dict[str, str], str]:  # type: ignore[no-untyped-def]
    from wizard.engine.state import StateStore
    from wizard.paths import default_state_dir

    root = args.state_dir or default_state_dir(answers.cluster.name, demo=args.demo)
    store = StateStore(root)
    facts = {h.name: store.load_facts(h.name) for h in answers.hosts}
    failed = {h: f"no discovery facts saved in {root}" for h, f in facts.items() if not f.get("discovery")}
    stamps = [(root / "facts" / f"{h}.json").stat().st_mtime for h in facts if (root / "facts" / f"{h}.json").exists()]
    when = dt.datetime.fromtimestamp(min(stamps), dt.UTC).strftime("%Y-%m-%d %H:%M UTC") if stamps else "-"
    return facts, failed, f"discovery facts saved in {root} (oldest {when}); recabling since then is not seen"
