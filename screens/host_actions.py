"""Work on the hosts from the wizard: starting an action, the confirmations it asks, and what the screen keeps of it.

The hosts are worked on in the engine's own thread (screens/engine_thread.py); what runs here only starts the work,
waits for it and hands its outcome to the widgets.
"""

from __future__ import annotations

import asyncio
from typing import TYPE_CHECKING, Any

from textual import work
from textual.worker import Worker, WorkerState

from screens.dialogs import AskSecret, ConfirmPlan, ConfirmRollback, Question
from screens.engine_link import NO_HOSTS
from wizard.engine.conn_test import ConnectionReport
from wizard.engine.host_action import HostAction, do_host_action
from wizard.engine.interactive import skip_stage
from wizard.engine.rollback import rollback_plans
from wizard.engine.session import sudo_password
from wizard.engine.step import HostPlan
from wizard.engine.worker_client import WorkerCrashed, WorkerStopped, request_for
from wizard.errors import AnswersError, WizardError

if TYPE_CHECKING:
    from screens.app import WizardApp

    _Base = WizardApp
else:
    _Base = object


class HostActions(_Base):
    """Mixed into the app: apply, verify, plan, roll back, skip and the connection test, one at a time."""

    def start_action(self, action: str, stage: str | None) -> None:
        if not self.engine.host_names:  # an empty bring-up: nothing to run on yet
            self.notify(NO_HOSTS, severity="warning")
            return
        if self.busy:
            self.notify(f"busy: {self.busy} is still running", severity="warning")
            return
        if action == "skip" and stage:
            self.push_screen(
                Question(f"Skip {stage}?", "It is recorded as skipped; a later run re-checks it."),
                lambda yes: self._skip(stage) if yes else None,
            )
            return
        if action == "rollback":
            self._ask_rollback(stage)
            return
        self.busy = f"{action} {stage}" if stage else "connection test"
        self._dirty = True
        self._show_busy()
        self.host_work(action, stage)

    def _ask_rollback(self, stage: str | None) -> None:
        if stage not in {s.id for s in self.engine.steps}:
            self.notify("open a stage's page to roll that stage back", severity="warning")
            return
        plans = rollback_plans(self.engine.store, self.engine.host_names, [stage])
        if all(change is None for change in plans.values()):
            self.notify(f"nothing to roll back: {stage} changed no file on any host", severity="warning")
            return

        def answered(yes: bool | None) -> None:
            if yes:
                self.busy = f"rollback {stage}"
                self._dirty = True
                self._show_busy()
                self.host_work("rollback", stage)

        self.push_screen(ConfirmRollback(stage, plans, simulated=self.engine.demo), answered)

    def _skip(self, stage: str) -> None:
        skip_stage(self.engine.store, stage, self.engine.host_names, "skipped by the operator")
        self._load_saved()
        self._dirty = True
        if self.main is not None:
            self.main.action_go(1)

    @work(group="engine", exit_on_error=False, description="host work")
    async def host_work(self, action: str, stage: str | None) -> None:
        try:
            if not await self._have_sudo_password():
                self.notify("no sudo password: nothing was run", severity="warning")
                return
            if action == "apply" and stage:
                self.plans.pop(stage, None)
                self._confirmed_all.discard(stage)
            if action == "test":
                self.conn_reports = {}
            if self.engine.worker_process:
                outcome = await self._in_worker(action, stage)
            else:  # on the engine's thread; this worker (its cancel included) waits for it
                outcome = await self.engine_thread.run(self._on_hosts(action, stage))
            if action == "plan" and stage and outcome is not None:
                self.plans[stage] = outcome
            elif action == "rollback" and stage and outcome is not None:
                hosts, failed = outcome
                self._load_saved()
                self.notify(
                    f"{stage} rolled back on {', '.join(hosts)}"
                    if not failed
                    else f"rollback FAILED on {', '.join(failed)}: see the host logs",
                    severity="information" if not failed else "error",
                    timeout=8,
                )
            elif action == "test":
                self.apply_events()  # the last reports
                bad = [r.host for r in self.conn_reports.values() if not r.ok]
                self.notify(
                    "every host answers, logs in and runs sudo" if not bad else f"not ready: {', '.join(bad)}",
                    severity="information" if not bad else "error",
                )
        except (WizardError, AnswersError, WorkerStopped, WorkerCrashed) as exc:
            self.notify(str(exc), severity="error", timeout=10)
        finally:
            self.busy = None
            self._dirty = True
            self._redrawn_at = 0.0  # the outcome is drawn on the next tick, not throttled
            self._show_busy()
            self.heap_after_work()
            if action in ("apply", "verify") and self.main is not None and self.main.page == stage:
                self.main.show_tab("checks")

    async def _in_worker(self, action: str, stage: str | None) -> Any:
        """In an engine process of its own (wizard/engine/worker.py): its events join the same inbox, its questions
        are asked here, its outcome comes back decoded."""
        engine = self.engine
        targets = await self.engine_thread.run(engine.prepare())  # the demo's lab lives on the engine's loop
        request = request_for(
            action,
            stage,
            state_dir=engine.state_dir,
            answers_path=engine.answers_path,
            demo=engine.demo,
            password=engine.password,
            targets=targets if engine.demo else None,  # real hosts' targets are built there, bastions and all
        )
        return await self.engine_process.run(
            request, on_event=self.receive_event, on_report=self._connection_report, ask=self._ask_confirm
        )

    async def _on_hosts(self, action: str, stage: str | None) -> Any:
        """On the engine's loop: open a session, do the action, close it; what the screen needs is returned (the
        plans, a rollback's hosts) and every widget is left to the caller."""
        work = HostAction(action, stage, self.engine.demo, str(self.engine.answers_path))
        return await do_host_action(
            work,
            self.engine.open,
            self.engine.state_dir,
            confirm=self._confirm,
            on_report=self._connection_report,
            on_runner=self._set_runner,
        )

    def _set_runner(self, runner: Any) -> None:
        self._runner = runner

    def _connection_report(self, report: ConnectionReport) -> None:
        """One host answered the connection test (engine thread): its row is drawn on the next tick, not after the
        last host."""
        self._reports.append(report)

    async def _have_sudo_password(self) -> bool:
        """Real hosts with ssh.sudo: password need it once: from the environment, else from a dialog."""
        answers = self.engine.answers
        if self.engine.demo or answers.ssh.sudo != "password" or self.engine.password:
            return True
        try:
            self.engine.password = sudo_password(answers, interactive=False)
        except WizardError:
            self.engine.password = await self.push_screen_wait(AskSecret())
        return bool(self.engine.password)

    def _show_busy(self) -> None:
        """What runs now, in the header, visible from every page and dialog."""
        cluster = self.engine.cluster_label
        base = f"SIMULATED CLUSTER · {cluster}" if self.engine.demo else cluster
        self.sub_title = base + (f" · running: {self.busy}" if self.busy else "")

    async def _confirm(self, stage: str, plan: HostPlan) -> bool:
        """Called by the runner on the engine's loop: the operator answers in a dialog on the screen's loop."""
        return await self.engine_thread.ask_ui(self._ask_confirm(stage, plan))

    async def _ask_confirm(self, stage: str, plan: HostPlan) -> bool:
        if stage in self._confirmed_all:
            return True
        answered: asyncio.Future[str | None] = asyncio.get_running_loop().create_future()
        self.push_screen(
            ConfirmPlan(stage, plan, simulated=self.engine.demo),
            lambda answer: None if answered.done() else answered.set_result(answer),
        )
        answer = await answered
        if answer == "all":
            self._confirmed_all.add(stage)
        return answer in ("yes", "all")

    def on_worker_state_changed(self, event: Worker.StateChanged) -> None:
        if event.state == WorkerState.ERROR and event.worker.error is not None:
            self.busy = None
            self._dirty = True
            self.notify(f"{event.worker.description} failed: {event.worker.error!r}", severity="error", timeout=15)
