"""A rolling reboot that proves the configuration survives: reboot a wave, wait for a new boot, verify, explain.

Per wave: each host's boot id is read (/proc/sys/kernel/random/boot_id, a UUID the kernel draws at every boot,
proc(5)), ``systemctl reboot`` is sent, and the wizard reconnects until the boot id has changed. A reconnect that
lands on the old boot (sshd still answering while the host shuts down) is not a reboot, so the id, not the first
answer, says the host is back. Then the stages are verified on the wave's hosts only, from fresh probes.

What did not survive is explained by what the stage would do now: its plan, made from the fresh facts, names the
file that is missing or changed, the unit it would enable again, or the setting it would re-apply. Those are the
places that should have restored the setting at boot. A failed check with nothing to re-apply is not a persistence
problem (a cable, a switch) and is said so.

The run stops before the next wave when a host did not come back or lost anything: every later host would only be
taken down to show the same thing, or worse, the fleet would lose its service one wave at a time.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from wizard.engine.interactive import failed_checks, verify_stage, what_failed
from wizard.engine.step import ClusterView, HostPlan
from wizard.executors.base import ConnectionLost, ExecutorError, HostUnreachable

BOOT_ID = "/proc/sys/kernel/random/boot_id"
RECHECK_S = 2.0  # between reconnects that still found the old boot


@dataclass
class HostReboot:
    """One host's part of the rolling reboot."""

    host: str
    wave: int
    rebooted: bool = False  # the reboot was sent (False: the host could not be read or refused it)
    came_back: bool = False
    seconds: float | None = None  # from the reboot command to a login on the new boot
    last_seen: str = ""  # a host that did not come back: what the wizard last saw of it
    lost: dict[str, list[dict[str, Any]]] = field(default_factory=dict)  # stage -> failed checks
    causes: dict[str, list[str]] = field(default_factory=dict)  # stage -> what should have restored it

    @property
    def held(self) -> bool:
        return self.came_back and not self.lost


Emit = Callable[[str], None]


async def read_boot_id(executor: Any) -> str:
    result = await executor.run(["cat", BOOT_ID], timeout_s=30)
    return result.stdout.strip()


async def reboot_and_wait(executor: Any, result: HostReboot, timeout_s: float) -> None:
    """Reboot one host and wait for a login on its next boot; ``result`` says how it went."""
    started = time.monotonic()
    try:
        before = await read_boot_id(executor)
    except ExecutorError as exc:
        result.last_seen = f"could not be read before the reboot: {exc.detail}"
        return
    try:
        sent = await executor.run(["systemctl", "reboot"], sudo=True, timeout_s=30)
    except ConnectionLost:
        pass  # the connection going away is what a reboot looks like
    except ExecutorError as exc:
        result.last_seen = f"refused the reboot: {exc.detail}"
        return
    else:
        if not sent.ok:  # a polkit or sudo policy that forbids it, a system already shutting down
            result.last_seen = f"refused the reboot: {sent.first_error_line()}"
            return
    result.rebooted = True
    deadline = started + timeout_s
    while True:
        left = deadline - time.monotonic()
        if left <= 0:
            result.last_seen = f"did not come back within {timeout_s:g}s (it still answered on its old boot)"
            return
        try:
            await executor.wait_until_back(timeout_s=left)
            now_id = await read_boot_id(executor)
        except HostUnreachable as exc:
            result.last_seen = f"went down for the reboot and {exc.detail}: {console_hint(exc.detail)}"
            return
        except ExecutorError:
            continue  # dropped again while it shuts down: reconnect
        if now_id and now_id != before:
            result.came_back, result.seconds = True, time.monotonic() - started
            return
        await asyncio.sleep(RECHECK_S)


def console_hint(detail: str) -> str:
    """What the last connection error says about the host, for the operator who opens its console."""
    text = detail.lower()
    if "refused" in text:
        return "its address answers but sshd does not listen (stopped at a unit before sshd: see the console)"
    if "timed out" in text or "timeout" in text or "unreachable" in text:
        return "nothing answers at its address (still off, hung in firmware or the kernel, or its network is down)"
    if "auth" in text or "key" in text:
        return "sshd answers but refuses the login (its host key or authorized_keys changed)"
    return "see its console (BMC, IPMI SOL)"


def explain(plan: HostPlan) -> list[str]:
    """What the stage would do now, as the places that should have restored what was lost at boot."""
    causes: list[str] = []
    for change in plan.changes:
        for f in change.files:
            if f.before is None:
                causes.append(f"{f.path} is missing: nothing restores it at boot (the stage would: {change.summary})")
            elif f.before != f.content:
                causes.append(f"{f.path} is not what the wizard wrote (the stage would: {change.summary})")
        if not change.files:
            causes.append(f"not restored at boot; the stage would: {change.summary}")
    if not causes and plan.blockers:
        causes += [f"the stage cannot be planned again: {b}" for b in plan.blockers]
    if not causes:
        causes.append(
            "its files and units are all in place, so this is not a setting lost at boot: look at the hardware or "
            "the fabric (a link, a switch port) the failed check names"
        )
    return causes


async def why_lost(session: Any, stage: str, host: str) -> list[str]:
    """The stage's own reading of the boot path first (the more precise), then what its plan would re-apply."""
    runner = session.runner
    step = runner.steps[stage]
    try:
        found = await step.boot_causes(session.executors[host], runner.facts.get(host, {}))
    except ExecutorError:
        found = []
    try:
        view: ClusterView = runner.view()
        return found + explain(step.plan(view, host))
    except Exception as exc:  # noqa: BLE001 - the explanation is a courtesy; the loss stands
        return found + [f"no explanation from the plan: planning the stage again failed ({exc!r})"]


async def verify_wave(session: Any, stages: list[str], results: list[HostReboot]) -> None:
    """Verify ``stages`` on the wave's hosts that came back; fill in what they lost and why."""
    back = {r.host: r for r in results if r.came_back}
    if not back:
        return
    runner = session.runner
    with failed_checks(runner) as found:
        # Discovery is read once per wave (as the discovery stage, or before the others), not once per stage.
        if "discovery" not in stages and "discovery" in runner.steps:
            await runner._refresh_discovery(list(back))
        for stage in sorted(stages, key=lambda s: s != "discovery"):
            outcome = await verify_stage(runner, stage, only=list(back), fresh_discovery=True)
            for host, status in outcome.statuses.items():
                if host not in back or status == "done":
                    continue
                back[host].lost[stage] = what_failed(runner, found, stage, host)
                back[host].causes[stage] = await why_lost(session, stage, host)


async def rolling_reboot(
    session: Any, stages: list[str], waves: list[list[str]], *, boot_timeout_s: float, emit: Emit
) -> tuple[list[HostReboot], list[list[str]]]:
    """Reboot ``waves`` one after the other; returns every rebooted host's result and the waves never started."""
    done: list[HostReboot] = []
    for n, wave in enumerate(waves, start=1):
        emit(f"wave {n}/{len(waves)}: rebooting {', '.join(wave)}")
        results = [HostReboot(host, n) for host in wave]
        await asyncio.gather(*(reboot_and_wait(session.executors[r.host], r, boot_timeout_s) for r in results))
        for r in results:
            if r.came_back:
                emit(f"wave {n}/{len(waves)}: {r.host} is back after {r.seconds:.0f} s; verifying")
        await verify_wave(session, stages, results)
        done += results
        if not all(r.held for r in results):
            return done, waves[n:]
    return done, []
