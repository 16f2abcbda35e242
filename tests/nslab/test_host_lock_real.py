"""The host lock on real OpenSSH, sudo, sh and util-linux flock: two wizards (two state directories) on one host."""

from __future__ import annotations

import asyncio
import os
import socket
from pathlib import Path
from typing import Any

import pytest

from tests.engine.test_host_lock import Mark, Reads
from tests.nslab.conftest import NsCluster
from tests.nslab.lab import USER
from wizard.answers.model import parse_answers
from wizard.engine.events import EventBus
from wizard.engine.host_lock import HostBusy, HostHolder, HostLock
from wizard.engine.logs import HostLogs, Redactor
from wizard.engine.runner import Runner, RunOptions
from wizard.engine.state import StateStore
from wizard.executors.ssh import SshExecutor, SshTarget

pytestmark = pytest.mark.nslab


def executor(cluster: NsCluster, name: str) -> SshExecutor:
    host = cluster.host(name)
    target = SshTarget(
        name=name, address=host.address, username=USER, identity_file=str(cluster.lab.key_file),
        known_hosts=str(cluster.lab.known_hosts), connect_timeout_s=10, keepalive_interval_s=1,
    )  # fmt: skip
    return SshExecutor(target)


def runner(cluster: NsCluster, state: Path, step: Any) -> Runner:
    answers = parse_answers(f"version: 1\nhosts:\n  - name: h1\n    address: {cluster.host('h1').address}\n")
    return Runner(answers, [Reads(), step], {"h1": executor(cluster, "h1")}, StateStore(state), EventBus(),
                  HostLogs(state / "logs", Redactor()))  # fmt: skip


def flock_processes(cluster: NsCluster) -> list[str]:
    """Command lines of the host's processes that hold our lock file."""
    pids = cluster.host("h1").ns("ip", "netns", "pids", cluster.host("h1").netns, check=False).stdout.split()
    lines = []
    for pid in pids:
        try:
            lines.append(Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode())
        except OSError:
            continue
    return [line for line in lines if line.startswith("flock ") and "roce-wizard.lock" in line]


@pytest.mark.hosts(1)
async def test_two_wizards_with_their_own_state_cannot_change_one_real_host_at_once(
    ns_cluster: NsCluster, tmp_path: Path
) -> None:
    go = tmp_path / "go"  # the namespace lab shares /tmp with this machine: creating it lets the first wizard go on
    tmp_path.chmod(0o755)
    wait = ["sh", "-c", f"while [ ! -e {go} ]; do sleep 0.05; done"]
    first = runner(ns_cluster, tmp_path / "a", Mark("a", {"h1": [wait]}))
    applying = asyncio.create_task(first.run_stage("mark", RunOptions(stages=["mark"])))
    for _ in range(600):
        if flock_processes(ns_cluster) or applying.done():
            break
        await asyncio.sleep(0.05)
    assert flock_processes(ns_cluster), "the first wizard holds flock on the host"

    second = runner(ns_cluster, tmp_path / "b", Mark("b"))
    outcome = await second.run_stage("mark", RunOptions(stages=["mark"]))
    assert outcome.statuses == {"h1": "failed"}
    reason = second.store.host("h1").stage("mark").reason
    assert reason.startswith(
        f"host is being changed by another roce-wizard (pid {os.getpid()} on {socket.gethostname()}"
    )
    assert reason.endswith(f", state {tmp_path / 'a'}); wait for it or stop it")
    assert not (ns_cluster.host("h1").etc_changes / "mark-b").exists(), "the loser changed nothing"

    go.touch()
    assert (await applying).statuses == {"h1": "done"}
    assert flock_processes(ns_cluster) == [], "the lock ended with the first wizard's apply"
    again = runner(ns_cluster, tmp_path / "b", Mark("b"))
    assert (await again.run_stage("mark", RunOptions(stages=["mark"]))).statuses == {"h1": "done"}
    assert (ns_cluster.host("h1").etc_changes / "mark-b").read_text() == "b"


@pytest.mark.hosts(1)
async def test_a_dead_control_machine_leaves_no_lock_on_a_real_host(ns_cluster: NsCluster) -> None:
    theirs, ours = executor(ns_cluster, "h1"), executor(ns_cluster, "h1")
    dead = HostLock(theirs, HostHolder("ctl-b", 4242, "/srv/b/state", "2025-06-01T10:00:00+02:00"))
    await dead.ensure()
    lock = HostLock(ours, HostHolder("ctl-a", 1, "/srv/a/state", "2025-06-01T10:00:01+02:00"))
    with pytest.raises(HostBusy, match=r"\(pid 4242 on ctl-b since 2025-06-01T10:00:00\+02:00, state /srv/b/state\)"):
        await lock.ensure()
    assert theirs._conn is not None
    theirs._conn.abort()  # its TCP connection goes: sshd closes the pipe, cat sees EOF, flock drops the lock
    for _ in range(200):
        if not flock_processes(ns_cluster):
            break
        await asyncio.sleep(0.05)
    await lock.ensure()
    assert lock.held
    await lock.release()
    assert flock_processes(ns_cluster) == []
    await ours.close()
