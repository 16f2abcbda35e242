"""``python -m wizard.engine.worker``: the terminal wizard's host work in a process of its own.

Why a process: on 1,000 real hosts the SSH sessions and the parsing of every probe's output took the interpreter in
turns with the screen, and keys waited behind them (bench/tui_real.py: p95 of 0.3-0.6 s during discovery, with the
engine on a thread of its own and stepping aside for keys). In a process of its own the engine has its own
interpreter, and the screen draws while the hosts are worked on.

The protocol is JSON lines, one message per line:

- to the screen (stdout): ``{"msg": "ready"}`` once imported (the wizard starts the next worker ahead of time, so an
  action never waits for Python to start); every runner event as the headless ``--json`` line; ``{"msg": "report",
  ...}`` per host of the connection test; ``{"msg": "ask", "id": N, "stage": S, "plan": {...}}`` when a plan needs
  the operator's yes; finally ``{"msg": "result", "value": ...}`` or ``{"msg": "error", "text": ..., "kind": ...}``.
- from the screen (stdin): first the request ``{"action", "stage", "state_dir", "demo", "answers_path", "password",
  "targets"}`` (the sudo password travels here, never in arguments or the environment, which other users can read),
  then ``{"answer": N, "yes": bool}`` per question, ``{"pause": S}`` and ``{"resume": true}`` around a key the
  screen is handling (the engine stands still for at most S seconds), and ``{"stop": REASON}`` to stop the work (a
  closed stdin stops it too: the screen is gone).

A command's long output is cut to its first lines and a count on the way (wizard/engine/worker_events.py): the log
pane folds it after those anyway, and every line is in the host's log file, which this process writes.
"""

from __future__ import annotations

import asyncio
import json
import os
import resource
import sys
import threading
import traceback
from dataclasses import asdict
from pathlib import Path
from typing import Any, BinaryIO

from steps import all_steps
from wizard.answers.model import parse_answers
from wizard.engine.conn_test import ConnectionReport
from wizard.engine.events import EventBus
from wizard.engine.host_action import HostAction, do_host_action
from wizard.engine.runner import Runner
from wizard.engine.session import Session, open_session, production_targets
from wizard.engine.step import HostPlan
from wizard.engine.worker_events import OutputCoalescer
from wizard.errors import AnswersError, WizardError
from wizard.executors.ssh import SshTarget


class Worker:
    """One request's work: its messages out, the operator's answers and a stop in."""

    def __init__(self, out: BinaryIO, request: dict[str, Any]) -> None:
        self.out = out
        self.request = request
        self.loop = asyncio.get_running_loop()
        self.answers_waiting: dict[int, asyncio.Future[bool]] = {}
        self.runner: Runner | None = None
        self.task: asyncio.Task[Any] | None = None
        self.bus = EventBus()
        self.coalescer = OutputCoalescer(self.send)
        self.go_on = threading.Event()
        """Cleared while the screen asks this process to stand still for a key; set by its resume."""
        self.bus.subscribe(self.coalescer.event)

    def finish(self, message: dict[str, Any]) -> None:
        """The outcome, with this process's peak memory (the screen's figures count both processes)."""
        self.coalescer.flush()
        self.send({**message, "peak_mib": round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, 1)})

    def send(self, message: dict[str, Any]) -> None:
        self.out.write(json.dumps(message, default=str).encode() + b"\n")
        self.out.flush()

    # -- from the screen ------------------------------------------------------------------------------------
    def listen(self, stream: BinaryIO) -> None:
        """On a thread: the screen's answers and stop, handed to the loop; end of input stops the work. A resume
        is acted on here, since the loop it wakes is the one standing still."""
        for raw in stream:
            try:
                message = json.loads(raw)
            except ValueError:
                continue
            if "resume" in message:
                self.go_on.set()
                continue
            if "pause" in message:
                self.go_on.clear()
            self.loop.call_soon_threadsafe(self.heard, message)
        self.loop.call_soon_threadsafe(self.heard, {"stop": "quit"})

    def heard(self, message: dict[str, Any]) -> None:
        if "pause" in message:
            # The screen handles a key: this loop stands still (a blocking wait lets the CPU go) until the key's
            # frame is drawn, and never longer than asked (at most a second, whatever the screen says).
            self.go_on.wait(timeout=min(1.0, max(0.0, float(message["pause"]))))
            return
        if "answer" in message:
            waiting = self.answers_waiting.pop(int(message["answer"]), None)
            if waiting is not None and not waiting.done():
                waiting.set_result(bool(message.get("yes")))
        elif "stop" in message and self.task is not None and not self.task.done():
            if self.runner is not None:
                self.runner.stop_reason = str(message["stop"])
            self.task.cancel()

    async def confirm(self, stage: str, plan: HostPlan) -> bool:
        ask = len(self.answers_waiting) + 1
        while ask in self.answers_waiting:
            ask += 1
        waiting: asyncio.Future[bool] = self.loop.create_future()
        self.answers_waiting[ask] = waiting
        self.coalescer.flush()
        self.send({"msg": "ask", "id": ask, "stage": stage, "plan": plan.model_dump(mode="json")})
        return await waiting

    def report(self, report: ConnectionReport) -> None:
        self.coalescer.flush()
        self.send({"msg": "report", **asdict(report)})

    # -- the work -------------------------------------------------------------------------------------------
    async def open_session(self) -> Session:
        request = self.request
        path = Path(request["answers_path"])
        answers = parse_answers(path.read_text(encoding="utf-8"), str(path))
        password = request.get("password")
        if request.get("targets"):  # the simulated lab's hosts, on the wizard's loopback
            targets = {t["name"]: SshTarget(**t) for t in request["targets"]}
        else:
            targets = production_targets(answers, password)
        return open_session(
            answers,
            all_steps(),
            targets,
            Path(request["state_dir"]),
            self.bus,
            simulated=bool(request.get("demo")),
            password=password,
        )

    async def run(self) -> int:
        request = self.request
        work = HostAction(
            request["action"], request.get("stage"), bool(request.get("demo")), request.get("answers_path", "")
        )
        self.task = asyncio.current_task()
        try:
            value = await do_host_action(
                work,
                self.open_session,
                Path(request["state_dir"]),
                confirm=self.confirm,
                on_report=self.report,
                on_runner=self._set_runner,
            )
        except asyncio.CancelledError:
            self.finish({"msg": "error", "kind": "stopped", "text": "stopped"})
            return 1
        except (WizardError, AnswersError) as exc:
            self.finish({"msg": "error", "kind": "wizard", "text": str(exc)})
            return 1
        except Exception as exc:  # noqa: BLE001 - the screen names it; the traceback goes to this process's log
            traceback.print_exc()
            self.finish({"msg": "error", "kind": "crash", "text": f"{type(exc).__name__}: {exc}"})
            return 1
        self.finish({"msg": "result", "value": encode_result(work.action, value)})
        return 0

    def _set_runner(self, runner: Runner | None) -> None:
        self.runner = runner


def encode_result(action: str, value: Any) -> Any:
    """What an action returns, as JSON: plans by host; a rollback's (hosts, failed); else nothing."""
    if action == "plan" and value is not None:
        return {host: plan.model_dump(mode="json") for host, plan in value.items()}
    if action == "rollback" and value is not None:
        hosts, failed = value
        return [list(hosts), list(failed)]
    return None


def decode_result(action: str, value: Any) -> Any:
    """The other side of :func:`encode_result`."""
    if action == "plan" and value is not None:
        return {host: HostPlan.model_validate(plan) for host, plan in value.items()}
    if action == "rollback" and value is not None:
        return list(value[0]), list(value[1])
    return None


async def serve(request: dict[str, Any], out: BinaryIO, stdin: BinaryIO) -> int:
    worker = Worker(out, request)
    threading.Thread(target=worker.listen, args=(stdin,), name="worker-stdin", daemon=True).start()
    return await worker.run()


def die_with_parent() -> None:
    """Linux: the kernel kills this worker when the screen's process dies, even while it is stopped (the screen
    pauses it with SIGSTOP around a key, wizard/engine/worker_client.py), so none is left behind stopped."""
    if sys.platform != "linux":
        return
    import ctypes
    import signal

    try:
        libc = ctypes.CDLL(None, use_errno=True)
        pr_set_pdeathsig = 1  # <linux/prctl.h>
        libc.prctl(pr_set_pdeathsig, signal.SIGKILL, 0, 0, 0)
    except (OSError, AttributeError):
        return
    if os.getppid() == 1:  # the screen died before the prctl: nothing would kill this worker later
        raise SystemExit(0)


def main(argv: list[str] | None = None) -> int:
    die_with_parent()
    args = list(sys.argv[1:] if argv is None else argv)
    if args[:1] == ["--nice"] and len(args) > 1:
        try:
            os.nice(int(args[1]))  # the screen's process keeps the CPU first (worker_client.ENGINE_NICENESS)
        except (OSError, ValueError):
            pass
    out, stdin = sys.stdout.buffer, sys.stdin.buffer
    sys.stdout = sys.stderr  # a stray print must not break the protocol
    out.write(b'{"msg": "ready"}\n')
    out.flush()
    line = stdin.readline()
    if not line.strip():
        return 0  # the screen closed without work for this worker (the wizard quit)
    return asyncio.run(serve(json.loads(line), out, stdin))


if __name__ == "__main__":
    raise SystemExit(main())
