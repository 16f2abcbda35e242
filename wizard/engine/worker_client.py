"""The screen's side of the engine process (wizard/engine/worker.py): start it ahead of time, hand it one action,
pass its events on, answer its questions, stop it.

The worker's messages are read on a thread of their own and decoded there, so the screen's event loop only sees
finished events (appended to the same inbox the engine thread fills) and the few messages that need it: a question
for the operator and the outcome. One worker does one action; the next one is started as soon as it is taken, so
Python's start-up (about a second on a busy machine) is never in front of the operator's key.
"""

from __future__ import annotations

import asyncio
import json
import os
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Awaitable, Callable
from dataclasses import asdict
from pathlib import Path
from typing import IO, Any

from wizard.engine.conn_test import ConnectionReport
from wizard.engine.events import Event
from wizard.engine.step import HostPlan
from wizard.engine.worker import decode_result
from wizard.engine.worker_events import event_from_message
from wizard.errors import WizardError
from wizard.executors.ssh import SshTarget

ENGINE_NICENESS = 0
"""The engine process's niceness. Not lowered: on a control machine shared with other work, a niced engine would wait
behind every other process. The screen gets its CPU by pausing the engine while it handles a key (``pause``)."""
PAUSE_MAX_S = 0.25
"""The longest the engine stands still for one key: host work never waits longer than this at a time."""
STOP_WAIT_S = 60.0
"""How long a stopped worker gets to save its hosts as interrupted and close its sessions before it is killed."""


class WorkerStopped(Exception):
    """The work was stopped (quit) before it ended."""


class WorkerCrashed(Exception):
    """The engine process failed in a way the wizard did not foresee; the text names it and where its log is."""


class EngineProcess:
    """Runs host actions in worker processes, one at a time, keeping the next worker started and waiting."""

    def __init__(self, log_path: Callable[[], Path], *, niceness: int = ENGINE_NICENESS) -> None:
        self._log_path = log_path
        self.niceness = niceness
        self._spare: subprocess.Popen[bytes] | None = None
        self._log: IO[bytes] | None = None
        self.runs = 0
        """Actions handed to a worker so far."""
        self.peak_mib = 0.0
        """The largest peak memory a worker reported (each reports its own with its outcome)."""
        self._working: subprocess.Popen[bytes] | None = None
        self._paused_at: float | None = None
        self._reading = threading.Event()
        """Cleared while the screen handles a key: the reading thread decodes nothing meanwhile (what the engine
        sent before its pause would otherwise take the interpreter in turns with the key's frame)."""
        self._reading.set()
        self._guard: threading.Timer | None = None

    def pause(self) -> None:
        """Stop the working engine process while the screen handles a key, so the key's frame has the CPU to itself;
        ``resume`` ends it, and never later than PAUSE_MAX_S. What the hosts send meanwhile waits in the kernel's
        socket buffers; SSH sessions lose nothing in a quarter of a second.

        On Linux the kernel stops it at once (SIGSTOP): a pause message waited for the engine's loop to read it,
        behind whatever burst of host output it was parsing (keys' p95 during a 1,000-host discovery stayed at
        110-220 ms with it). A timer thread sends SIGCONT after PAUSE_MAX_S even if this loop is stuck, and the
        worker dies with this process (PR_SET_PDEATHSIG, wizard/engine/worker.py), so nothing leaves it stopped.
        Elsewhere the engine is asked to stand still and ends the pause by itself."""
        process = self._working
        if process is None or self._paused_at is not None:
            return
        self._paused_at = time.monotonic()
        if STOP_SIGNALS:
            self._reading.clear()
            _signal(process, signal.SIGSTOP)
            guard = self._guard = threading.Timer(PAUSE_MAX_S, self._continue, args=(process,))
            guard.daemon = True
            guard.start()
            return
        self._reading.clear()
        _write(process, {"pause": PAUSE_MAX_S})

    def resume(self) -> None:
        process, was = self._working, self._paused_at
        self._paused_at = None
        self._reading.set()
        if process is not None and was is not None:
            if STOP_SIGNALS:
                self._continue(process)
            else:
                _write(process, {"resume": True})

    def _continue(self, process: subprocess.Popen[bytes]) -> None:
        """SIGCONT (from resume, a flush tick or the guard timer's thread; a second one changes nothing)."""
        if self._guard is not None:
            self._guard.cancel()
        _signal(process, signal.SIGCONT)
        self._reading.set()

    def resume_if_overdue(self) -> None:
        """End a pause that outlived PAUSE_MAX_S (the engine ends a requested pause by itself; a stopped one is
        continued here or by the guard timer)."""
        if self._paused_at is not None and time.monotonic() - self._paused_at >= PAUSE_MAX_S:
            self._paused_at = None
            if STOP_SIGNALS and self._working is not None:
                self._continue(self._working)
            self._reading.set()

    @property
    def paused(self) -> bool:
        return self._paused_at is not None

    def warm(self) -> None:
        """Start the next worker now (it imports the engine and waits), unless one is waiting already."""
        if self._spare is None or self._spare.poll() is not None:
            self._spare = self._start()

    def _start(self) -> subprocess.Popen[bytes]:
        path = self._log_path()
        path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
        if self._log is None or self._log.name != str(path):
            if self._log is not None:
                self._log.close()
            self._log = path.open("ab")
        return subprocess.Popen(
            [sys.executable, "-m", "wizard.engine.worker", "--nice", str(self.niceness)],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=self._log,
        )

    async def run(
        self,
        request: dict[str, Any],
        *,
        on_event: Callable[[Event], None],
        on_report: Callable[[ConnectionReport], None],
        ask: Callable[[str, HostPlan], Awaitable[bool]],
    ) -> Any:
        """Hand ``request`` (wizard/engine/worker.py) to a worker and wait for its outcome. Events and connection
        reports are passed on from the reading thread; ``ask`` runs on this loop. Cancelling stops the work the way
        quitting headless mode does (hosts saved as interrupted) and waits for the worker to end."""
        self.warm()
        self.runs += 1
        process, self._spare = self._spare, None
        assert process is not None and process.stdin is not None and process.stdout is not None
        self.warm()  # the next action's worker starts importing while this one works
        loop = asyncio.get_running_loop()
        outcome: asyncio.Future[dict[str, Any]] = loop.create_future()
        questions: asyncio.Queue[dict[str, Any]] = asyncio.Queue()
        reader = threading.Thread(
            target=_read,
            args=(process, loop, outcome, questions, on_event, on_report, self._reading),
            name="roce-wizard-worker-reader",
            daemon=True,
        )
        reader.start()
        _write(process, request)
        self._working = process
        answering = asyncio.create_task(_answer(process, questions, ask))
        try:
            message = await asyncio.shield(outcome)
        except asyncio.CancelledError:
            self.resume()
            _write(process, {"stop": "quit"})
            try:
                await asyncio.wait_for(asyncio.shield(outcome), STOP_WAIT_S)
            except (TimeoutError, asyncio.CancelledError):
                process.kill()
            raise
        finally:
            self.resume()
            self._working = None
            answering.cancel()
            await asyncio.to_thread(_reap, process)
        self.peak_mib = max(self.peak_mib, float(message.get("peak_mib") or 0.0))
        if message["msg"] == "result":
            return decode_result(str(request["action"]), message.get("value"))
        if message.get("kind") == "wizard":
            raise WizardError(message["text"])
        if message.get("kind") == "stopped":
            raise WorkerStopped(message["text"])
        raise WorkerCrashed(f"the engine process failed: {message['text']} (its log: {self._log_path()})")

    def close(self) -> None:
        """End the waiting worker (closing its input ends it) and the log."""
        spare, self._spare = self._spare, None
        if spare is not None and spare.poll() is None:
            try:
                assert spare.stdin is not None
                spare.stdin.close()
                spare.wait(timeout=5)
            except (OSError, subprocess.TimeoutExpired):
                spare.kill()
        if self._log is not None:
            self._log.close()
            self._log = None


def request_for(
    action: str,
    stage: str | None,
    *,
    state_dir: Path,
    answers_path: Path,
    demo: bool,
    password: str | None,
    targets: dict[str, SshTarget] | None = None,
) -> dict[str, Any]:
    """The request line a worker reads (the simulated lab's ``targets`` go with it; real hosts' are built there)."""
    return {
        "action": action,
        "stage": stage,
        "state_dir": str(state_dir),
        "answers_path": str(answers_path),
        "demo": demo,
        "password": password,
        "targets": [asdict(t) for t in targets.values()] if targets else None,
    }


STOP_SIGNALS = sys.platform == "linux"
"""Pause with SIGSTOP/SIGCONT: where the worker can ask to die with the screen (PR_SET_PDEATHSIG)."""


def _signal(process: subprocess.Popen[bytes], number: int) -> None:
    if process.poll() is None:
        try:
            os.kill(process.pid, number)
        except ProcessLookupError:
            pass


def _write(process: subprocess.Popen[bytes], message: dict[str, Any]) -> None:
    try:
        assert process.stdin is not None
        process.stdin.write(json.dumps(message).encode() + b"\n")
        process.stdin.flush()
    except (OSError, ValueError):
        pass  # the worker has ended; its outcome (or its end) says why


def _read(
    process: subprocess.Popen[bytes],
    loop: asyncio.AbstractEventLoop,
    outcome: asyncio.Future[dict[str, Any]],
    questions: asyncio.Queue[dict[str, Any]],
    on_event: Callable[[Event], None],
    on_report: Callable[[ConnectionReport], None],
    reading: threading.Event,
) -> None:
    """The reading thread: events and reports go straight to their sinks; a question and the outcome to the loop.
    While the screen handles a key it waits (never longer than PAUSE_MAX_S at a time)."""
    assert process.stdout is not None
    last: dict[str, Any] | None = None
    for raw in process.stdout:
        reading.wait(PAUSE_MAX_S)
        try:
            message = json.loads(raw)
        except ValueError:
            continue
        if "event" in message:
            on_event(event_from_message(message))
        elif message.get("msg") == "report":
            on_report(ConnectionReport(**{k: v for k, v in message.items() if k != "msg"}))
        elif message.get("msg") == "ask":
            loop.call_soon_threadsafe(questions.put_nowait, message)
        elif message.get("msg") in ("result", "error"):
            last = message
    code = process.wait()
    final = last or {"msg": "error", "kind": "crash", "text": f"it ended with exit status {code} before its outcome"}
    loop.call_soon_threadsafe(lambda: outcome.done() or outcome.set_result(final))


async def _answer(
    process: subprocess.Popen[bytes],
    questions: asyncio.Queue[dict[str, Any]],
    ask: Callable[[str, HostPlan], Awaitable[bool]],
) -> None:
    """Questions are answered one at a time, in the order asked (the runner asks one host's plan after another)."""
    while True:
        question = await questions.get()
        yes = await ask(question["stage"], HostPlan.model_validate(question["plan"]))
        _write(process, {"answer": question["id"], "yes": yes})


def _reap(process: subprocess.Popen[bytes]) -> None:
    for stream in (process.stdin, process.stdout):
        if stream is not None:
            try:
                stream.close()
            except OSError:
                pass
    process.wait()
