"""`roce-wizard export k8s`: NVIDIA Network Operator resources and RDMA test pods from the answers and facts."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

from wizard.errors import EXIT_FAILED, EXIT_OK

FACT_STAGES = ["discovery", "network"]


def k8s_cmd(argv: list[str]) -> int:
    """Entry point for `roce-wizard export k8s ARGS` (argv: what follows `k8s`)."""
    from wizard.cli.commands import _parser

    p = _parser("export k8s", "Write NVIDIA Network Operator resources and RDMA test pods for the rails.")
    p.add_argument("--answers", type=Path, help="answers file (default with --demo: the reference example)")
    p.add_argument("--demo", action="store_true", help="read the facts from the SIMULATED cluster on 127.0.0.1")
    p.add_argument("--state-dir", type=Path, help="use the facts saved here (discovery and network stages)")
    p.add_argument("-o", "--out", type=Path, required=True, help="directory to write the manifests to")
    p.add_argument(
        "--driver-container",
        action="store_true",
        help="let the operator install the DOCA driver container (only where no host already runs a driver)",
    )
    p.add_argument("--fault", action="append", default=[], help="(--demo) inject a fault")
    from wizard.answers.profiles import add_profile_option, check_profile, demo_answers

    add_profile_option(p)
    args = p.parse_args(argv)
    from wizard.answers.model import load_answers
    from wizard.errors import UsageError

    if args.answers is None and not args.demo:
        raise UsageError("export k8s needs --answers FILE (or --demo)")
    args.profile = check_profile(args.profile, args.demo)
    answers = load_answers(args.answers or demo_answers(args.profile))
    facts = saved_facts(answers, args.state_dir) if not args.demo else None
    if facts is None:
        from wizard.cli.commands import _run_async

        facts = _run_async(_probe(args, answers))
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
