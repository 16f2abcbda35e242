"""`roce-wizard export k8s`: NVIDIA Network Operator resources and RDMA test pods from the answers and facts."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

from wizard.cli.options import add_target_options, answers_path, check_target, command_parser, path_arg, run_async
from wizard.errors import EXIT_FAILED, EXIT_OK

FACT_STAGES = ["discovery", "network"]


def parser() -> argparse.ArgumentParser:
    """The command's options (also read by tests/engine/test_cli_options.py)."""
    p = command_parser("export k8s", "Write NVIDIA Network Operator resources and RDMA test pods for the rails.")
    add_target_options(p, state_dir="use the facts saved here (discovery and network stages)")
    p.add_argument(
        "-o", "--out", type=path_arg, required=True, metavar="DIR", help="directory to write the manifests to"
    )
    p.add_argument(
        "--driver-container",
        action="store_true",
        help="let the operator install the DOCA driver container (only where no host already runs a driver)",
    )
    return p


def main(argv: list[str]) -> int:
    """`roce-wizard export k8s ARGS` (argv: what follows `k8s`)."""
    args = parser().parse_args(argv)
    check_target(args, "export k8s")
    from wizard.answers.model import load_answers

    answers = load_answers(answers_path(args))
    facts = saved_facts(answers, args.state_dir) if not args.demo else None
    if facts is None:
        facts = run_async(_probe(args, answers))
    return export(answers, facts, args.out, driver_container=args.driver_container)


def saved_facts(answers: Any, state_dir: Path | None) -> dict[str, dict[str, Any]] | None:
    """Facts of every host from the state directory, or None when any host lacks discovery facts."""
    from wizard.engine.state import StateStore
    from wizard.paths import default_state_dir

    store = StateStore(state_dir or default_state_dir(answers.cluster.name))
    facts = {h.name: store.load_facts(h.name) for h in answers.hosts}
    return facts if all(f.get("discovery") for f in facts.values()) else None


async def _probe(args: argparse.Namespace, answers: Any) -> dict[str, dict[str, Any]]:
    """Read discovery and network facts from the hosts (or the simulated ones) as `plan` does; changes nothing."""
    from wizard.engine.session import session_for_args

    async with session_for_args(args, answers) as session:
        if args.demo:
            # The simulated hosts start bare: install the driver the answers ask for first, as an operator exports
            # after the ofed stage (DOCA renames the RDMA devices; k8s_checks refuses the inbox names otherwise).
            from wizard.engine.runner import RunOptions

            await session.runner.run(RunOptions(stages=["discovery", "ofed"], allow_disruptive=True, demo=True))
        await session.runner.plan_all(FACT_STAGES)
        return {h.name: dict(session.runner.facts.get(h.name, {})) for h in answers.hosts}


def export(answers: Any, facts: dict[str, dict[str, Any]], out: Path, *, driver_container: bool = False) -> int:
    """Check the pitfalls, then write the manifests; a refusal writes nothing and exits 1."""
    from wizard.export.k8s_checks import check
    from wizard.export.k8s_inputs import gather
    from wizard.export.k8s_write import build, write

    inputs = gather(answers, facts)
    findings = check(inputs, driver_container=driver_container)
    for warning in findings.warnings:
        sys.stderr.write(f"roce-wizard: warning: {warning}\n")
    if findings.refusals:
        for refusal in findings.refusals:
            sys.stderr.write(f"roce-wizard: export k8s refused: {refusal}\n")
        return EXIT_FAILED
    manifests = build(inputs, driver_container=driver_container)
    written = write(out, inputs, findings, manifests)
    sys.stderr.write(f"roce-wizard: wrote {len(written)} files to {out}/ (apply order in {out}/README.md)\n")
    return EXIT_OK
