"""The engine's own event loop: work started from the screen's loop runs there and its result comes back; while the
screen handles a key the engine steps aside until the key's frame is drawn, and never for longer than YIELD_MAX_S
(host work must go on even if the screen never says it is done)."""

from __future__ import annotations

import asyncio
import threading

import pytest

from screens import engine_thread
from screens.engine_thread import EngineThread


async def until(event: threading.Event) -> None:
    await asyncio.wait_for(asyncio.to_thread(event.wait), 30)


async def test_work_runs_on_the_engine_thread_and_its_result_comes_back() -> None:
    thread = EngineThread()

    async def where() -> str:
        return threading.current_thread().name

    try:
        assert await thread.run(where()) == "roce-wizard-engine"
    finally:
        thread.stop()


async def test_nothing_runs_on_the_engine_while_a_key_is_handled_and_it_resumes_when_the_key_is_drawn(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(engine_thread, "YIELD_MAX_S", 3600.0)  # only the screen ends this wait
    thread = EngineThread()
    try:
        loop = thread.loop()
        thread.key_pending.set()
        await until(thread.stepping_aside)
        ran = threading.Event()
        loop.call_soon_threadsafe(ran.set)  # host work that would run now
        await asyncio.sleep(0.2)
        assert not ran.is_set(), "the engine ran while the screen was handling a key"
        thread.key_pending.clear()  # the key's frame is drawn
        await until(ran)
    finally:
        thread.stop()


async def test_a_key_never_drawn_holds_the_engine_no_longer_than_the_bound(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(engine_thread, "YIELD_MAX_S", 0.05)
    thread = EngineThread()
    try:
        loop = thread.loop()
        thread.key_pending.set()  # and the screen never clears it
        await until(thread.stepping_aside)
        ran = threading.Event()
        loop.call_soon_threadsafe(ran.set)
        await until(ran)
        assert not thread.key_pending.is_set()
    finally:
        thread.stop()
