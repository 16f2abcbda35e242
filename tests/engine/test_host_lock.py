"""One writer per host: a runner changing a host holds flock on /run/lock/roce-wizard.lock there; a second runner
(another state directory, as from another control machine) fails on that host naming the first, other hosts go on."""

from __future__ import annotations

import asyncio
import os
import socket
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest

from tests.engine.test_ssh_executor import executor
from wizard.answers.model import parse_answers
from wizard.engine.events import EventBus
from wizard.engine.host_lock import HOLDER_PATH, HostBusy, HostHolder, HostLock, busy_message, lock_script
from wizard.engine.logs import HostLogs, Redactor
from wizard.engine.runner import Runner, RunOptions
from wizard.engine.state import StateStore
from wizard.engine.step import Change, CheckItem, ClusterView, FileWrite, HostPlan, ProbeContext, RemoteCommand, Step
from wizard.lab import Lab
from wizard.lab.cmd_flock import locks

ANSWERS = parse_answers("version: 1\nhosts:\n  - name: server1\n    address: 10.0.0.11\n"
                        "  - name: server2\n    address: 10.0.0.12\n")  # fmt: skip
WAIT_FOR_GO = ["sh", "-c", "while [ ! -e /tmp/go ]; do sleep 20; done"]  # 20 ms a turn at the lab's time scale


@pytest.fixture
async def lab() -> AsyncIterator[Lab]:
    lab = Lab.reference(["server1", "server2"])
    lab.time_scale = 0.001
    lab.reboot_seconds = 0.3
    await lab.start()
    try:
        yield lab
    finally:
        await lab.stop()


class Reads(Step):
    id = "discovery"
    title = "Discovery"
    summary = "reads only"

    async def probe(self, ctx: ProbeContext) -> dict[str, Any]:
        return {}

    def plan(self, view: ClusterView, host: str) -> HostPlan:
        return HostPlan(stage=self.id, host=host, noop_reason="reads only")

    def checks(self, view: ClusterView, host: str) -> list[CheckItem]:
        return []


class Mark(Step):
    """Writes /etc/mark-<tag> on each host (after ``commands``; with ``commands``, only on the hosts it names);
    verified when the file is there."""

    id = "mark"
    title = "Mark"
    summary = "test stage"

    def __init__(self, tag: str, commands: dict[str, list[list[str]]] | None = None, reboot: bool = False) -> None:
        self.tag, self.commands, self.reboot = tag, commands or {}, reboot

    async def probe(self, ctx: ProbeContext) -> dict[str, Any]:
        return {"mark": await ctx.executor.read_file(f"/etc/mark-{self.tag}")}

    def plan(self, view: ClusterView, host: str) -> HostPlan:
        if (view.stage_facts(host, self.id) or {}).get("mark") or (self.commands and host not in self.commands):
            return HostPlan(stage=self.id, host=host, noop_reason="marked")
        first = Change(summary="wait", commands=[RemoteCommand(argv=a) for a in self.commands.get(host, [])],
                       reboot=self.reboot)  # fmt: skip
        mark = Change(summary="mark", files=[FileWrite(path=f"/etc/mark-{self.tag}", content=self.tag)])
        return HostPlan(stage=self.id, host=host, changes=[first, mark])

    def checks(self, view: ClusterView, host: str) -> list[CheckItem]:
        ok = bool((view.stage_facts(host, self.id) or {}).get("mark")) or bool(
            self.commands and host not in self.commands
        )
        return [CheckItem(id="mark", title="mark", status="pass" if ok else "fail", evidence=str(ok))]


def runner(lab: Lab, state: Path, step: Step) -> Runner:
    executors: dict[str, Any] = {h: executor(lab, h) for h in ("server1", "server2")}
    logs = HostLogs(state / "logs", Redactor())
    return Runner(ANSWERS, [Reads(), step], executors, StateStore(state), EventBus(), logs)


async def until(condition: Any, what: str) -> None:
    for _ in range(500):
        if condition():
            return
        await asyncio.sleep(0.01)
    raise AssertionError(f"timed out waiting for {what}")


async def test_a_second_runner_fails_on_the_locked_host_naming_the_first_and_succeeds_once_it_ended(
    lab: Lab, tmp_path: Path
) -> None:
    host = lab.hosts["server1"]
    first = runner(lab, tmp_path / "a", Mark("a", {"server1": [WAIT_FOR_GO]}))
    applying = asyncio.create_task(first.run_stage("mark", RunOptions(stages=["mark"])))
    await until(lambda: host.fs.exists(HOLDER_PATH), "the first runner to hold server1's lock")

    second = runner(lab, tmp_path / "b", Mark("b"))
    outcome = await second.run_stage("mark", RunOptions(stages=["mark"]))
    assert outcome.statuses == {"server1": "failed", "server2": "done"}, second.store.host("server2").stage("mark")
    reason = second.store.host("server1").stage("mark").reason
    assert reason == (
        f"host is being changed by another roce-wizard (pid {os.getpid()} on {socket.gethostname()} since "
        f"{HostHolder.from_text(host.fs.read_text(HOLDER_PATH)).since}, state {tmp_path / 'a'}); "  # type: ignore[union-attr]
        "wait for it or stop it"
    )
    assert not host.fs.exists("/etc/mark-b"), "the loser changed nothing on the locked host"
    assert lab.hosts["server2"].fs.exists("/etc/mark-b")

    host.fs.install("/tmp/go", "")
    assert (await applying).statuses["server1"] == "done"
    assert not host.fs.exists(HOLDER_PATH), "the holder record goes with the lock"
    again = runner(lab, tmp_path / "b", Mark("b"))
    assert (await again.run_stage("mark", RunOptions(stages=["mark"]))).statuses == {
        "server1": "done",
        "server2": "done",
    }
    assert host.fs.read_text("/etc/mark-b") == "b"


async def test_read_only_stages_do_not_take_the_lock(lab: Lab, tmp_path: Path) -> None:
    host = lab.hosts["server1"]
    first = runner(lab, tmp_path / "a", Mark("a", {"server1": [WAIT_FOR_GO]}))
    applying = asyncio.create_task(first.run_stage("mark", RunOptions(stages=["mark"])))
    await until(lambda: host.fs.exists(HOLDER_PATH), "the first runner to hold server1's lock")
    reader = runner(lab, tmp_path / "b", Mark("a"))
    outcome = await reader.run_stage("discovery", RunOptions(stages=["discovery"]))
    assert outcome.statuses == {"server1": "done", "server2": "done"}
    host.fs.install("/tmp/go", "")
    await applying


async def test_a_holder_whose_connection_dropped_leaves_no_lock(lab: Lab) -> None:
    ours, theirs = executor(lab, "server1"), executor(lab, "server1")
    dead = HostLock(theirs, HostHolder("ctl-b", 4242, "/srv/b/state", "2025-06-01T10:00:00+02:00"))
    await dead.ensure()
    lock = HostLock(ours, HostHolder("ctl-a", 1, "/srv/a/state", "2025-06-01T10:00:01+02:00"))
    with pytest.raises(HostBusy) as busy:
        await lock.ensure()
    assert str(busy.value) == busy_message(HostHolder("ctl-b", 4242, "/srv/b/state", "2025-06-01T10:00:00+02:00"))
    assert "pid 4242 on ctl-b since 2025-06-01T10:00:00+02:00, state /srv/b/state" in str(busy.value)
    assert theirs._conn is not None
    theirs._conn.abort()  # the other control machine died: its TCP connection is gone
    await until(lambda: not locks(lab.hosts["server1"])["/run/lock/roce-wizard.lock"].exclusive,
                "the host to drop the dead holder's lock")  # fmt: skip
    await lock.ensure()
    assert lock.held
    await lock.release()
    await ours.close()


async def test_the_lock_is_taken_again_after_a_reboot_change(lab: Lab, tmp_path: Path) -> None:
    reboots = runner(lab, tmp_path / "a", Mark("a", reboot=True))
    outcome = await reboots.run_stage("mark", RunOptions(stages=["mark"], reboot_timeout_s=30))
    assert outcome.statuses == {"server1": "done", "server2": "done"}
    log = (tmp_path / "a" / "logs" / "server1.log").read_text()
    assert "took the host lock /run/lock/roce-wizard.lock" in log
    assert "took the host lock again /run/lock/roce-wizard.lock" in log, "the reboot ended the first hold"
    assert not locks(lab.hosts["server1"])["/run/lock/roce-wizard.lock"].exclusive


async def test_lab_flock_follows_util_linux_exit_codes(lab: Lab) -> None:
    host = lab.hosts["server1"]
    await host.run("mkdir -p /run/lock")
    assert (await host.run("flock -n /run/lock/x -c 'echo in'")).stdout == "in\n"
    assert (await host.run("flock -n /run/lock/x sh -c 'exit 3'")).status == 3, "the command's own status"
    missing = await host.run("flock -n /nonexistent/x -c true")
    assert (missing.status, missing.stderr) == (
        66,
        "flock: cannot open lock file /nonexistent/x: No such file or directory\n",
    )
    assert (await host.run("flock")).status == 64
    assert host.fs.exists("/run/lock/x"), "flock creates the lock file"


async def test_lab_flock_n_exits_1_by_default_and_the_E_status_when_busy(lab: Lab) -> None:
    host = lab.hosts["server1"]
    await host.run("mkdir -p /run/lock")

    holding = asyncio.create_task(host.run("flock -n /run/lock/y -c 'sleep 1000000'"))
    await until(lambda: "/run/lock/y" in locks(host) and locks(host)["/run/lock/y"].exclusive, "the lock")
    assert (await host.run("flock -n /run/lock/y -c 'echo never'")).status == 1
    assert (await host.run("flock -n -E 75 /run/lock/y -c 'echo never'")).status == 75
    assert (await host.run("flock -s -n /run/lock/y -c true")).status == 1, "shared waits for exclusive too"
    holding.cancel()  # the holding command ends (killed)
    await until(lambda: not locks(host)["/run/lock/y"].exclusive, "the lock to go with its command")
    assert (await host.run("flock -n -E 75 /run/lock/y -c 'echo now'")).stdout == "now\n"


def test_the_lock_script_records_the_holder_and_waits_on_stdin() -> None:
    script = lock_script(HostHolder("ctl", 7, "/s", "2025-01-01T00:00:00+00:00"))
    assert "flock -n -E 75 /run/lock/roce-wizard.lock -c " in script
    assert "cat >/dev/null; rm -f /run/lock/roce-wizard.holder" in script
    assert '"pid": 7' in script and "password" not in script
    assert busy_message(None).startswith("host is being changed by another roce-wizard (it left no record")
