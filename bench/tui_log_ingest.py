"""Benchmark: 64 hosts streaming output into the wizard through the runner's event path.

Reports lines ingested per second (lines the event sink accepted and the log pane drained) and the response
time to key presses while the flood goes on: to the key's action running, and to the next frame composed after it
(headless: the compositor update is built, only writing it to a terminal is skipped).

    python bench/tui_log_ingest.py [--hosts 64] [--seconds 10] [--rate 0]

--rate 0 sends as fast as the event loop lets a producer that yields after every line to each host.
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import tempfile
import time
from pathlib import Path

from screens.app import WizardApp
from screens.engine_link import EngineLink
from screens.log_panel import LogPanel
from screens.main import MainScreen


def make_app(hosts: int, state: Path) -> WizardApp:
    engine = EngineLink(state, demo=False)
    data = engine.data()
    data["hosts"] = [{"name": f"gpu-{i:03d}", "address": f"10.1.{i // 200}.{i % 200 + 1}"} for i in range(hosts)]
    engine.replace(data)
    return WizardApp(engine)


async def bench(hosts: int, seconds: float, rate: float) -> dict[str, float]:
    with tempfile.TemporaryDirectory() as tmp:
        app = make_app(hosts, Path(tmp) / "state")
        latencies: list[float] = []
        frame_latencies: list[float] = []
        handled: list[float] = []
        frames: list[float] = []
        display = app._display

        def timed_display(screen, renderable) -> None:  # type: ignore[no-untyped-def]
            if renderable is not None:
                frames.append(time.perf_counter())
            display(screen, renderable)

        app._display = timed_display  # type: ignore[method-assign]
        original = MainScreen.action_host

        def timed(self: MainScreen, delta: int) -> None:
            handled.append(time.perf_counter())
            original(self, delta)

        MainScreen.action_host = timed  # type: ignore[method-assign]
        try:
            async with app.run_test(size=(160, 50)) as pilot:
                await pilot.press("n", "n", "n", "3")
                await pilot.pause(0.3)
                names = app.engine.host_names
                sent = 0
                stop = time.perf_counter() + seconds

                async def produce() -> None:
                    nonlocal sent
                    start = time.perf_counter()
                    while time.perf_counter() < stop:
                        for name in names:
                            app.engine.bus.emit("output", host=name, stream="stdout", line=f"{name} line {sent}")
                            sent += 1
                        if rate:
                            ahead = sent / rate - (time.perf_counter() - start)
                            await asyncio.sleep(max(0.0, ahead))
                        else:
                            await asyncio.sleep(0)

                producer = asyncio.create_task(produce())
                start = time.perf_counter()
                while time.perf_counter() < stop - 0.3:
                    await asyncio.sleep(0.25)
                    before = len(handled)
                    pressed = time.perf_counter()
                    app.simulate_key("right_square_bracket")
                    while len(handled) == before and time.perf_counter() - pressed < 5:
                        await asyncio.sleep(0.001)
                    if len(handled) > before:
                        latencies.append(handled[-1] - pressed)
                        done = handled[-1]
                        while not (frames and frames[-1] > done) and time.perf_counter() - pressed < 5:
                            await asyncio.sleep(0.001)
                        if frames and frames[-1] > done:
                            frame_latencies.append(next(f for f in frames if f > done) - pressed)
                await producer
                elapsed = time.perf_counter() - start
                await pilot.pause(0.3)
                shown = app.main.current().query_one(LogPanel) if app.main else None
                return {
                    "hosts": hosts,
                    "seconds": round(elapsed, 2),
                    "lines_sent": sent,
                    "lines_ingested_per_s": round(app.buffers.ingested / elapsed),
                    "key_presses": len(latencies),
                    "key_latency_median_ms": round(statistics.median(latencies) * 1000, 1) if latencies else -1,
                    "key_latency_p95_ms": round(sorted(latencies)[int(len(latencies) * 0.95) - 1] * 1000, 1)
                    if latencies
                    else -1,
                    "key_latency_max_ms": round(max(latencies) * 1000, 1) if latencies else -1,
                    "key_to_frame_median_ms": _ms(statistics.median(frame_latencies)) if frame_latencies else -1,
                    "key_to_frame_p95_ms": _ms(_p95(frame_latencies)) if frame_latencies else -1,
                    "key_to_frame_max_ms": _ms(max(frame_latencies)) if frame_latencies else -1,
                    "lines_kept_per_host": len(app.buffers.tail(names[0])),
                    "pane_host": shown.host if shown else "",
                }
        finally:
            MainScreen.action_host = original  # type: ignore[method-assign]


def _ms(seconds: float) -> float:
    return round(seconds * 1000, 1)


def _p95(values: list[float]) -> float:
    return sorted(values)[max(0, int(len(values) * 0.95) - 1)]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--hosts", type=int, default=64)
    parser.add_argument("--seconds", type=float, default=10.0)
    parser.add_argument("--rate", type=float, default=0.0, help="total lines/s to offer (0: as fast as possible)")
    args = parser.parse_args()
    result = asyncio.run(bench(args.hosts, args.seconds, args.rate))
    for key, value in result.items():
        print(f"{key:>24}: {value}")


if __name__ == "__main__":
    main()
