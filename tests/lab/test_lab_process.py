"""A large demo runs its simulated lab in a child process (wizard/lab/child.py): the hosts answer over SSH as they
do in-process, their disks are saved and booted from, a lab that cannot be built is a one-line usage error, and the
lab never outlives the wizard."""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from wizard.answers.model import load_answers
from wizard.answers.profiles import demo_answers
from wizard.engine.session import LAB_PROCESS_HOSTS, LAB_PROCESS_KEEPALIVE_S, simulated_targets
from wizard.errors import UsageError
from wizard.executors.ssh import SshExecutor


@pytest.fixture(autouse=True)
def fast_clocks(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("ROCE_WIZARD_LAB_TIME_SCALE", "0.01")


async def _run(targets: dict, host: str, command: str) -> str:  # type: ignore[type-arg]
    executor = SshExecutor(targets[host])
    try:
        result = await executor.run(command, sudo=True)
        assert result.ok, result.stderr
        return result.stdout
    finally:
        await executor.close()


async def test_hosts_in_a_child_lab_answer_over_ssh_and_keep_their_disks(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    answers = load_answers(demo_answers("reference"))
    async with simulated_targets(answers, [], None, tmp_path, "reference", lab_process=True) as targets:
        assert set(targets) == {"server1", "server2"}
        assert targets["server1"].address == "127.0.0.1"
        assert targets["server1"].keepalive_interval_s == LAB_PROCESS_KEEPALIVE_S, "a busy lab answers late"
        assert "ConnectX-4 Lx" in await _run(targets, "server1", "lspci")
        await _run(targets, "server1", "mkdir -p /etc/demo && echo kept > /etc/demo/file")
    assert (tmp_path / "lab" / "server1.json").is_file(), "the child saved the host's disk in the state directory"

    async with simulated_targets(answers, [], None, tmp_path, "reference", lab_process=True) as targets:
        assert (await _run(targets, "server1", "cat /etc/demo/file")).strip() == "kept", "booted from the saved disk"
    said = capsys.readouterr().err
    assert re.search(r"the lab's own process peaked at \d+ MiB and used \d+ s of CPU", said), said


async def test_a_fault_the_child_lab_cannot_build_is_a_usage_error_naming_it(tmp_path: Path) -> None:
    answers = load_answers(demo_answers("rails-16"))
    with pytest.raises(UsageError, match="--fault: .*leaf-r9"):
        async with simulated_targets(
            answers, ["leaf-r9:degraded_uplink"], None, tmp_path, "rails-16", lab_process=True
        ):
            pass


def test_only_labs_larger_than_the_threshold_get_their_own_process() -> None:
    assert 16 < LAB_PROCESS_HOSTS < 1024, "rails-16 stays in-process (tests poke it); a fleet gets its own core"


@pytest.mark.skipif(sys.platform != "linux", reason="PR_SET_PDEATHSIG is Linux's")
def test_the_child_lab_dies_with_the_wizard() -> None:
    script = """
import asyncio
from wizard.answers.model import load_answers
from wizard.answers.profiles import demo_answers
from wizard.engine.session import simulated_targets
async def main():
    async with simulated_targets(load_answers(demo_answers("reference")), [], None, None, "reference",
                                 lab_process=True):
        print("up", flush=True)
        await asyncio.sleep(600)
asyncio.run(main())
"""
    env = {**os.environ, "ROCE_WIZARD_LAB_TIME_SCALE": "0.01"}
    wizard = subprocess.Popen([sys.executable, "-c", script], stdout=subprocess.PIPE, env=env, text=True)
    assert wizard.stdout is not None and wizard.stdout.readline() == "up\n"
    children = Path(f"/proc/{wizard.pid}/task/{wizard.pid}/children").read_text().split()
    assert len(children) == 1
    lab = int(children[0])
    wizard.send_signal(signal.SIGKILL)
    wizard.wait()
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline and _alive(lab):
        time.sleep(0.05)
    assert not _alive(lab), "the kernel ends the lab when the wizard's process dies"


def _alive(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().split()[2]
    except FileNotFoundError:
        return False
    return state != "Z"  # a zombie is dead: its new parent reaps it
