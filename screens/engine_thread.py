"""A second event loop, in its own thread, where the terminal wizard's host work runs.

Measured on 1,000 real OpenSSH hosts (bench/tui_real.py): with the runner on the screen's event loop, the SSH
sessions, the parsing of every probe output and the end of a stage (plans and checks of 1,000 hosts) held that loop
for 0.1-1.5 s at a time (median lag 58 ms, p95 1.1 s), and keys waited behind them for seconds. On a loop of its
own the engine still shares the process (and the GIL), but Python hands the GIL over every few milliseconds, so a
key is handled within a few switches instead of after the engine's whole turn: on the same run the loop's lag fell
to a median of 18-22 ms (p95 0.16-0.23 s) and no key went unanswered (before: keys missed for 5 s).

Rules that keep the two loops apart: an asyncio object is only used on the loop that made it (host work makes its
sessions on the engine loop and closes them there); widgets are only touched on the screen's loop (the engine side
hands results back, events go through the app's inbox, a question to the operator is asked with ``ask_ui``).
"""

from __future__ import annotations

import asyncio
import threading
import time
from collections.abc import Awaitable, Coroutine
from typing import Any, TypeVar

T = TypeVar("T")

YIELD_CHECK_S = 0.01  # how often the engine loop looks whether the screen is handling a key
YIELD_MAX_S = 0.25  # the longest it steps aside for one key: host work never waits longer than this at a time


class EngineThread:
    """Starts on first use; ``run`` awaits, on the screen's loop, a coroutine run on the engine loop."""

    def __init__(self) -> None:
        self._loop: asyncio.AbstractEventLoop | None = None
        self._thread: threading.Thread | None = None
        self.ui_loop: asyncio.AbstractEventLoop | None = None
        self.key_pending = threading.Event()
        """Set by the screen from a key press until the frame that shows its effect: the engine steps aside."""
        self.stepping_aside = threading.Event()
        """Set while the engine loop is blocked for a key (tests wait on it)."""

    def loop(self) -> asyncio.AbstractEventLoop:
        if self._loop is None:
            ready = threading.Event()

            def main() -> None:
                self._loop = asyncio.new_event_loop()
                self._loop.create_task(self._step_aside())
                ready.set()
                self._loop.run_forever()

            self._thread = threading.Thread(target=main, name="roce-wizard-engine", daemon=True)
            self._thread.start()
            ready.wait()
        assert self._loop is not None
        return self._loop

    async def _step_aside(self) -> None:
        """While the screen handles a key, block this loop (a blocking wait lets go of the GIL), so the key's frame
        does not share the interpreter with SSH sessions and parsing. The screen clears ``key_pending`` once the
        frame is drawn; YIELD_MAX_S bounds the wait in case it never does. Sessions lose nothing: what the hosts
        send waits in the kernel's socket buffers."""
        while True:
            if self.key_pending.is_set():
                deadline = time.monotonic() + YIELD_MAX_S
                self.stepping_aside.set()
                while self.key_pending.is_set() and time.monotonic() < deadline:
                    time.sleep(0.002)
                self.key_pending.clear()
                self.stepping_aside.clear()
            await asyncio.sleep(YIELD_CHECK_S)

    async def run(self, work: Coroutine[Any, Any, T]) -> T:
        """Run ``work`` on the engine loop and wait for it here. Cancelling the wait cancels the work there and
        waits until it has stopped (a stopped run saves its hosts as interrupted and closes its sessions)."""
        ui = asyncio.get_running_loop()
        self.ui_loop = ui
        finished: asyncio.Future[asyncio.Task[T]] = ui.create_future()
        holder: list[asyncio.Task[T]] = []
        engine = self.loop()

        def done(task: asyncio.Task[T]) -> None:
            ui.call_soon_threadsafe(lambda: finished.done() or finished.set_result(task))

        def start() -> None:
            task = engine.create_task(work)
            task.add_done_callback(done)
            holder.append(task)

        engine.call_soon_threadsafe(start)
        try:
            task = await asyncio.shield(finished)
        except asyncio.CancelledError:
            # Scheduled after ``start`` (the engine loop runs its callbacks in order), so the task exists by then.
            engine.call_soon_threadsafe(lambda: holder[0].cancel())
            await finished
            raise
        return task.result()

    async def ask_ui(self, question: Awaitable[T]) -> T:
        """From the engine loop: await ``question`` (a coroutine that talks to widgets) on the screen's loop."""
        assert self.ui_loop is not None, "ask_ui is for work started with run()"
        return await asyncio.wrap_future(asyncio.run_coroutine_threadsafe(question, self.ui_loop))  # type: ignore[arg-type]

    def stop(self) -> None:
        """End the engine loop (its work closed before); the thread is a daemon, so a stuck one never holds exit."""
        loop, thread = self._loop, self._thread
        if loop is None or thread is None:
            return
        loop.call_soon_threadsafe(loop.stop)
        thread.join(timeout=5)
        if not thread.is_alive():
            loop.close()
        self._loop = self._thread = None
