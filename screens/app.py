"""The terminal wizard: owns the engine link, hands host work to the engine thread, turns events into redraws."""

from __future__ import annotations

import ctypes
import gc
import logging
import shutil
import time
from collections import deque
from pathlib import Path

from pydantic import BaseModel
from textual import events, work
from textual.app import App
from textual.binding import Binding

from screens.answers_editing import AnswersEditing
from screens.dialogs import FullLog, HelpPanel, Question
from screens.engine_link import EngineLink
from screens.engine_thread import EngineThread
from screens.facts_index import FactsIndex
from screens.help_text import help_markdown
from screens.host_actions import HostActions
from screens.log_buffer import LogBuffers
from screens.main import MainScreen
from screens.palette import WizardCommands
from screens.progress import Progress
from screens.start import StartScreen
from wizard.answers import sections as answer_sections
from wizard.answers.model import Answers
from wizard.engine.conn_test import ConnectionReport
from wizard.engine.events import Event
from wizard.engine.interactive import resume_point, saved_progress
from wizard.engine.runner import Runner
from wizard.engine.session import Session
from wizard.engine.step import HostPlan
from wizard.engine.worker_client import EngineProcess
from wizard.paths import assets_dir

SECTION_MODELS: dict[str, type[BaseModel]] = {
    "ofed": answer_sections.OfedSection,
    "network": answer_sections.NetworkSection,
    "roce": answer_sections.RoceSection,
    "gpudirect": answer_sections.GpuDirectSection,
    "nccl": answer_sections.NcclSection,
    "inference": answer_sections.InferenceSection,
}
SHORT_NAMES = {
    "discovery": "Discovery",
    "ofed": "Drivers (OFED)",
    "network": "Network rails",
    "roce": "RoCE + QoS",
    "gpudirect": "GPUDirect",
    "nccl": "NCCL",
    "inference": "Inference",
}
FLUSH_INTERVAL_S = 0.1
REDRAW_INTERVAL_S = 0.3
KEY_FIRST_S = 0.25  # the longest a key's frame holds back the hosts' news (events wait in their queue meanwhile)
TYPING_HOLD_S = 0.6  # the tables hold still this long after a key while the operator types, scrolls or searches
MAX_STALE_S = 2.0  # ... but never longer than this: rows catch up even under a key held down
HEAP_TIDY_S = 5.0
HEAP_CHECK_S = 1.0
HEAP_QUIET_S = 2.0
HEAP_TIDY_HOSTS = 200


class WizardApp(HostActions, AnswersEditing, App[int]):
    """Walks an operator through the bring-up; the runner and steps are the ones headless mode uses."""

    CSS_PATH = str(assets_dir() / "wizard.tcss")
    TITLE = "roce-wizard"
    COMMANDS = App.COMMANDS | {WizardCommands}
    BINDINGS = [
        Binding("q", "quit", "Quit"),
        Binding("ctrl+s", "save_answers", "Save answers", show=False),
    ]

    def __init__(self, engine: EngineLink, *, log_keep: int = 2000) -> None:
        super().__init__()
        self.engine = engine
        self.buffers = LogBuffers(log_keep)
        self.buffers.set_host_count(len(engine.host_names))
        self.progress = Progress([s.id for s in engine.steps], engine.host_names)
        self.plans: dict[str, dict[str, HostPlan]] = {}
        self.conn_reports: dict[str, ConnectionReport] = {}
        self.conn_revision = 0
        """Bumped on every connection report (the hosts page rebuilds its rows when it moves)."""
        self.busy: str | None = None
        self._runner: Runner | None = None  # the runner of the host work in progress (quit stops it)
        self.main: MainScreen | None = None
        self._dirty = False
        self._redrawn_at = 0.0
        self._redraw_gap = REDRAW_INTERVAL_S
        self._key_at = 0.0
        self._confirmed_all: set[str] = set()
        self._tool_session: Session | None = None
        self.events_seen = 0
        # Filled by the engine's thread (screens/engine_thread.py), emptied here once a tick: appending to and
        # popping from a deque are safe across threads, where the widgets' own state is not.
        self._events: deque[Event] = deque()
        self._reports: deque[ConnectionReport] = deque()
        self.engine_thread = EngineThread()
        self.engine_process = EngineProcess(lambda: engine.worker_log)
        self._facts: FactsIndex | None = None
        self.facts_epoch = 0
        self._facts_hosts: set[str] | None = None  # facts that may have changed since the last refresh; None: any
        self._facts_seen = -1
        self._tidied_at = 0.0
        self._last_key = 0.0
        self._release_due = False  # host work ended: its heap is released at the next quiet moment
        engine.bus.subscribe(self.receive_event)
        self._load_saved()

    # -- pages and titles ---------------------------------------------------------------------------------
    def titles(self) -> dict[str, str]:
        return {s.id: SHORT_NAMES.get(s.id, s.title) for s in self.engine.steps}

    def pages(self) -> list[tuple[str, str]]:
        """(page id, short name) in flow order; the short names fit the sidebar at 80 columns."""
        stages = [(s.id, SHORT_NAMES.get(s.id, s.title)) for s in self.engine.steps]
        return [("hosts", "Hosts"), *stages, ("summary", "Summary")]

    def section_model(self, stage: str) -> type[BaseModel] | None:
        return SECTION_MODELS.get(stage)

    def _load_saved(self) -> None:
        store = self.engine.store
        hosts = self.engine.host_names
        saved = saved_progress(store, hosts, self.progress.stages)
        checks = {(s, h): store.host(h).stages[s].checks for h in hosts for s in store.host(h).stages}
        self.progress.set_hosts(hosts)
        self.progress.load_saved(saved, checks)
        self.facts_changed()

    def facts_index(self) -> FactsIndex:
        """Discovery facts summarised per host; facts files are looked at again only after discovery events."""
        root = self.engine.state_dir
        if self._facts is None or self._facts.root != root:
            self._facts, self._facts_seen, self._facts_hosts = FactsIndex(root), -1, None
        if self._facts_seen != self.facts_epoch:
            self._facts_seen = self.facts_epoch
            only, self._facts_hosts = self._facts_hosts, set()
            self._facts.refresh(self.engine.host_names, only)
        return self._facts

    def facts_changed(self, host: str | None = None) -> None:
        """Facts files may have changed: ``host``'s (a discovery event about it), else any host's."""
        self.facts_epoch += 1
        if host is None:
            self._facts_hosts = None
        elif self._facts_hosts is not None:
            self._facts_hosts.add(host)

    # -- lifecycle ----------------------------------------------------------------------------------------
    async def on_event(self, event: events.Event) -> None:
        if isinstance(event, events.Key):
            self._last_key = time.monotonic()
        if isinstance(event, events.Key) and self.busy is not None:
            # Host work is running on the engine's thread: it steps aside until the key's effect is drawn (two
            # refreshes: the first may be one already due), so the key does not share the interpreter with it.
            pending = self.engine_thread.key_pending
            pending.set()
            self._key_at = time.monotonic()
            self.engine_process.pause()  # host work in an engine process is paused the same way (at most 0.25 s)

            def drawn() -> None:
                pending.clear()
                self.engine_process.resume()

            self.call_after_refresh(lambda: self.call_after_refresh(drawn))
        await super().on_event(event)

    def on_mount(self) -> None:
        gc.freeze()  # the app's start-up objects live as long as it does; collections need not walk them
        self._show_busy()
        self.set_interval(FLUSH_INTERVAL_S, self.flush)
        self.set_interval(HEAP_CHECK_S, self.tidy_heap)
        self.push_screen(StartScreen(), self._started)
        if self.engine.worker_process:  # the first action's engine process starts importing while the operator reads
            self.set_timer(1.0, self.engine_process.warm)

    def _started(self, choice: str | None) -> None:
        if choice == "new" and self.engine.store.exists():
            self.start_over()
            return
        page = "hosts"
        if choice == "resume":
            saved = saved_progress(self.engine.store, self.engine.host_names, self.progress.stages)
            page = resume_point(saved, self.progress.stages) or "summary"
        # Pushed after the start screen has fully gone; pushing from inside its dismiss callback left the
        # terminal showing the old screen until the next key.
        self.call_later(self.open_main, page)

    def open_main(self, page: str = "hosts") -> None:
        """Show the main screen (a fresh one after the hosts or answers were replaced)."""
        old, self.main = self.main, MainScreen(page)
        if old is not None:
            self.switch_screen(self.main)
        else:
            self.push_screen(self.main)

    @work(group="engine", exit_on_error=False, description="start over")
    async def start_over(self) -> None:
        old = self.engine.state_dir
        moved = old.with_name(f"{old.name}.old-{time.strftime('%Y%m%d-%H%M%S')}")
        what = (
            "The saved progress and the simulated hosts' disks (they start bare) move"
            if self.engine.demo
            else "The saved progress moves"
        )
        if await self.push_screen_wait(Question("Start a new bring-up?", f"{what} to {moved}. No host is changed.")):
            await self.engine_thread.run(self.engine.close())
            shutil.move(str(old), str(moved))
            self.progress = Progress(self.progress.stages, self.engine.host_names)
            self.notify(f"old progress kept in {moved}")
        self.open_main()

    async def on_unmount(self) -> None:
        if self._tool_session is not None:
            await self._tool_session.close()
        await self.engine_thread.run(self.engine.close())  # the simulated lab, if any, lives on the engine's loop
        self.engine_thread.stop()
        self.engine_process.close()

    # -- events from the runner ---------------------------------------------------------------------------
    def receive_event(self, event: Event) -> None:
        """The runner's sink, called on the engine's thread: the event waits for the next tick (a stage on 1,000
        hosts sends tens of thousands of events; one message each would queue them ahead of key presses)."""
        self.events_seen += 1
        self._events.append(event)

    def apply_events(self) -> None:
        """On the screen's loop, every tick: lines of the events that arrived go to bounded buffers, the rest is
        recorded in the progress, in order; connection reports join the table."""
        events, reports = self._events, self._reports
        while reports:
            report = reports.popleft()
            self.conn_reports[report.host] = report
            self.conn_revision += 1
            self._dirty = True
        while events:
            event = events.popleft()
            data = event.data
            if event.kind == "output":  # one line (a live command) or many (a probe's output from a batch)
                for line in data["lines"] if "lines" in data else [data["line"]]:
                    self.buffers.add(data["host"], "  " + line)
                if data.get("more"):  # an engine process sends a long output's first lines and their number
                    self.buffers.add_folded(data["host"], data["more"])
                continue
            if event.kind == "command":
                self.buffers.add(data["host"], f"$ {data['command']}")
                continue
            if event.kind == "command_done":
                if data.get("error") or data.get("exit_status") not in (0, None):
                    self.buffers.add(data["host"], f"  = {data.get('error') or 'exit ' + str(data['exit_status'])}")
                continue
            if event.kind == "change_started":
                self.buffers.add(data["host"], f"▶ [{data['impact']}] {data['summary']}")
            if self.progress.apply(event) == "discovery":
                self.facts_changed(data.get("host"))
            self._dirty = True

    def tidy_heap(self) -> None:
        """With hundreds of hosts, a full cyclic collection walks every check, plan and cached line: measured at
        0.2-0.5 s per collection at 1,000 hosts, a frozen screen each time. Collecting what is garbage now and then
        freezing the survivors keeps every later collection to what was made since (tens of ms).

        While hosts are worked on in an engine process, this process holds only the screen's objects: the rows,
        lines and events it keeps. They are frozen as they come (at every tick of ``flush``, no collection), so
        Python's own full collections walk only the last tick's objects. A 1,000-host discovery had 23 of them, up to
        434 ms each, 4.7 s in all (bench/tui_real.py `disc_gc`). The cyclic garbage frozen meanwhile is freed by
        ``release_heap`` when the work is over.

        With the work on the engine thread (the demo), nothing is frozen while it runs: the engine's objects alive
        now (SSH channels, a command's output) are garbage a moment later, and frozen there they raised the peak."""
        now = time.monotonic()
        if self._release_due and not self.busy and now - self._last_key >= HEAP_QUIET_S:
            self.release_heap()
            return
        if len(self.progress.hosts) < HEAP_TIDY_HOSTS:
            return
        if self.busy:
            return  # with an engine process, ``flush`` freezes at every tick
        if now - self._tidied_at >= HEAP_TIDY_S:
            self._tidied_at = now
            gc.collect()
            gc.freeze()

    def heap_after_work(self) -> None:
        """Host work ended. With few hosts the heap is released now; with hundreds, a full collection takes a frozen
        half second (643 ms after a 1,000-host discovery, bench/tui_real.py), so it waits for a moment without keys
        (HEAP_QUIET_S): the operator never types into it."""
        if len(self.progress.hosts) < HEAP_TIDY_HOSTS:
            self.release_heap()
        else:
            self._release_due = True

    def release_heap(self) -> None:
        """After host work: what the run left behind (closed SSH connections and channels, exceptions and their
        frames: cycles only the collector frees) was frozen by ``tidy_heap`` while it was alive, and frozen objects
        are never collected. Unfreezing and collecting once, when the work is over, frees them (measured on the
        namespace lab: without it every host's connection stayed for good); freed memory goes back to the system."""
        self._release_due = False
        gc.unfreeze()
        gc.collect()
        gc.freeze()
        trim_malloc()

    def flush(self) -> None:
        """Every tick: apply new events, hand new log lines to the shown pane and redraw what changed, once."""
        self.engine_process.resume_if_overdue()  # a key whose frame never came: host work goes on
        if self.busy and self.engine.worker_process and len(self.progress.hosts) >= HEAP_TIDY_HOSTS:
            gc.freeze()  # see tidy_heap: every tick, so a full collection walks a tenth of a second's objects
        if self.engine_thread.key_pending.is_set() and time.monotonic() - self._key_at < KEY_FIRST_S:
            return  # a key is being handled: its frame goes first, the hosts' news waits a tick or two
        self.apply_events()
        batch = self.buffers.drain()
        if self.main is None or not self.main.is_mounted or self.main._closing or self._exit:
            return
        if batch:
            self.main.ingest(batch)
        now = time.monotonic()
        # Tables are rebuilt at most a few times a second: with 64 hosts, check events arrive in bursts. While the
        # operator is pressing keys they hold still (TYPING_HOLD_S, at most MAX_STALE_S): at 1,000 hosts a redraw
        # under load took up to 0.1-0.2 s, and a key that arrived during one waited for it (bench/tui_real.py,
        # during discovery: keys' p95 150-250 ms against 25-45 ms after it).
        typing = now - self._last_key < TYPING_HOLD_S and now - self._redrawn_at < MAX_STALE_S
        if self._dirty and not typing and now - self._redrawn_at >= self._redraw_gap:
            self._dirty = False
            self._redrawn_at = now
            self.main.refresh_all()
            # With 1,000 hosts a redraw costs tens of ms; spacing redraws by 5x their cost keeps them under a fifth
            # of the time while events pour in, so key presses never queue behind them.
            self._redraw_gap = max(REDRAW_INTERVAL_S, 5 * (time.monotonic() - now))

    # -- views --------------------------------------------------------------------------------------------
    def open_full_log(self, host: str | None) -> None:
        host = host or (self.engine.host_names[0] if self.engine.host_names else None)
        if host:
            self.push_screen(FullLog(host, self.engine.store.logs_dir / f"{host}.log"))

    @work(group="tools", exit_on_error=False, description="open a test screen")
    async def open_tool(self, tool: str) -> None:
        """Open the bandwidth test or the doctor (screens of their own) over fresh connections to the hosts."""
        if self._tool_session is not None:
            await self._tool_session.close()
        # Opened on the engine's loop, where the simulated lab (if any) starts and stops; the tool's own commands
        # then run here (executors connect on first use).
        self._tool_session = session = await self.engine_thread.run(self.engine.open())
        args = (self.engine.answers, session.executors)
        if tool == "bwtest":
            from screens.bwtest import BandwidthScreen

            self.push_screen(BandwidthScreen(*args, simulated=self.engine.demo, state_dir=self.engine.state_dir))
        else:
            from screens.doctor import DoctorScreen

            self.push_screen(DoctorScreen(*args, simulated=self.engine.demo))

    def open_bandwidth_test(self) -> None:
        from screens.bwtest import open_bandwidth_page

        open_bandwidth_page(self)  # the page shows at once and connects itself (the lab can take seconds to start)

    def open_doctor(self) -> None:
        self.open_tool("doctor")

    def open_help(self, page: str) -> None:
        self.push_screen(HelpPanel(help_markdown(page)))

    async def action_quit(self) -> None:
        if self.busy:
            self.push_screen(
                Question(
                    f"Quit while '{self.busy}' runs?",
                    "Host work stops now. Everything done so far is saved; run roce-wizard again with the same "
                    "state directory to resume (the interrupted stage is planned again and retried).",
                ),
                lambda yes: self._stop_and_quit() if yes else None,
            )
            return
        self.exit(return_code=0 if self.all_verified() else 1)

    @work(group="quit", exit_on_error=False, description="stopping host work")
    async def _stop_and_quit(self) -> None:
        """Quit while a stage runs: stopped as headless mode stops on SIGTERM (hosts still running the stage are
        saved as interrupted, their remote commands get SIGTERM over the channel), then the app exits."""
        if self._runner is not None:
            self._runner.stop_reason = "quit"
        running = [w for w in self.workers if w.group == "engine" and not w.is_finished]
        for worker in running:
            worker.cancel()
        try:
            await self.workers.wait_for_complete(running)
        except Exception:  # noqa: BLE001 - a cancelled worker reports itself as an error here; the exit must happen
            pass
        self.exit(return_code=1)

    def all_verified(self) -> bool:
        """Every stage verified on every host: the same condition as headless mode's exit status 0."""
        return bool(self.progress.hosts) and all(self.progress.stage_status(s) == "done" for s in self.progress.stages)


def run_app(
    state_dir: Path | None = None,
    *,
    demo: bool = False,
    faults: list[str] | None = None,
    reset: bool = False,
    profile: str | None = None,
    answers: Answers | None = None,
    switch_os: str | None = None,
) -> int:
    """Open the wizard (wizard/cli/run.py on a terminal without --answers; wizard/cli/tui.py with ``answers``)."""
    engine = EngineLink(
        state_dir, demo=demo, faults=faults, reset=reset, profile=profile, answers=answers, switch_os=switch_os
    )
    _log_asyncio_to(engine.store.logs_dir / "wizard-ui.log")
    app = WizardApp(engine)
    app.run()
    return app.return_code or 0


def trim_malloc() -> None:
    """Give the C heap's free pages back to the system (glibc's ``malloc_trim``): after a run on 1,000 hosts it keeps
    the peak's pages otherwise. Elsewhere (another libc) nothing happens."""
    try:
        ctypes.CDLL("libc.so.6").malloc_trim(0)
    except (OSError, AttributeError):
        pass


def _log_asyncio_to(path: Path) -> None:
    """Send asyncio's complaints about commands cut short by quitting to a file, not over the terminal."""
    path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
    logger = logging.getLogger("asyncio")
    logger.addHandler(logging.FileHandler(path, encoding="utf-8"))
    logger.propagate = False
