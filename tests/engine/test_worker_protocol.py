"""The engine process's side of its pipes (wizard/engine/worker.py): it stands still while the screen handles a key,
never longer than asked, and what it returns survives the trip as JSON."""

from __future__ import annotations

import asyncio
import io
import json
import threading
import time

from wizard.engine.step import Change, FileWrite, HostPlan, Impact
from wizard.engine.worker import Worker, decode_result, encode_result


async def test_a_pause_holds_the_engine_until_the_resume_and_never_longer_than_asked() -> None:
    worker = Worker(io.BytesIO(), {"action": "test"})
    pipe = io.BytesIO(b'{"pause": 0.3}\n')
    # No resume: the engine goes on by itself after the time asked.
    started = time.monotonic()
    worker.listen(pipe)  # clears go_on and queues the pause (and the stop that end of input means)
    await asyncio.sleep(0)  # the queued pause runs here, blocking this loop
    held = time.monotonic() - started
    assert held >= 0.25, held
    # With a resume from the screen (the listener's thread), it goes on at once.
    worker.go_on.clear()
    threading.Timer(0.05, worker.go_on.set).start()
    started = time.monotonic()
    worker.heard({"pause": 5})
    assert time.monotonic() - started < 4.0, "well before the 5 s asked (and the 1 s cap)"


def test_what_an_action_returns_survives_the_pipe_as_json() -> None:
    plan = HostPlan(
        stage="network",
        host="gpu-001",
        changes=[
            Change(
                summary="write netplan",
                impact=Impact.DISRUPTIVE,
                files=[FileWrite(path="/etc/netplan/60-roce-wizard.yaml", content="network: {}\n")],
            )
        ],
    )
    sent = json.loads(json.dumps(encode_result("plan", {"gpu-001": plan})))
    assert decode_result("plan", sent) == {"gpu-001": plan}
    assert decode_result("rollback", json.loads(json.dumps(encode_result("rollback", (["a"], []))))) == (["a"], [])
    assert decode_result("verify", encode_result("verify", None)) is None
