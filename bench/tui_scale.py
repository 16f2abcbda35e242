"""Benchmark: the terminal wizard on 1,000 hosts; key-to-frame latency on the heaviest pages and peak memory.

The hosts are fake (tests/tui/fleet_fakes.py): discovery facts written to a state directory (4 rails, LLDP
neighbours, one leaf per 32 hosts) and the events of a discovery run and a network apply under way (612 done,
3 failed, the rest running; plans with file contents, 50 hosts with a plan of their own) sent through the engine's
event bus exactly as the runner sends them. A 1,000-host simulated lab runs in this same process (asyncssh servers
and 1,000 simulated file systems), so it would be measured as the wizard's memory and would compete with it for the
two cores; the TUI only ever sees the runner's events and the state directory, which is what is faked here.

While keys are pressed, a producer keeps sending output lines and check events (--rate per second). A key's
latency runs from sending the key to the first frame composed after its effect is visible in the widgets (a cursor
moved, a list redrawn, a page shown); headless: the frame is built, only writing it to a terminal is skipped.

    python -m bench.tui_scale [--hosts 1000] [--rate 2000] [--size 160x50]   (or python bench/tui_scale.py)
"""

from __future__ import annotations

import argparse
import asyncio
import os
import resource
import statistics
import sys
import tempfile
import time
from pathlib import Path

if __package__ in (None, ""):  # run as a script: bench/ is on the path, not the repository root
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from textual.widgets import Input

from bench.tui_common import KeyTimer, command_line, drawn, moved
from bench.tui_common import ms as _ms
from bench.tui_common import p95 as _p95
from screens.app import WizardApp
from screens.fleet import stage_progress_line
from screens.host_finder import HostFinder
from screens.log_panel import LogPanel
from screens.vtable import VirtualTable
from tests.tui.fleet_fakes import make_fleet_app, send_discovery, send_network


async def exercise(app: WizardApp, timer: KeyTimer) -> None:
    """The keys an operator presses on each heavy page."""
    main = app.main
    assert main is not None

    async def keys(page: str, widget: object, sequence: str | list[str]) -> None:
        for key in sequence:
            await timer.press(page, key, drawn(widget))

    async def cursor(page: str, table: VirtualTable, count: int) -> None:
        table.focus()
        await asyncio.sleep(0.05)
        down = True
        for i in range(count):
            if table.cursor_row >= table.row_count - 12:
                down = False
            elif table.cursor_row < 12:
                down = True
            key = ("down" if i % 4 != 3 else "pagedown") if down else ("up" if i % 4 != 3 else "pageup")
            await timer.press(page, key, moved(table))

    async def open_page(page: str, key: str, want: str) -> None:
        await timer.press(page, key, lambda: main.page == want and main.current().drawn > 0)

    async def type_filter(page: str, widget: object, text: str) -> None:
        await timer.press(page, "/", lambda: app.focused is not None and "filter-text" in app.focused.classes)
        await keys(page, widget, list(text))
        for _ in text:
            await timer.press(page, "backspace", drawn(widget))
        main.current().query_one(VirtualTable).focus()
        await asyncio.sleep(0.05)

    hosts = main.current()
    await cursor("hosts", hosts.query_one(VirtualTable), 24)
    await keys("hosts", hosts, ["f", "f", "g", "g"])
    await type_filter("hosts", hosts, "gpu-09")

    await open_page("discovery", "n", "discovery")
    disc = main.current()
    for _ in range(20):
        before = disc.host
        await timer.press("discovery", "right_square_bracket", lambda before=before: disc.host != before)
    await keys("discovery", disc, ["f", "f", "g", "g"])
    await type_filter("discovery", disc, "leaf-07")
    await cursor("discovery", disc.query_one("#disc-hosts", VirtualTable), 12)

    main.show_page("network")
    await asyncio.sleep(0.3)
    stage = main.current()
    for tab in ("2", "1", "3", "2"):
        await timer.press("network", tab, drawn(stage))
    await cursor("network", stage.query_one("#checks", VirtualTable), 20)
    await keys("network", stage, ["f", "f"])
    await type_filter("network", stage, "route")
    await timer.press("network", "1", drawn(stage))
    await cursor("network", stage.query_one("#plan-groups", VirtualTable), 12)
    await timer.press("network", "3", drawn(stage))
    panel = stage.query_one(LogPanel)
    for _ in range(10):
        before = panel.host
        await timer.press("network", "right_square_bracket", lambda before=before: panel.host != before)

    main.show_page("summary")
    await asyncio.sleep(0.3)
    summary = main.current()
    await cursor("summary", summary.query_one("#grid", VirtualTable), 20)
    await keys("summary", summary, ["f", "f", "g", "g"])
    await type_filter("summary", summary, "gpu-05")

    finder = main.query_one(HostFinder)
    for _ in range(5):
        await timer.press("host picker", "h", lambda: finder.is_open)
        typed = ""
        for ch in "0500":
            typed += ch
            await timer.press("host picker", ch, lambda typed=typed: finder.query_one(Input).value == typed)
        await timer.press("host picker", "escape", lambda: not finder.is_open)


async def bench(hosts: int, rate: float, size: tuple[int, int]) -> dict[str, object]:
    failing = tuple(range(7, hosts, max(1, hosts // 5)))
    own = tuple(range(0, hosts, max(1, hosts // 50)))
    with tempfile.TemporaryDirectory() as tmp:
        started = time.perf_counter()
        app = make_fleet_app(Path(tmp) / "state", hosts, failing=failing)
        setup_s = time.perf_counter() - started
        timer = KeyTimer(app)
        async with app.run_test(size=size) as pilot:
            await pilot.press("n")
            await pilot.pause(0.3)
            started = time.perf_counter()
            send_discovery(app, failing=failing)
            send_network(app, done=hosts * 612 // 1000, failed=max(1, hosts * 3 // 1000), own_plans=own)
            sent = app.events_seen
            while app._dirty or app._events:
                await asyncio.sleep(0.01)
            ingest_s = time.perf_counter() - started
            stop = asyncio.Event()

            async def produce() -> None:
                names = app.engine.host_names
                n = 0
                while not stop.is_set():
                    for _ in range(max(1, int(rate / 100))):
                        host = names[n % len(names)]
                        app.engine.bus.emit("output", host=host, stream="stdout", line=f"{host} line {n}")
                        if n % 10 == 0:
                            app.engine.bus.emit(
                                "check", stage="network", host=host, id="live", title="live", status="pass",
                                evidence="ok", fix=None,
                            )  # fmt: skip
                        n += 1
                    await asyncio.sleep(0.01)

            producer = asyncio.create_task(produce())
            await exercise(app, timer)
            stop.set()
            await producer
            line = stage_progress_line(app.progress, "network")
    peak_kib = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    return {
        "hosts": hosts,
        "setup_s": round(setup_s, 2),
        "events": sent,
        "events_applied_s": round(ingest_s, 2),
        "progress": line,
        "pages": timer.results,
        "missed": timer.missed,
        "peak_rss_mib": round(peak_kib / 1024, 1),
    }


def table(result: dict[str, object]) -> str:
    pages: dict[str, list[float]] = result["pages"]  # type: ignore[assignment]
    missed: dict[str, int] = result["missed"]  # type: ignore[assignment]
    rows = [f"{'page':<12} {'keys':>5} {'median ms':>10} {'p95 ms':>8} {'max ms':>8} {'missed':>7}"]
    for page, values in pages.items():
        rows.append(
            f"{page:<12} {len(values):>5} {_ms(statistics.median(values)):>10} {_ms(_p95(values)):>8} "
            f"{_ms(max(values)):>8} {missed.get(page, 0):>7}"
        )
    rows.append(
        f"hosts {result['hosts']} · {result['events']} events applied in {result['events_applied_s']} s · "
        f"{result['progress']} · peak RSS {result['peak_rss_mib']} MiB (whole process)"
    )
    return "\n".join(rows)


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--hosts", type=int, default=1000)
    parser.add_argument("--rate", type=float, default=2000.0, help="output lines per second sent while keys are timed")
    parser.add_argument("--size", default="160x50", help="terminal size, COLSxROWS")
    args = parser.parse_args()
    cols, rows = (int(x) for x in args.size.split("x"))
    print("$ " + command_line("tui_scale"), f"(pid {os.getpid()})", flush=True)
    result = asyncio.run(bench(args.hosts, args.rate, (cols, rows)))
    print(table(result))


if __name__ == "__main__":
    main()
