"""Benchmark: the terminal wizard on N real OpenSSH hosts of the namespace lab, driven as an operator would.

The hosts are tests/nslab/lab.py's (one sshd per network namespace; root), started under their own prefix ``rt-``
and network 10.81.0.0/16, so a test lab and bench/fanout.py's can run beside it. The wizard runs in this process
with Textual's pilot (headless, 160x50), on an answers file written for the lab, through the real engine: the
connection test (``t`` on the Hosts page), then discovery (``a`` on its page). Nothing is faked: events, facts
files and SSH sessions are the real ones, so the memory measured is what a user's wizard holds.

While discovery runs, and again after it, keys are timed from sending to the first frame composed after their
effect (bench/tui_common.py): the host finder (``h``, a name, Enter), the filter (``/`` and text, then backspace),
scrolling (pagedown/pageup on the host list) and a page change (``b``/``n``). Printed: ONE JSON line with

- conn_first_row_s / disc_first_row_s: from the first host answering (its connection report; its probe read) to the
  first frame showing that host's row filled in; conn_all_rows_s / disc_all_rows_s: from the key to the frame
  showing every row filled in; discovery_s: until the run ended;
- keys: p50/p95/max key-to-frame per kind, during and after discovery;
- peak_rss_mib: the process's peak resident memory (ru_maxrss; the lab's sshd are other processes), with
  rss_mib at start, after the connection test and after discovery.

    python -m bench.tui_real [--hosts 1000] [--parallel 64] [--size 160x50] [--lab-nice 19] [--no-step-aside]
                             [--trace]

The lab's 1,000 sshd share this machine's two cores with the wizard, which no real fleet does: there each sshd
runs on its own host. ``--lab-nice 19`` lets them take only the CPU the wizard leaves, which measures the wizard's
own design; without it, the figures include the lab's contention.

Goals on a 2-core machine: first row < 1 s, p95 < 100 ms, peak < 250 MiB. ``--trace`` adds tracemalloc's largest
allocation sites after discovery (on stderr; it slows everything, so its timings are not the benchmark's).
"""

from __future__ import annotations

import argparse
import asyncio
import gc
import json
import os
import resource
import sys
import tempfile
import time
import tracemalloc
from collections.abc import Callable
from datetime import datetime
from pathlib import Path
from typing import Any

if __package__ in (None, ""):  # run as a script: bench/ is on the path, not the repository root
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import yaml
from textual.widgets import Input

from bench.tui_common import KeyTimer, command_line, drawn, latency_figures, moved, rss_mib
from screens.app import WizardApp
from screens.engine_link import ANSWERS_FILE, EngineLink
from screens.fleet import stage_counts, stage_progress_line
from screens.host_finder import HostFinder
from screens.vtable import VirtualTable
from tests.nslab.lab import NsLab, missing_requirements
from wizard.engine.events import HOST_READ, Event

SIZE = (160, 50)
TIMEOUT_S = 1800.0  # a stage on 1,000 hosts of a busy 2-core machine takes minutes, never half an hour


def write_answers(lab: NsLab, state: Path, parallel: int) -> Path:
    """The answers file the wizard opens with: every lab host, its key and known_hosts (a real bring-up's)."""
    state.mkdir(parents=True, exist_ok=True)
    path = state / ANSWERS_FILE
    data = lab.answers("tui-real", connect_timeout_s=30, max_parallel_hosts=parallel)
    path.write_text(yaml.safe_dump(data, sort_keys=False), encoding="utf-8")
    return path


class RowWatch:
    """Polls a page's rows: when the first and when every row was seen filled in, and the frames after."""

    def __init__(self, timer: KeyTimer, table: Callable[[], VirtualTable | None], filled: Callable[[Any], bool]):
        self.timer, self.table, self.filled = timer, table, filled
        # The last poll that still saw no row / not every row filled in: the frame showing them is the first one
        # composed after it (rows and their frame can both fall between two polls).
        self.none_until: float | None = None
        self.some_until: float | None = None
        self.counts: list[int] = []  # rows filled in at each change: proof rows arrive one by one, not at the end
        self.times: list[float] = []  # when each of those counts was first seen

    async def run(self, stop: asyncio.Event, total: int) -> None:
        self.none_until = self.some_until = time.perf_counter()
        first_done = all_done = False
        while not all_done:
            table = self.table()
            if table is not None:
                count = sum(1 for row in table.rows if self.filled(row))
                now = time.perf_counter()
                if not self.counts or count != self.counts[-1]:
                    self.counts.append(count)
                    self.times.append(now)
                first_done = first_done or count > 0
                all_done = count >= total
                if not first_done:
                    self.none_until = now
                if not all_done:
                    self.some_until = now
            if stop.is_set() and not all_done:
                self.some_until = None  # the run ended without every row filled (a failing host)
                return
            await asyncio.sleep(0.01)

    def timeline(self, start: float, points: int = 8) -> list[list[float]]:
        """[seconds since ``start``, rows filled] at up to ``points`` of the changes, evenly spread."""
        picks = sorted({round(i * (len(self.counts) - 1) / max(1, points - 1)) for i in range(points)})
        return [[round(self.times[i] - start, 1), self.counts[i]] for i in picks if self.counts]

    def first_frame(self, answered: float | None = None) -> float | None:
        """The first frame that can show a filled row: after the last poll that saw none, and after the host
        answered (a frame drawn for a key in between shows no row yet)."""
        if not self.counts or not self.counts[-1]:
            return None
        return self.timer.frame_after(max(self.none_until or 0.0, answered or 0.0))

    def all_frame(self) -> float | None:
        return None if self.some_until is None else self.timer.frame_after(self.some_until)


class Operator:
    """The keys of one round on a page that lists hosts: finder, filter, scroll, page change."""

    def __init__(self, app: WizardApp, timer: KeyTimer, phase: str) -> None:
        self.app, self.timer, self.phase = app, timer, phase

    def _label(self, kind: str) -> str:
        return f"{self.phase}/{kind}"

    def _page(self) -> Any:
        assert self.app.main is not None
        return self.app.main.current()

    async def finder(self, name: str) -> None:
        app = self.app
        await self.timer.press(self._label("finder"), "h", lambda: finder_input(app) is not None)
        if finder_input(app) is not None:
            for ch in name:
                await self.timer.press(self._label("finder"), ch, typed(app, ch))
            await self.timer.press(self._label("finder"), "enter", lambda: finder_input(app) is None)
        for _ in range(3):  # a key that never took effect left the finder open: leave it as a user would
            if finder_input(app) is None:
                break
            await self.timer.press(self._label("finder"), "escape", lambda: finder_input(app) is None)
        await asyncio.sleep(0.05)

    async def filter(self, text: str) -> None:
        page = self._page()
        await self.timer.press(
            self._label("filter"),
            "/",
            lambda: self.app.focused is not None and "filter-text" in self.app.focused.classes,
        )
        for ch in text:
            await self.timer.press(self._label("filter"), ch, drawn(page))
        for _ in text:
            await self.timer.press(self._label("filter"), "backspace", drawn(page))
        page.query_one(VirtualTable).focus()
        await asyncio.sleep(0.05)

    async def scroll(self, times: int = 3) -> None:
        table = self._page().query(VirtualTable).first()
        table.focus()
        await asyncio.sleep(0.05)
        for key in ["pagedown"] * times + ["pageup"] * times:
            last = table.row_count - 1
            if table.cursor_row == (last if key == "pagedown" else 0):
                continue  # a short list: already at that end, the key would move nothing
            await self.timer.press(self._label("scroll"), key, moved(table))

    async def page_change(self) -> None:
        main = self.app.main
        assert main is not None
        for key, want in (("b", "hosts"), ("n", "discovery")):
            await self.timer.press(self._label("page"), key, lambda want=want: main.page == want)

    async def round(self, name: str) -> None:
        await self.finder(name)
        await self.filter(name)
        await self.scroll()
        await self.page_change()


def finder_input(app: WizardApp) -> Input | None:
    """The host finder's input, while the finder is open."""
    if app.main is None or not app.main.is_mounted:
        return None
    finder = app.main.query_one(HostFinder)
    return finder.query_one(Input) if finder.is_open else None


def typed(app: WizardApp, ch: str) -> Callable[[], bool]:
    """Done when the finder's input holds the character just typed."""

    def done() -> bool:
        field = finder_input(app)
        return field is not None and field.value.endswith(ch)

    return done


class GcPauses:
    """The screen process's cyclic garbage collections while discovery runs: how many, the longest, the total (a
    full collection walks every object the process holds, and the screen waits meanwhile)."""

    def __init__(self) -> None:
        self.started = 0.0
        self.seconds: list[float] = []
        self.full = 0

    def callback(self, phase: str, info: dict[str, int]) -> None:
        if phase == "start":
            self.started = time.perf_counter()
            return
        self.seconds.append(time.perf_counter() - self.started)
        self.full += info.get("generation") == 2

    def figures(self) -> dict[str, float | int]:
        return {
            "collections": len(self.seconds),
            "full": self.full,
            "max_ms": round(max(self.seconds, default=0.0) * 1000, 1),
            "total_ms": round(sum(self.seconds) * 1000, 1),
        }


async def loop_lag(stop: asyncio.Event, lags: list[float]) -> None:
    """How late a 10 ms sleep wakes up: the longest stretch the event loop (the wizard's, shared with the engine's
    SSH sessions) could not get to a key."""
    while not stop.is_set():
        started = time.perf_counter()
        await asyncio.sleep(0.01)
        lags.append(time.perf_counter() - started - 0.01)


async def wait_idle(app: WizardApp, timeout_s: float = TIMEOUT_S) -> None:
    deadline = time.monotonic() + timeout_s
    while app.busy:
        if time.monotonic() > deadline:
            raise TimeoutError(f"'{app.busy}' still running after {timeout_s:.0f} s")
        await asyncio.sleep(0.05)


async def drive(
    state: Path,
    *,
    keys: bool = True,
    trace: bool = False,
    size: tuple[int, int] = SIZE,
    engine_in: str = "process",
    engine_nice: int | None = None,
) -> dict[str, Any]:
    """Open the wizard on ``state`` (its answers file written), test the connections, discover; the figures.
    ``engine_in``: where host work runs, "process" (what the wizard does for real hosts) or "thread"."""
    engine = EngineLink(state, demo=False, engine=engine_in)
    hosts = engine.host_names
    app = WizardApp(engine)
    if engine_nice is not None:
        app.engine_process.niceness = engine_nice
    timer = KeyTimer(app)
    answered: dict[str, float] = {}  # first host answering per phase (the engine's own events)
    samples: dict[str, float] = {"start": rss_mib()}
    lines: list[str] = []

    def first(phase: str) -> None:
        answered.setdefault(phase, time.perf_counter())

    original = app._connection_report

    def report(found: Any) -> None:
        first("conn")
        original(found)

    app._connection_report = report  # type: ignore[method-assign]

    def sink(event: Event) -> None:
        if event.kind == "host_status" and event.data.get("stage") == "discovery":
            if event.data.get("reason") == HOST_READ or event.data.get("status") in ("failed", "done"):
                # When the host answered, by the event's own clock: from an engine process the event arrives
                # later (the pipe), and that delay belongs in the figure.
                answered.setdefault("disc", time.perf_counter() - max(0.0, time.time() - event_epoch(event)))

    received = app.receive_event

    def receive(event: Event) -> None:
        sink(event)
        received(event)

    app.receive_event = receive  # type: ignore[method-assign]  # both ways in: the bus (thread), the worker's events
    engine.bus.unsubscribe(received)
    engine.bus.subscribe(receive)
    result: dict[str, Any] = {"hosts": len(hosts)}
    async with app.run_test(headless=True, size=size) as pilot:
        await pilot.press("n")  # the start screen: a new bring-up
        while app.main is None or not app.main.is_mounted:
            await asyncio.sleep(0.05)
        await asyncio.sleep(0.3)
        main = app.main

        # -- the connection test --------------------------------------------------------------------------
        def hosts_table() -> VirtualTable | None:
            page = main.current()
            return page.query_one(VirtualTable) if main.page == "hosts" else None

        watch = RowWatch(timer, hosts_table, lambda row: len(row) > 3 and str(row[3]) != "·")
        stop = asyncio.Event()
        watcher = asyncio.create_task(watch.run(stop, len(hosts)))
        pressed = time.perf_counter()
        await pilot.press("t")
        await asyncio.sleep(0.2)
        await wait_idle(app)
        await asyncio.sleep(0.6)  # the last redraw
        stop.set()
        await watcher
        conn_first, conn_all = watch.first_frame(answered.get("conn")), watch.all_frame()
        result["conn_first_row_s"] = _since(answered.get("conn"), conn_first)
        result["conn_all_rows_s"] = _since(pressed, conn_all)
        result["conn_rows_filled"] = watch.counts[-1] if watch.counts else 0
        result["conn_row_updates"] = len(watch.counts)
        result["conn_rows_timeline"] = watch.timeline(pressed)
        samples["after_connection_test"] = rss_mib()

        # -- discovery --------------------------------------------------------------------------------------
        await pilot.press("n")
        while main.page != "discovery" or not main.current().drawn:
            await asyncio.sleep(0.05)
        await asyncio.sleep(0.3)

        def disc_table() -> VirtualTable | None:
            return main.current().query_one("#disc-hosts", VirtualTable) if main.page == "discovery" else None

        # A row is filled in when the host's facts are shown (ports "N/M up" instead of "·") or it failed.
        watch = RowWatch(
            timer, disc_table, lambda row: len(row) > 3 and (str(row[3]) != "·" or "failed" in str(row[1]))
        )
        stop = asyncio.Event()
        watcher = asyncio.create_task(watch.run(stop, len(hosts)))
        lags: list[float] = []
        lagger = asyncio.create_task(loop_lag(stop, lags))
        pauses = GcPauses()
        gc.callbacks.append(pauses.callback)
        if trace:
            tracemalloc.start(12)
        pressed = time.perf_counter()
        await pilot.press("a")
        await asyncio.sleep(0.2)
        names = [hosts[len(hosts) * k // 7] for k in range(1, 7)]
        rounds = 0
        while app.busy and keys:
            await Operator(app, timer, "during").round(names[rounds % len(names)])
            if app.busy:  # what the page's title said mid-run
                lines.append(stage_progress_line(app.progress, "discovery"))
            rounds += 1
        await wait_idle(app)
        discovery_s = time.perf_counter() - pressed
        await asyncio.sleep(0.6)
        stop.set()
        await watcher
        await lagger
        result["disc_loop_lag"] = latency_figures(lags) if lags else {}
        gc.callbacks.remove(pauses.callback)
        result["disc_gc"] = pauses.figures()
        disc_first, disc_all = watch.first_frame(answered.get("disc")), watch.all_frame()
        result["disc_first_row_s"] = _since(answered.get("disc"), disc_first)
        result["disc_all_rows_s"] = _since(pressed, disc_all)
        result["discovery_s"] = round(discovery_s, 1)
        result["disc_rows_filled"] = watch.counts[-1] if watch.counts else 0
        result["disc_row_updates"] = len(watch.counts)
        result["disc_rows_before_done"] = watch.counts[-2] if len(watch.counts) > 1 else 0
        result["disc_rows_timeline"] = watch.timeline(pressed)
        samples["after_discovery"] = rss_mib()
        if trace:
            snapshot = tracemalloc.take_snapshot()
            tracemalloc.stop()
            for stat in snapshot.statistics("traceback")[:15]:
                print(f"{stat.size / 2**20:8.1f} MiB {stat.count:8d} blocks", file=sys.stderr)
                for frame in stat.traceback.format()[-8:]:
                    print("    " + frame, file=sys.stderr)
        for _ in range(2 if keys else 0):
            await Operator(app, timer, "after").round(names[rounds % len(names)])
            rounds += 1
        samples["end"] = rss_mib()
        result["progress_during"] = lines[len(lines) // 2] if lines else ""
        result["progress"] = stage_progress_line(app.progress, "discovery")
        result["counts"] = stage_counts(app.progress, "discovery")
    result["keys"] = {label: latency_figures(values) for label, values in sorted(timer.results.items())}
    result["missed"] = timer.missed
    result["rss_mib"] = {k: round(v, 1) for k, v in samples.items()}
    result["peak_rss_mib"] = round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, 1)
    result["engine_process_peak_mib"] = app.engine_process.peak_mib or None
    return result


def event_epoch(event: Event) -> float:
    """The event's own time (ISO, UTC, milliseconds) in seconds since the epoch."""
    return datetime.fromisoformat(event.time).timestamp()


def _since(start: float | None, end: float | None) -> float | None:
    return None if start is None or end is None else round(end - start, 3)


def main() -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--hosts", type=int, default=1000)
    parser.add_argument("--parallel", type=int, default=64, help="hosts worked on at once (ssh.max_parallel_hosts)")
    parser.add_argument("--size", default="160x50", help="terminal size, COLSxROWS")
    parser.add_argument("--trace", action="store_true", help="tracemalloc's largest sites after discovery (stderr)")
    parser.add_argument("--no-keys", action="store_true", help="no timed keys: rows and memory only")
    parser.add_argument(
        "--profile",
        type=Path,
        metavar="FILE",
        help="profile the screen's thread (cProfile) and write it to FILE; it slows the run, so not for timings",
    )
    parser.add_argument(
        "--no-step-aside",
        action="store_true",
        help="the engine does not step aside while a key is handled (to measure what that buys)",
    )
    parser.add_argument(
        "--engine",
        choices=("process", "thread"),
        default="process",
        help="where host work runs: an engine process of its own (what the wizard does for real hosts) or a thread "
        "of the screen's process (as before)",
    )
    parser.add_argument(
        "--engine-nice",
        type=int,
        default=None,
        help="the engine process at this niceness instead of the wizard's own choice (to measure what it buys)",
    )
    parser.add_argument(
        "--lab-nice",
        type=int,
        default=0,
        help="the lab's sshd at this niceness (19: they take only CPU the wizard leaves, as on a real fleet, where "
        "each host's sshd runs on that host)",
    )
    args = parser.parse_args()
    reason = missing_requirements()
    if reason:
        print(f"cannot run: {reason}", file=sys.stderr)
        return 2
    cols, rows = (int(x) for x in args.size.split("x"))
    if args.no_step_aside:
        from screens.engine_thread import EngineThread

        async def never(self: EngineThread) -> None:
            await asyncio.Event().wait()

        EngineThread._step_aside = never  # type: ignore[method-assign]
    print("$ " + command_line("tui_real"), file=sys.stderr, flush=True)
    lab = NsLab(Path(tempfile.gettempdir()) / "roce-wizard-bench-tui", prefix="rt-", network="10.81.0.0/16")
    started = time.perf_counter()
    try:
        lab.up(args.hosts)
        lab.renice(args.lab_nice)
        lab_s = time.perf_counter() - started
        print(f"{args.hosts} hosts up in {lab_s:.1f} s", file=sys.stderr, flush=True)
        with tempfile.TemporaryDirectory() as tmp:
            state = Path(tmp) / "state"
            write_answers(lab, state, args.parallel)
            run = drive(
                state,
                keys=not args.no_keys,
                trace=args.trace,
                size=(cols, rows),
                engine_in=args.engine,
                engine_nice=args.engine_nice,
            )
            if args.profile:
                import cProfile

                profile = cProfile.Profile()  # the calling thread only: the screen's, not the engine's
                result = profile.runcall(asyncio.run, run)
                profile.dump_stats(str(args.profile))
            else:
                result = asyncio.run(run)
    finally:
        lab.down()
    result = {
        "command": command_line("tui_real"),
        "lab_up_s": round(lab_s, 1),
        "lab_nice": args.lab_nice,
        "step_aside": not args.no_step_aside,
        "engine": args.engine,
        "engine_nice": args.engine_nice,
        "cpus": os.cpu_count(),
        **result,
    }
    print(json.dumps(result))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
