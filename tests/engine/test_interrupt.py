"""SIGINT / SIGTERM mid-step: hosts recorded as interrupted, remote commands ended by a signal, a resume completes."""

from __future__ import annotations

import asyncio
import base64
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.engine.test_ssh_executor import executor, start_lab
from wizard.lab.hang import LOG

PREREQS = "sudo env DEBIAN_FRONTEND=noninteractive apt-get install -y linux-headers-5.15.0-125-generic"


def wizard(state: Path, *args: str, stdout: int | None = subprocess.PIPE) -> subprocess.Popen[str]:
    env = {**os.environ, "ROCE_WIZARD_LAB_TIME_SCALE": "0.02"}
    argv = [sys.executable, "-m", "wizard", "--demo", "--yes", "--json", "--only", "ofed", "--state-dir", str(state)]
    return subprocess.Popen(
        [*argv, *args], stdin=subprocess.DEVNULL, stdout=stdout, stderr=subprocess.PIPE, text=True, env=env
    )


def stop_when_hung(proc: subprocess.Popen[str], sig: signal.Signals) -> tuple[int, list[str]]:
    """Signal the wizard once server1's hung command surely runs on the lab host (its stderr line came back as an
    ``output`` event), then wait for it to exit; returns the exit code and its stderr lines."""
    assert proc.stdout is not None and proc.stderr is not None
    deadline = time.monotonic() + 90
    for line in proc.stdout:
        event = json.loads(line)
        if event["event"] == "output" and event["host"] == "server1" and "Could not get lock" in str(event):
            break
        assert time.monotonic() < deadline, "the hung command never started"
    else:
        raise AssertionError("the wizard ended before the hung command started: " + proc.stderr.read())
    proc.send_signal(sig)
    proc.stdout.read()
    code = proc.wait(timeout=60)
    return code, proc.stderr.read().splitlines()


def hang_log(state: Path, host: str = "server1") -> list[str]:
    """The lab's hang log from the simulated host's saved disk (the wizard and its lab have exited)."""
    tree = json.loads((state / "lab" / f"{host}.json").read_text())["tree"]
    node = {"c": tree}
    for part in LOG.strip("/").split("/"):
        node = node["c"][part]
    return base64.b64decode(node["data"]).decode().splitlines()


def test_sigterm_records_interrupted_hosts_ends_the_remote_command_and_a_resume_completes(tmp_path: Path) -> None:
    state = tmp_path / "state"
    code, stderr = stop_when_hung(wizard(state, "--fault", "server1:hang"), signal.SIGTERM)

    assert code == 143, stderr
    assert stderr[-1] == (
        f"roce-wizard: interrupted by SIGTERM during stage ofed on 2 host(s) (`{PREREQS}` on server1); "
        "progress is saved - run the same command again to resume"
    )
    assert not any("Traceback" in line or "never retrieved" in line for line in stderr), stderr
    assert not any("not everything is verified" in line for line in stderr)
    one = json.loads((state / "hosts" / "server1.json").read_text())
    assert one["stages"]["ofed"]["status"] == "interrupted"
    assert one["stages"]["ofed"]["reason"] == f"interrupted by SIGTERM: `{PREREQS}` was running"
    assert one["command_in_flight"] == PREREQS
    two = json.loads((state / "hosts" / "server2.json").read_text())["stages"]["ofed"]
    assert two["status"] == "interrupted" and two["reason"].startswith("interrupted by SIGTERM: ")
    run = json.loads((state / "run.json").read_text())
    assert run["exit_code"] == 143 and run["finished_at"]
    assert run["interrupted"] == f"SIGTERM during stage ofed on 2 host(s) (`{PREREQS}` on server1)"
    # The lab host got the signal over the SSH channel and ended the command (closing the channel would not).
    hung, ended = hang_log(state)
    assert hung.startswith("hung: ") and ended == "ended by SIGTERM: " + hung.removeprefix("hung: ")

    status = subprocess.run(
        [sys.executable, "-m", "wizard", "status", "--state-dir", str(state)], capture_output=True, text=True
    )
    assert status.returncode == 0, status.stderr
    assert f"interrupted by SIGTERM during stage ofed on 2 host(s) (`{PREREQS}` on server1)" in status.stdout
    assert f"server1 ofed: interrupted: interrupted by SIGTERM: `{PREREQS}` was running" in status.stdout
    row = next(line for line in status.stdout.splitlines() if line.startswith("server1 "))
    assert row.split()[1:3] == ["pending", "interrupted"]  # discovery was not in this run; ofed was stopped

    resume = wizard(state, stdout=subprocess.DEVNULL)
    _, err = resume.communicate(timeout=180)
    assert resume.returncode == 0, err
    for host in ("server1", "server2"):
        record = json.loads((state / "hosts" / f"{host}.json").read_text())["stages"]["ofed"]
        assert record["status"] == "done", record


def test_sigint_exits_130_naming_the_signal_stage_and_command(tmp_path: Path) -> None:
    state = tmp_path / "state"
    code, stderr = stop_when_hung(wizard(state, "--fault", "server1:hang=apt-get install"), signal.SIGINT)

    assert code == 130, stderr
    assert stderr[-1].startswith("roce-wizard: interrupted by SIGINT during stage ofed on 2 host(s) (`sudo env ")
    assert stderr[-1].endswith("; progress is saved - run the same command again to resume")
    assert json.loads((state / "hosts" / "server1.json").read_text())["stages"]["ofed"]["status"] == "interrupted"
    assert json.loads((state / "run.json").read_text())["exit_code"] == 130
    assert hang_log(state)[-1].startswith("ended by SIGTERM: ")  # whatever stopped the wizard, hosts get TERM


async def test_a_cancelled_command_is_signalled_over_its_channel_and_ends_on_the_host() -> None:
    lab = await start_lab("server1:hang=HANG-ME")
    ex = executor(lab)
    host = lab.hosts["server1"]
    try:
        task = asyncio.create_task(ex.run("echo HANG-ME"))
        for _ in range(500):
            if host.fs.exists(LOG):
                break
            await asyncio.sleep(0.01)
        assert host.fs.read_text(LOG).startswith("hung: ")
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task
        assert host.fs.read_text(LOG).splitlines()[-1].startswith("ended by SIGTERM: ")
        # the connection stays usable for the next command
        assert (await ex.run("echo next")).stdout == "next"
    finally:
        await ex.close()
        await lab.stop()


async def test_a_signalled_batch_ends_the_probe_it_was_waiting_for_not_just_the_script() -> None:
    # On a real host the probe is a job of the batch script (tests/nslab/test_interrupt_real.py shows the orphan the
    # old script left under sudo); the simulated host ends an exec's jobs with it, as kill() on its process group does.
    lab = await start_lab()
    ex = executor(lab)
    host = lab.hosts["server1"]
    try:
        task = asyncio.create_task(ex.run_batch(["true", "sleep infinity", "true"], sudo=True))
        for _ in range(500):
            if any(not job.done() for job in host.background):
                break
            await asyncio.sleep(0.01)
        jobs = [job for job in host.background if not job.done()]
        assert len(jobs) == 1, "the sleeping probe runs as a job of the batch"
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task
        await asyncio.sleep(0)
        assert all(job.done() for job in jobs), "the probe ended with the batch"
        assert [r.stdout for r in await ex.run_batch(["echo a", "echo b"])] == ["a", "b"]
    finally:
        await ex.close()
        await lab.stop()
