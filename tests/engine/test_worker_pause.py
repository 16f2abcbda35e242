"""The engine process stands still while the screen handles a key: on Linux the kernel stops it (SIGSTOP) and
continues it on the key's frame, or after PAUSE_MAX_S whatever the screen does; and it dies with the screen's
process, so none is ever left stopped."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from wizard.engine import worker_client
from wizard.engine.worker_client import PAUSE_MAX_S, EngineProcess

pytestmark = pytest.mark.skipif(sys.platform != "linux", reason="SIGSTOP pauses and PR_SET_PDEATHSIG are Linux's")


def _state(pid: int) -> str:
    """The process state letter from /proc (T: stopped)."""
    return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]


def _settles(pid: int, stopped: bool) -> bool:
    """Whether the process reaches (or leaves) the stopped state within 2 s: a signal is delivered when the kernel
    next schedules the process, which on a loaded machine is not at once."""
    for _ in range(200):
        if (_state(pid) == "T") == stopped:
            return True
        time.sleep(0.01)
    return False


def _ready(engine: EngineProcess) -> subprocess.Popen[bytes]:
    engine.warm()
    worker = engine._spare
    assert worker is not None and worker.stdout is not None
    assert worker.stdout.readline().strip() == b'{"msg": "ready"}'  # imported and waiting for its request
    engine._working = worker
    return worker


def test_a_key_stops_the_engine_at_once_and_its_frame_continues_it(tmp_path: Path) -> None:
    engine = EngineProcess(lambda: tmp_path / "engine.log")
    worker = _ready(engine)
    try:
        engine.pause()
        assert _settles(worker.pid, stopped=True)
        engine.resume()
        assert _settles(worker.pid, stopped=False)
    finally:
        engine._working = None
        engine.close()


def test_a_pause_never_outlasts_its_limit_even_if_the_screen_never_draws(tmp_path: Path) -> None:
    engine = EngineProcess(lambda: tmp_path / "engine.log")
    worker = _ready(engine)
    try:
        engine.pause()  # and no resume: the screen's loop is stuck
        time.sleep(PAUSE_MAX_S)
        assert _settles(worker.pid, stopped=False)
    finally:
        engine._working = None
        engine.close()


def test_the_engine_dies_with_the_screen_even_while_stopped(tmp_path: Path) -> None:
    script = (
        "import os, signal, sys, time\n"
        "from pathlib import Path\n"
        "from wizard.engine.worker_client import EngineProcess\n"
        f"engine = EngineProcess(lambda: Path({str(tmp_path / 'engine.log')!r}))\n"
        "engine.warm(); w = engine._spare; w.stdout.readline()\n"
        "os.kill(w.pid, signal.SIGSTOP)\n"
        "print(w.pid, flush=True); time.sleep(60)\n"
    )
    screen = subprocess.Popen([sys.executable, "-c", script], stdout=subprocess.PIPE, text=True,
                              cwd=Path(worker_client.__file__).resolve().parents[2])  # fmt: skip
    assert screen.stdout is not None
    pid = int(screen.stdout.readline())
    assert _settles(pid, stopped=True)
    screen.kill()  # the screen's process dies without a word
    screen.wait()
    for _ in range(50):
        if not Path(f"/proc/{pid}").exists() or _state(pid) == "Z":
            break
        time.sleep(0.05)
    else:
        os.kill(pid, 9)
        raise AssertionError("the stopped engine outlived the screen")
