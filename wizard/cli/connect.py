"""Reaching every host of a checked target for the commands that read the fabric (bwtest, doctor, metrics): answers,
one connected executor per host (simulated with --demo, the simulated hosts brought through discovery..roce first)
and the state directory."""

from __future__ import annotations

import argparse
import sys
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

from wizard.cli.options import answers_path

PREP_STAGES = ["discovery", "ofed", "network", "roce"]


@asynccontextmanager
async def connected_hosts(args: argparse.Namespace) -> AsyncIterator[tuple[Any, dict[str, Any], Path]]:
    """Answers, one connected executor per host (simulated with --demo) and the state directory."""
    from wizard.answers.model import load_answers
    from wizard.engine.session import demo_state_dir, production_targets, simulated_targets, sudo_password
    from wizard.paths import default_state_dir

    profile = args.profile  # checked by check_target before anything was loaded
    answers = load_answers(answers_path(args))
    password = sudo_password(answers, interactive=True)
    if args.demo:
        state_dir = demo_state_dir(answers, args.state_dir, reset=False)
        sys.stderr.write("[simulated] SIMULATED CLUSTER on 127.0.0.1; results are labelled simulated.\n")
        async with simulated_targets(answers, args.fault, password, state_dir, profile, args.switch_os) as targets:
            await prepare_demo(answers, targets, state_dir, password)
            async with _open(answers, targets, state_dir, password, simulated=True) as executors:
                yield answers, executors, state_dir
        return
    state_dir = args.state_dir or default_state_dir(answers.cluster.name, demo=False)
    async with _open(answers, production_targets(answers, password), state_dir, password, simulated=False) as ex:
        yield answers, ex, state_dir


@asynccontextmanager
async def _open(answers: Any, targets: Any, state_dir: Path, password: str | None, *, simulated: bool):  # type: ignore[no-untyped-def]
    from steps import all_steps
    from wizard.engine.events import EventBus
    from wizard.engine.session import open_session

    session = open_session(answers, all_steps(), targets, state_dir, EventBus(), simulated=simulated, password=password)
    try:
        yield dict(session.executors)
    finally:
        await session.close()


async def prepare_demo(answers: Any, targets: Any, state_dir: Path, password: str | None) -> None:
    """The simulated hosts start bare: bring them through stages discovery..roce first unless that is done
    (a fault injected into hosts configured earlier meets the saved configuration, as on real hosts)."""
    from steps import all_steps
    from wizard.cli.reporters import HumanReporter
    from wizard.engine.events import EventBus
    from wizard.engine.runner import RunOptions
    from wizard.engine.session import open_session
    from wizard.engine.state import StateStore

    store = StateStore(state_dir)
    done = all(store.stage_status(h.name, s) == "done" for h in answers.hosts for s in PREP_STAGES)
    if done:
        return
    sys.stderr.write(f"[simulated] preparing the simulated hosts first: stages {', '.join(PREP_STAGES)}\n")
    bus = EventBus()
    bus.subscribe(HumanReporter(simulated=True))
    session = open_session(answers, all_steps(), targets, state_dir, bus, simulated=True, password=password)
    try:
        code = await session.runner.run(RunOptions(stages=PREP_STAGES, allow_disruptive=True, demo=True))
    finally:
        await session.close()
    if code:
        sys.stderr.write("[simulated] preparation did not verify every host; testing what is there\n")
