"""One piece of host work the terminal wizard starts: apply, verify, plan or roll back a stage, or the connection test.

The same code runs whichever way the wizard carries it out: on the screen's engine thread (the simulated lab, whose
hosts live in the wizard's own process) or in an engine process of its own (real hosts: wizard/engine/worker.py).
What each action returns is what the screen keeps of it: the plans, or a rollback's hosts and failures.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from wizard.answers.model import Answers
from wizard.engine.apply import guard_for
from wizard.engine.conn_test import ConnectionReport, check_hosts
from wizard.engine.interactive import verify_stage
from wizard.engine.rollback import roll_back, rollback_plans
from wizard.engine.runner import Runner, RunOptions
from wizard.engine.session import Session, lab_time_scale
from wizard.engine.state_lock import lock_state_dir, unlock_state_dir
from wizard.engine.step import HostPlan

ACTIONS = ("apply", "verify", "plan", "rollback", "test")
Confirm = Callable[[str, HostPlan], Awaitable[bool]]
OnReport = Callable[[ConnectionReport], None]


@dataclass(frozen=True)
class HostAction:
    """What the operator asked for: ``action`` on ``stage`` (None for the connection test)."""

    action: str
    stage: str | None = None
    demo: bool = False
    answers_path: str = ""

    def __post_init__(self) -> None:
        if self.action not in ACTIONS:
            raise ValueError(f"unknown host action {self.action!r} (one of {', '.join(ACTIONS)})")
        if self.action != "test" and not self.stage:
            raise ValueError(f"{self.action} needs a stage")

    @property
    def changes_hosts(self) -> bool:
        return self.action in ("apply", "rollback")

    def options(self, answers: Answers, confirm: Confirm | None) -> RunOptions:
        assert self.stage is not None
        return RunOptions(
            stages=[self.stage],
            confirm=confirm,
            demo=self.demo,
            answers_path=self.answers_path or None,
            reboot_timeout_s=60.0 if self.demo else 900.0,
            guard=guard_for(answers, lab_time_scale() if self.demo else 1.0),
        )


async def do_host_action(
    work: HostAction,
    open_session: Callable[[], Awaitable[Session]],
    state_dir: Path,
    *,
    confirm: Confirm | None,
    on_report: OnReport,
    on_runner: Callable[[Runner | None], None] = lambda _r: None,
) -> Any:
    """Open a session, do ``work``, close it. Only apply and rollback hold the state directory's lock (one writer per
    directory, held while hosts change: an idle wizard blocks nobody). ``on_runner`` is told the runner while it
    works, so a quit can stop it."""
    if work.changes_hosts:
        lock_state_dir(state_dir)
    try:
        session = await open_session()
        on_runner(session.runner)
        try:
            return await _act(work, session, confirm, on_report)
        finally:
            on_runner(None)
            await session.close()
    finally:
        if work.changes_hosts:
            unlock_state_dir(state_dir)


async def _act(work: HostAction, session: Session, confirm: Confirm | None, on_report: OnReport) -> Any:
    runner, stage = session.runner, work.stage
    if work.action == "apply":
        await runner.run(work.options(session.answers, confirm))
    elif work.action == "verify":
        assert stage is not None
        await verify_stage(runner, stage)
    elif work.action == "plan":
        assert stage is not None
        outcomes = await runner.plan_all([stage])
        return outcomes[0].plans
    elif work.action == "rollback":
        assert stage is not None
        names = [h.name for h in session.answers.hosts]
        hosts = [h for h, change in rollback_plans(session.store, names, [stage]).items() if change]
        outcomes = await roll_back(session.store, session.executors, hosts, [stage], runner.bus)
        return hosts, [o.host for o in outcomes if o.status == "failed"]
    else:
        await check_hosts(
            session.executors,  # type: ignore[arg-type]
            session.answers.ssh.max_parallel_hosts,
            on_report,
            close_after=True,  # 1,000 sessions held until the last host answers cost memory for nothing
        )
    return None
