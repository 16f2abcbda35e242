"""`roce-wizard switch-config`: probe discovery read-only (or read saved facts) and write per-switch files."""

from __future__ import annotations

import argparse
import dataclasses
import datetime as dt
import sys
from pathlib import Path

from wizard.cli.options import add_target_options, answers_path, check_target, command_parser, path_arg, run_async
from wizard.errors import EXIT_OK, UsageError


def parser() -> argparse.ArgumentParser:
    """The command's options (also read by tests/engine/test_cli_options.py)."""
    from wizard.switchcfg import VENDOR_ALIASES, VENDORS

    p = command_parser(
        "switch-config",
        "Write the lossless switch configuration (PFC, DSCP map, ECN, MTU) for exactly the switch ports LLDP finds "
        "behind the hosts' RDMA ports, from the same RoCE answers the hosts use. Nothing is sent to a switch: the "
        "operator applies the files.",
    )
    add_target_options(p)
    p.add_argument(
        "--vendor",
        required=True,
        choices=sorted([*VENDORS, *VENDOR_ALIASES]),
        help="switch OS: nvue or cumulus (Cumulus Linux), sonic, eos",
    )
    p.add_argument(
        "--port-map",
        type=path_arg,
        metavar="DIR",
        help="(sonic) folder of <switch>.txt (`show interfaces alias`) or <switch>.json (/etc/sonic/config_db.json) "
        "files: SONiC's LLDP port ID is the port's alias, CONFIG_DB needs its name. With --demo the simulated "
        "switches answer",
    )
    p.add_argument(
        "--out", type=path_arg, default="switch-config", metavar="DIR", help="output folder (default ./switch-config)"
    )
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
    from wizard.switchcfg import SwitchQos, plan_jobs, port_map, render, resolve_sonic_names, unconfigured, write

    qos = SwitchQos.from_answers(answers)
    if args.saved:
        view, failed, origin = _saved(args, answers)
    else:
        view, failed, origin = await _probe(args, answers)
    ports = port_map(ClusterView(answers, view))
    missing = unconfigured(ClusterView(answers, view), failed)
    fabric, maps = list(answers.switches.fabric), {}
    if args.demo:
        fabric, maps = _demo_inputs(args, answers, fabric)
    if args.port_map is not None:
        maps = _port_maps(args.port_map)
    jobs = plan_jobs(ports, fabric)
    # A mixed fabric: the switches the answers' switches.os_of names get their own NOS's files (and folder).
    groups: dict[str, list] = {}  # type: ignore[type-arg]
    for job in jobs:
        groups.setdefault(answers.switches.os_of.get(job.name, args.vendor), []).append(job)
    if args.port_map is not None and "sonic" not in groups:
        raise UsageError("--port-map is for SONiC switches (the other NOSes send their port names over LLDP)")
    files, ready = [], []
    try:  # every switch's file is rendered before any is written: nothing half-written
        for vendor, group in (groups or {args.vendor: []}).items():
            vendor_qos = qos
            if vendor == "sonic":
                group = resolve_sonic_names(group, maps)
                models = {m.buffer_model for m in maps.values() if m.buffer_model}
                if len(models) == 1:  # the switches' own config_db.json says which buffer model they run
                    vendor_qos = dataclasses.replace(qos, buffer_model=models.pop())
            for job in group:
                render(vendor, job.name, job.uses, vendor_qos, job.fabric, job.role)
            groups[vendor] = group
            ready.append((vendor, group, vendor_qos))
    except ValueError as exc:  # an alias no port map resolves, an answer the switch cannot carry (MTU)
        raise UsageError(f"switch-config: {exc}") from None
    for vendor, group, vendor_qos in ready:
        files += write(args.out, vendor, group, vendor_qos, missing, origin=origin)
    jobs = [job for group in groups.values() for job in group]
    count = sum(len(j.uses) + len(j.fabric) for j in jobs)
    for vendor, group in groups.items():
        ports_in = sum(len(j.uses) + len(j.fabric) for j in group)
        print(f"{vendor}: {len(group)} switch(es), {ports_in} port(s): {qos.summary()}")
    if not groups:
        print(f"{args.vendor}: 0 switch(es), {count} port(s): {qos.summary()}")
    if not any(j.fabric for j in jobs):
        print("  leaf uplinks and spines: not configured (no switches.fabric in the answers; see README.txt)")
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


def _port_maps(folder: Path) -> dict:  # type: ignore[type-arg]
    from wizard.switchcfg.portmap import load_port_maps

    if not folder.is_dir():
        raise UsageError(f"--port-map: {folder} is not a folder")
    try:
        return load_port_maps(folder)
    except ValueError as exc:
        raise UsageError(f"--port-map: {exc}") from None


def _demo_inputs(args: argparse.Namespace, answers, fabric: list) -> tuple[list, dict]:  # type: ignore[no-untyped-def,type-arg]
    """What the operator reads off the simulated switches: each SONiC switch's `show interfaces alias`, and (when
    the answers list no switches.fabric) the leaves' uplinks and the spine's ports."""
    from wizard.answers.profiles import is_switched
    from wizard.answers.switches import FabricSwitch
    from wizard.engine.session import check_faults, demo_state_dir
    from wizard.lab.demo_switches import alias_tables, demo_lab, fabric_switches
    from wizard.switchcfg.portmap import PortMap, parse_show_alias

    if not is_switched(args.profile):
        return fabric, {}
    state_dir = demo_state_dir(answers, args.state_dir, reset=False)
    lab = demo_lab(answers, state_dir, args.profile, args.switch_os, check_faults(answers, args.fault))
    maps = {
        name: PortMap(parse_show_alias(text), None, f"{name}: `show interfaces alias` of the simulated switch")
        for name, text in alias_tables(lab).items()
    }
    if not fabric:
        fabric = [
            FabricSwitch(name=s.name, role=s.role, ports=list(s.uplinks)) for s in fabric_switches(lab) if s.uplinks
        ]
        print(f"[simulated] uplinks and spine ports from the simulated fabric ({len(fabric)} switches)")
    return fabric, maps


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
