"""`roce-wizard status`: saved progress per stage and host, read from the state directory only."""

from __future__ import annotations

import argparse
import json
import sys

from wizard.answers.profiles import demo_answers
from wizard.cli.options import add_json_option, add_target_options, check_target, command_parser
from wizard.engine.stage_order import STAGE_IDS
from wizard.errors import EXIT_OK, EXIT_USAGE

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing (bench/startup.py)
if TYPE_CHECKING:
    from pathlib import Path


def parser() -> argparse.ArgumentParser:
    """The command's options (also read by tests/engine/test_cli_options.py)."""
    p = command_parser("status", "Saved progress per stage and host, read from the state directory only.")
    add_target_options(
        p,
        faults=False,
        answers="find the state directory from this answers file's cluster name",
        demo="the SIMULATED cluster's state directory (with --profile: that profile's)",
        state_dir="the state directory to read (default: found from --answers or --demo, or the only one there is)",
    )
    add_json_option(p, "print the progress as one JSON document")
    return p


def main(argv: list[str]) -> int:
    args = parser().parse_args(argv)
    check_target(args, "status", required=False)
    state_dir = find_state_dir(args.state_dir, args.answers, demo=args.demo, profile=args.profile)
    if state_dir is None:
        return EXIT_USAGE
    return print_status(state_dir, as_json=args.json)


def find_state_dir(
    state_dir: Path | None, answers: Path | None, *, demo: bool, profile: str = "reference"
) -> Path | None:
    """The explicit directory, the one for the answers' cluster (with --demo and no answers: the profile's own
    answers), or the only one there is."""
    from wizard.paths import default_state_dir, default_state_root

    if state_dir is not None:
        return state_dir
    if answers is None and demo and profile != "reference":
        answers = demo_answers(profile)
    if answers is not None:
        from wizard.answers.model import load_answers

        return default_state_dir(load_answers(answers).cluster.name, demo=demo)
    root = default_state_root()
    found = sorted(p for p in root.glob("*") if (p / "run.json").exists()) if root.is_dir() else []
    if demo:
        found = [p for p in found if p.name.startswith("demo-")]
    if len(found) == 1:
        return found[0]
    if not found:
        sys.stderr.write(f"roce-wizard status: no saved progress under {root}; use --state-dir DIR\n")
    else:
        names = ", ".join(p.name for p in found)
        sys.stderr.write(f"roce-wizard status: several clusters under {root} ({names}); use --state-dir or --answers\n")
    return None


def print_status(state_dir: Path, *, as_json: bool) -> int:
    from wizard.engine.state import StateStore

    store = StateStore(state_dir)
    run = store.load_run()
    if run is None:
        sys.stderr.write(f"roce-wizard status: no saved progress in {state_dir}\n")
        return 2
    hosts = run.hosts or store.host_names()
    table = {h: {s: store.host(h).stages.get(s) for s in STAGE_IDS} for h in hosts}
    if as_json:
        doc = {
            "state_dir": str(state_dir),
            "run": run.model_dump(mode="json"),
            "hosts": {
                h: {
                    "command_in_flight": store.host(h).command_in_flight,
                    "stages": {s: (r.model_dump(mode="json") if r else None) for s, r in stages.items()},
                }
                for h, stages in table.items()
            },
        }
        print(json.dumps(doc, indent=2))
        return EXIT_OK
    tag = " (SIMULATED cluster)" if run.demo else ""
    print(f"cluster {run.cluster}{tag}; state in {state_dir}")
    last = f"last run {run.started_at} -> {run.finished_at or 'interrupted'}"
    print(last + (f", exit {run.exit_code}" if run.exit_code is not None else ""))
    if run.interrupted:
        print(f"interrupted by {run.interrupted}; run the same command again to resume")
    width = max(len(h) for h in hosts) if hosts else 4
    print(f"{'host':<{width}}  " + "  ".join(f"{s:<11}" for s in STAGE_IDS))  # 11: "interrupted"
    for host, stages in table.items():
        cells = [(r.status if r else "pending") for r in stages.values()]
        print(f"{host:<{width}}  " + "  ".join(f"{c:<11}" for c in cells))
    for host, stages in table.items():
        in_flight = store.host(host).command_in_flight
        if in_flight:
            print(f"{host}: was running `{in_flight}` when the run stopped")
        for stage, record in stages.items():
            if record and record.status in ("failed", "pending", "running", "interrupted") and record.reason:
                print(f"{host} {stage}: {record.status}: {record.reason}")
    print(f"logs: {store.logs_dir}/<host>.log")
    return EXIT_OK
