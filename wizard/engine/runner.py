"""The runner: stages in order, hosts in parallel (bounded), failures isolated per host, state saved as it goes."""

from __future__ import annotations

import asyncio
import contextlib
import secrets
import traceback
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from wizard.answers.model import Answers
from wizard.engine.apply import BACKUP_ROOT, Guard, StepFailed, apply_change
from wizard.engine.apply_resume import (
    drop_missing_backups,
    forget_what_failed_to_stay,
    record_intent,
    record_written,
    settle_reverts,
)
from wizard.engine.events import HOST_READ, PROBING, EventBus
from wizard.engine.host_lock import HostHolder, HostLock
from wizard.engine.logs import HostLogs
from wizard.engine.outcomes import INTERRUPT_EXIT, Interruption, StageOutcome
from wizard.engine.plan_ahead import PlanAhead
from wizard.engine.prefetch import ProbeLog, explain_misses, read_stage
from wizard.engine.state import RunRecord, StateStore, now
from wizard.engine.step import CheckItem, ClusterView, HostPlan, Impact, ProbeContext, Step
from wizard.engine.stored_facts import StoredFacts
from wizard.errors import StateError
from wizard.executors.base import CommandResult, Executor, ExecutorError, Stream

Confirm = Callable[[str, HostPlan], Awaitable[bool]]


@dataclass(slots=True)
class RunOptions:
    stages: list[str]
    allow_disruptive: bool = False
    reboot_timeout_s: float = 900.0
    confirm: Confirm | None = None
    demo: bool = False
    answers_path: str | None = None
    guard: Guard | None = field(default_factory=Guard)


class Runner(PlanAhead):
    """Drives steps over hosts through executors; the TUI and headless mode both use it."""

    def __init__(
        self,
        answers: Answers,
        steps: Sequence[Step],
        executors: dict[str, Executor],
        store: StateStore,
        bus: EventBus,
        logs: HostLogs,
    ) -> None:
        self.answers = answers
        self.steps = {step.id: step for step in steps}
        self.order = [step.id for step in steps]
        self.executors = executors
        self.store = store
        self.bus = bus
        self.logs = logs
        self.facts = StoredFacts(store, [h.name for h in answers.hosts])  # each host's read on first use
        self._limit = asyncio.Semaphore(answers.ssh.max_parallel_hosts)
        self._out_of_run: dict[str, str] = {}  # host -> why later stages skip it
        # Hosts being changed right now. Only their commands are saved as they start and end (the record of what
        # was in flight when the wizard died); probes change nothing, so their facts are saved once per stage
        # instead of twice per command (two fsyncs per probe made the state the bottleneck at 1,000 hosts).
        self._changing: set[str] = set()
        self.probe_log = ProbeLog(store.root)
        # The state directory refused a write (full, read-only): no host starts anything more, and the run ends
        # with that error once the hosts already at work have stopped at their next write.
        self._state_error: StateError | None = None
        # Names this run's backup folder. The random tail keeps a run resumed within the same second (a kill and an
        # automatic retry) from copying the wizard's own version over the original's backup in the same folder.
        self.run_id = now().replace(":", "").replace("-", "") + "-" + secrets.token_hex(3)
        self.stop_reason: str | None = None  # set by whoever cancels a run: "SIGTERM", "SIGINT", "quit"
        self.interruption: Interruption | None = None
        self._stage: str | None = None  # the stage run_stage is in

    # -- listener protocol for executors ----------------------------------------------------------------
    def command_started(self, host: str, command: str) -> None:
        if self._keeps_record(host):
            record = self.store.host(host)
            record.command_in_flight = command
            if host in self._changing:  # a crash mid-change must say which command; a read-only probe need not
                self.store.save_host(host)
        self.logs.command(host, command)
        self.bus.emit("command", host=host, command=command)

    def _keeps_record(self, host: str) -> bool:
        """Whether a command on ``host`` goes into its record: during a stage (an interruption names the command in
        flight) or a change. Outside them (bwtest's tests, a flap check) nothing reads it, and loading a fleet's
        host records to note each command held 200 KB per host (15 MiB of 116 on a 96-host bwtest)."""
        return self._stage is not None or host in self._changing

    def output_line(self, host: str, stream: Stream, line: str) -> None:
        self.logs.line(host, stream, line)
        self.bus.emit("output", host=host, stream=stream, line=self.logs.redact(line))

    def output_lines(self, host: str, stream: Stream, lines: list[str]) -> None:
        """A probe's whole output from a batch: one log write and one ``output`` event whose ``lines`` holds them
        all (a live command's lines still come one event each, with ``line``)."""
        if not lines:
            return
        self.logs.lines(host, stream, lines)
        self.bus.emit("output", host=host, stream=stream, lines=self.logs.redact("\n".join(lines)).split("\n"))

    def command_finished(self, host: str, command: str, result: CommandResult | None, error: str | None) -> None:
        if self._keeps_record(host):
            record = self.store.host(host)
            record.command_in_flight = None
            record.last_command = command
            if host in self._changing:
                self.store.save_host(host)
        self.logs.finished(host, result, error)
        self.bus.emit(
            "command_done",
            host=host,
            command=command,
            exit_status=None if result is None else result.exit_status,
            error=error,
        )

    # -- whole runs ---------------------------------------------------------------------------------------
    async def run(self, options: RunOptions) -> int:
        """Run the selected stages; returns 0 when every stage is verified on every host, else 1."""
        run = RunRecord(
            cluster=self.answers.cluster.name,
            answers_digest=self.answers.digest(),
            answers_path=options.answers_path,
            demo=options.demo,
            hosts=[h.name for h in self.answers.hosts],
            started_at=now(),
        )
        self.store.save_run(run)
        self.bus.emit("run_started", cluster=run.cluster, hosts=run.hosts, stages=options.stages, demo=options.demo)
        ok = True
        try:
            await self._settle_interrupted(options)
            if "discovery" not in options.stages:
                await self._refresh_discovery()
            for stage in options.stages:
                outcome = await self.run_stage(stage, options)
                if getattr(self.steps[stage], "available", True):
                    ok = ok and all(status == "done" for status in outcome.statuses.values())
        except asyncio.CancelledError:
            stopped = self.record_interruption(self.stop_reason or "cancelled")
            run.interrupted = stopped.summary()
            raise
        except StateError as exc:
            self._state_error = self._state_error or exc
            raise  # the run record would not be written either; the error itself says what to do
        finally:
            self._stage = None  # the run's stages are over: later commands (bwtest's tests) are no stage's
            run.finished_at = now()
            run.exit_code = INTERRUPT_EXIT.get(self.stop_reason or "", 1) if run.interrupted else 0 if ok else 1
            if self._state_error is None:
                self.store.save_run(run)
                self.bus.emit(
                    "run_finished", exit_code=run.exit_code, state_dir=str(self.store.root), interrupted=run.interrupted
                )
        return run.exit_code

    async def _settle_interrupted(self, options: RunOptions) -> None:
        """On hosts where an earlier run died mid-stage, disarm the automatic reverts it left armed."""
        scale = options.guard.clock_scale if options.guard else 1.0

        async def settle(host: str) -> None:
            try:
                for line in await settle_reverts(self.executors[host], scale):
                    self.logs.write(host, f"[resume] automatic revert {line}")
            except ExecutorError:
                pass  # an unreachable host fails in its first probe, with the reason

        stale = [
            h.name
            for h in self.answers.hosts
            if any(r.status in ("running", "interrupted") for r in self.store.host(h.name).stages.values())
        ]
        await asyncio.gather(*(self._bounded(settle(h)) for h in stale))

    def view(self) -> ClusterView:
        return ClusterView(self.answers, self.facts)

    # -- one stage ----------------------------------------------------------------------------------------
    async def run_stage(self, stage: str, options: RunOptions) -> StageOutcome:
        step = self.steps[stage]
        outcome = StageOutcome(stage)
        hosts = [h.name for h in self.answers.hosts]
        self._stage = stage
        self.bus.emit("stage_started", stage=stage, title=step.title)
        if not getattr(step, "available", True):
            for host in hosts:
                self._finish(stage, host, "skipped", step.skip_reason(), outcome)  # type: ignore[attr-defined]
            self.bus.emit("stage_finished", stage=stage, statuses=dict(outcome.statuses))
            return outcome
        for host in hosts:
            if host in self._out_of_run:
                self._finish(stage, host, "skipped", self._out_of_run[host], outcome)
        active = [h for h in hosts if h not in self._out_of_run]
        for host in active:
            self._set(stage, host, "running", PROBING)
        await self._probe_hosts(stage, active, outcome)
        view = self.view()
        to_apply: dict[str, HostPlan] = {}
        for host in [h for h in active if h not in outcome.statuses]:
            plan = self._plan(stage, view, host)
            outcome.plans[host] = plan
            if plan.blockers:
                self._finish(stage, host, "failed", "; ".join(plan.blockers), outcome)
            elif not plan.empty:
                if await self._allowed(stage, plan, options):
                    to_apply[host] = plan
                else:
                    why = (
                        f"{plan.impact.value} changes waiting for confirmation: "
                        + "; ".join(c.summary for c in plan.changes if c.impact != Impact.SAFE)
                        + f" (re-run with --yes to apply: roce-wizard --answers FILE --from {stage} --yes)"
                    )
                    self._finish(stage, host, "pending", why, outcome)
        if to_apply:
            await self._apply_in_waves(stage, step, view, to_apply, options, outcome)
            changed = [h for h in to_apply if h not in outcome.statuses]
            if stage != "discovery" and "discovery" in self.steps:
                await self._refresh_discovery_after(stage, changed, outcome)
            await self._probe_hosts(stage, [h for h in changed if h not in outcome.statuses], outcome)
        remaining = [h for h in active if h not in outcome.statuses]
        await self._cluster_probe(stage, remaining, outcome)
        self._verify(stage, [h for h in remaining if h not in outcome.statuses], outcome)
        for host, status in outcome.statuses.items():
            if status != "done" and host not in self._out_of_run:
                self._out_of_run[host] = f"stage {stage} is {status} on this host"
        self.bus.emit("stage_finished", stage=stage, statuses=dict(outcome.statuses))
        return outcome

    async def _apply_in_waves(
        self,
        stage: str,
        step: Step,
        view: ClusterView,
        to_apply: dict[str, HostPlan],
        options: RunOptions,
        outcome: StageOutcome,
    ) -> None:
        """Apply the plans, all at once or in the step's waves; a later wave is probed and planned again from what
        the earlier ones left (its first plan was made before they ran). ``to_apply`` ends as what was applied."""
        waves = [w for w in step.apply_waves(view, list(to_apply)) if w]
        applied: list[str] = []
        for number, wave in enumerate(waves):
            if number:
                # What the earlier waves left (e.g. the lock file a head wrote) and this wave's hosts, read again.
                again = [h for h in applied + wave if h not in outcome.statuses]
                await self._probe_hosts(stage, again, outcome)
                fresh = self.view()
                for host in [h for h in wave if h not in outcome.statuses]:
                    plan = self._plan(stage, fresh, host)
                    outcome.plans[host] = plan
                    if plan.blockers:
                        self._finish(stage, host, "failed", "; ".join(plan.blockers), outcome)
                    elif plan.empty:
                        to_apply.pop(host, None)  # an earlier wave made it right already
                    elif await self._allowed(stage, plan, options):
                        to_apply[host] = plan
                    else:
                        to_apply.pop(host, None)
                        waiting = "; ".join(c.summary for c in plan.changes)
                        why = f"{plan.impact.value} changes waiting for confirmation (re-run with --yes): {waiting}"
                        self._finish(stage, host, "pending", why, outcome)
            ready = [h for h in wave if h in to_apply and h not in outcome.statuses]
            await asyncio.gather(*(self._bounded(self._apply(stage, h, to_apply[h], options, outcome)) for h in ready))
            self._check_state()
            applied += ready

    async def _allowed(self, stage: str, plan: HostPlan, options: RunOptions) -> bool:
        if plan.impact == Impact.SAFE or options.allow_disruptive:
            return True
        if options.confirm is not None:
            return await options.confirm(stage, plan)
        return False

    def _plan(self, stage: str, view: ClusterView, host: str) -> HostPlan:
        try:
            plan = self.steps[stage].plan(view, host)
        except Exception as exc:  # noqa: BLE001 - a bug in one plan must not take down other hosts
            self.logs.write(host, traceback.format_exc())
            plan = HostPlan(stage=stage, host=host, blockers=[f"internal error while planning: {exc!r}"])
        self.bus.emit("plan", stage=stage, host=host, **plan.payload())
        return plan

    async def _probe_hosts(self, stage: str, hosts: list[str], outcome: StageOutcome) -> None:
        await asyncio.gather(*(self._bounded(self._probe(stage, host, outcome)) for host in hosts))
        self._check_state()

    async def _read_host(self, stage: str, host: str) -> dict[str, Any]:
        """The stage's probe on one host, its read-only commands fetched in one exec (wizard/engine/prefetch.py)."""
        entry = next(h for h in self.answers.hosts if h.name == host)
        executor, step = self.executors[host], self.steps[stage]
        facts = self.facts.setdefault(host, {})
        found, reader = await read_stage(step, ProbeContext(entry, executor, self.answers, facts), self.probe_log)
        if reader.misses:
            why = explain_misses(reader.misses, step.dependent_probes)
            self.logs.write(host, f"[{stage}] {len(reader.misses)} probe(s) took a round trip of their own (not in "
                            f"the batch; learned for the next reads): {why}")  # fmt: skip
        return found

    async def _probe(self, stage: str, host: str, outcome: StageOutcome) -> None:
        try:
            self.facts.setdefault(host, {})[stage] = await self._read_host(stage, host)
            self.store.save_facts(host, self.facts[host])
            if stage == "discovery" and self.facts[host][stage].get("simulated"):
                self.bus.emit("host_simulated", host=host)
            record = self.store.host(host).stage(stage)
            if record.status == "running" and record.reason == PROBING:
                # The host's part of the first read is over: said at once, so a page on 1,000 hosts counts hosts
                # as they finish instead of showing all of them "probing" until the cross-host checks end the stage.
                self._set(stage, host, "running", HOST_READ)
        except ExecutorError as exc:
            self._finish(stage, host, "failed", exc.detail, outcome)
        except StateError:
            raise  # the control machine's fault, not the host's: the run ends with it
        except Exception as exc:  # noqa: BLE001
            self.logs.write(host, traceback.format_exc())
            self._finish(stage, host, "failed", f"internal error while probing: {exc!r}", outcome)

    async def _refresh_discovery(self, only: list[str] | None = None) -> None:
        outcome = StageOutcome("discovery")
        hosts = [h.name for h in self.answers.hosts if only is None or h.name in only]
        for host in hosts:  # read again now: a host discovery could not read before (one rebooting) may answer
            if self._out_of_run.get(host, "").startswith("discovery "):
                del self._out_of_run[host]
        await self._probe_hosts("discovery", hosts, outcome)
        for host, status in outcome.statuses.items():
            self._out_of_run[host] = f"discovery {status}: {self.store.host(host).stage('discovery').reason}"

    async def _refresh_discovery_after(self, stage: str, hosts: list[str], outcome: StageOutcome) -> None:
        """Changes move what discovery sees (device names, addresses, GIDs, MTU); later plans need it fresh."""

        async def refresh(host: str) -> None:
            try:
                self.facts.setdefault(host, {})["discovery"] = await self._read_host("discovery", host)
                self.store.save_facts(host, self.facts[host])
            except ExecutorError as exc:
                self._finish(stage, host, "failed", f"re-reading the host after the changes: {exc.detail}", outcome)

        await asyncio.gather(*(self._bounded(refresh(host)) for host in hosts))
        self._check_state()

    async def _apply(self, stage: str, host: str, plan: HostPlan, options: RunOptions, outcome: StageOutcome) -> None:
        executor = self.executors[host]
        record = self.store.host(host).stage(stage)
        backup_dir = f"{BACKUP_ROOT}/{self.run_id}/{stage}"
        # Changing first: the record that changes are about to start is then fsynced before any runs (and each
        # command's in-flight record before it); a state directory that refuses it stops the host here.
        self._changing.add(host)
        self._set(stage, host, "running", f"applying {len(plan.changes)} change(s)")
        # One writer per host: another wizard (another control machine, another state directory) may be changing it.
        lock = HostLock(executor, HostHolder.this_process(self.store.root), note=lambda t: self.logs.write(host, t))
        try:
            for change in plan.changes:
                await lock.ensure()  # before each change: a reboot or a dropped connection ended the last hold
                self.bus.emit("change_started", stage=stage, host=host, summary=change.summary, impact=change.impact)
                intent = record_intent(record, change, backup_dir)
                self.store.save_host(host)  # on disk before the change starts: a kill mid-change loses nothing
                try:
                    written = await apply_change(
                        executor, change, backup_dir, options.reboot_timeout_s, options.guard, intent.unbacked
                    )
                except (ExecutorError, StepFailed):
                    with contextlib.suppress(ExecutorError):  # what never happened (or was reverted) is not undone
                        await forget_what_failed_to_stay(executor, record, intent)
                    self.store.save_host(host)
                    raise
                await drop_missing_backups(executor, record, record_written(record, written, intent))
                record.changes_applied += 1
                self.store.save_host(host)
        except (ExecutorError, StepFailed) as exc:
            message = exc.detail if isinstance(exc, ExecutorError) else str(exc)
            self._finish(stage, host, "failed", message, outcome)
        except StateError:
            raise  # the control machine's fault: the host stopped before its next command, with its record
        except Exception as exc:  # noqa: BLE001
            self.logs.write(host, traceback.format_exc())
            self._finish(stage, host, "failed", f"internal error while applying: {exc!r}", outcome)
        finally:
            await lock.release()
            self._changing.discard(host)

    async def _cluster_probe(self, stage: str, hosts: list[str], outcome: StageOutcome) -> None:
        if not hosts:
            return
        view = ClusterView(self.answers, {h: self.facts.get(h, {}) for h in hosts})
        try:
            extra = await self.steps[stage].cluster_probe(view, {h: self.executors[h] for h in hosts})
        except ExecutorError as exc:
            self._finish(stage, exc.host, "failed", exc.detail, outcome)
            return
        except StateError:
            raise
        except Exception as exc:  # noqa: BLE001
            for host in hosts:
                self.logs.write(host, traceback.format_exc())
                self._finish(stage, host, "failed", f"internal error in cross-host tests: {exc!r}", outcome)
            return
        for host, facts in extra.items():
            self.facts.setdefault(host, {}).setdefault(stage, {})["cluster"] = facts
            self.store.save_facts(host, self.facts[host])

    def _verify(self, stage: str, hosts: list[str], outcome: StageOutcome) -> None:
        step = self.steps[stage]
        view = self.view()
        try:
            cluster = step.cluster_checks(view)
        except Exception as exc:  # noqa: BLE001
            cluster = {
                h: [CheckItem(id="cluster", title="cross-host checks", status="fail", evidence=repr(exc))]
                for h in hosts
            }
        for host in hosts:
            try:
                items = step.checks(view, host) + cluster.get(host, [])
            except Exception as exc:  # noqa: BLE001
                self.logs.write(host, traceback.format_exc())
                items = [CheckItem(id="internal", title="verification", status="fail", evidence=repr(exc))]
            try:
                lines = step.describe(view, host)
            except Exception:  # noqa: BLE001 - a summary is a courtesy, never a reason to fail
                lines = []
            if lines:
                self.bus.emit("summary", stage=stage, host=host, lines=lines)
            record = self.store.host(host).stage(stage)
            record.checks = items
            for item in items:
                self.bus.emit("check", stage=stage, host=host, **item.model_dump())
            failed = [i for i in items if i.status == "fail"]
            if failed:
                reason = "; ".join(f"{i.title}: {i.evidence}" + (f" (fix: {i.fix})" if i.fix else "") for i in failed)
                self._finish(stage, host, "failed", reason, outcome)
            else:
                plan = outcome.plans.get(host)
                applied = record.changes_applied if plan and not plan.empty else 0
                reason = "verified" + (
                    f" after {applied} change(s)"
                    if applied
                    else f"; {plan.noop_reason}"
                    if plan and plan.noop_reason
                    else "; nothing to change"
                )
                self._finish(stage, host, "done", reason, outcome)

    # -- bookkeeping --------------------------------------------------------------------------------------
    def record_interruption(self, why: str) -> Interruption:
        """The run was stopped: every host still running the current stage is saved as ``interrupted``, with the
        command that was in flight (a resume re-probes and re-plans it, as after a crash)."""
        stopped = Interruption(why, self._stage)
        for host in [h.name for h in self.answers.hosts] if self._stage else []:
            record = self.store.host(host)
            stage = record.stage(self._stage)  # type: ignore[arg-type]
            if stage.status != "running":
                continue
            stopped.hosts.append(host)
            command = record.command_in_flight
            if command:
                stopped.in_flight[host] = command
            doing = f"`{command}` was running" if command else f"it was {stage.reason or 'running'}"
            stage.finished_at = now()
            self._changing.add(host)  # durable: this record is what the next run and `status` read
            self._set(self._stage, host, "interrupted", f"interrupted by {why}: {doing}")  # type: ignore[arg-type]
            self._changing.discard(host)
        self.interruption = stopped
        return stopped

    async def _bounded(self, work: Awaitable[None]) -> None:
        async with self._limit:
            if self._state_error is not None:  # the state directory refused a write: start nothing more
                getattr(work, "close", lambda: None)()
                return
            try:
                await work
            except StateError as exc:
                # The other hosts finish the command they are in and stop at their next write (each change's
                # command is recorded before it runs); cancelling them would abandon commands mid-way.
                self._state_error = self._state_error or exc

    def _check_state(self) -> None:
        if self._state_error is not None:
            raise self._state_error

    def _hosts_in_run(self) -> list[str]:
        return [h.name for h in self.answers.hosts if h.name not in self._out_of_run]

    def _set(self, stage: str, host: str, status: str, reason: str) -> None:
        record = self.store.host(host).stage(stage)
        if status == "running" and record.status != "running":
            record.started_at = now()
            record.finished_at = None
            record.changes_applied = 0
        record.status = status  # type: ignore[assignment]
        record.reason = reason
        # What a change did (backups, files created, the command in flight) is saved durably while the host is being
        # changed; a status alone is not worth an fsync that stalls every host (stages are re-verified on resume).
        self.store.save_host(host, durable=host in self._changing)
        self.bus.emit("host_status", stage=stage, host=host, status=status, reason=reason)

    def _finish(self, stage: str, host: str, status: str, reason: str, outcome: StageOutcome) -> None:
        if host in outcome.statuses:
            return
        outcome.statuses[host] = status
        record = self.store.host(host).stage(stage)
        record.finished_at = now()
        self._set(stage, host, status, reason)
