"""Live per-host progress: a host is counted as read the moment its probe answers (not when the stage's cross-host
checks end), the page's line counts hosts per state with the time left, the connection test's rows appear host by
host, and the Hosts page opens with the host list focused so ``/`` filters instead of typing into the form."""

from __future__ import annotations

import asyncio
import io
import time
from pathlib import Path
from typing import Any

from textual import events
from textual.widgets import Input, Label, Static

from screens import app as app_module
from screens.fleet import duration, stage_counts, stage_progress_line
from screens.progress import Progress
from screens.vtable import VirtualTable
from tests.engine.test_runner import FakeHost, MarkerStep, make_runner
from tests.tui.fleet_fakes import make_fleet_app
from wizard.cli.reporters import HumanReporter
from wizard.engine.conn_test import ConnectionReport
from wizard.engine.events import HOST_READ, PROBING, Event
from wizard.engine.runner import RunOptions


class SlowOnH2(MarkerStep):
    """h2's probe waits for the test to let it go; h1 and h3 answer at once."""

    def __init__(self, gate: asyncio.Event) -> None:
        super().__init__()
        self.gate = gate

    async def probe(self, ctx: Any) -> dict[str, Any]:
        if ctx.host.name == "h2":
            await self.gate.wait()
        return await super().probe(ctx)


async def test_each_host_is_reported_read_as_its_probe_answers_while_a_slow_host_still_probes(tmp_path: Path) -> None:
    gate = asyncio.Event()
    hosts = {n: FakeHost(n) for n in ("h1", "h2", "h3")}
    runner, events = make_runner(tmp_path, hosts, SlowOnH2(gate))
    run = asyncio.create_task(runner.run(RunOptions(stages=["marker"])))

    def statuses() -> dict[str, str]:
        return {
            e.data["host"]: e.data["reason"] for e in events if e.kind == "host_status" and e.data["stage"] == "marker"
        }

    for _ in range(200):
        if statuses().get("h1") == HOST_READ and statuses().get("h3") == HOST_READ:
            break
        await asyncio.sleep(0.01)
    # h1 and h3 are read and their facts saved while h2 still probes; the stage has not ended.
    assert statuses() == {"h1": HOST_READ, "h2": PROBING, "h3": HOST_READ}
    assert not any(e.kind == "stage_finished" for e in events)
    assert runner.store.load_facts("h1")["marker"] == {"marker": None}
    gate.set()
    await run
    final = {e.data["host"]: e.data["status"] for e in events if e.kind == "host_status"}
    assert final == {"h1": "done", "h2": "done", "h3": "done"}
    # Once per host and stage: a re-read after the changes does not say "read" again.
    reads = [e.data["host"] for e in events if e.kind == "host_status" and e.data["reason"] == HOST_READ]
    assert sorted(reads) == ["h1", "h2", "h3"]


def test_the_headless_progress_on_stderr_says_nothing_more_for_a_host_read() -> None:
    stream = io.StringIO()
    reporter = HumanReporter(stream)
    reporter(Event("host_status", {"stage": "discovery", "host": "h1", "status": "running", "reason": HOST_READ}))
    assert stream.getvalue() == ""


async def hosts_page(pilot, app):  # type: ignore[no-untyped-def]
    """From the start screen to the Hosts page (the wizard's first), which is returned."""
    await pilot.press("n")
    await pilot.pause(0.3)
    return app.main.current()


def _status(progress: Progress, host: str, status: str, reason: str = "") -> None:
    progress.apply(Event("host_status", {"stage": "discovery", "host": host, "status": status, "reason": reason}))


def test_the_progress_line_counts_read_failed_and_probing_hosts_and_the_time_left_at_the_rate_hosts_are_read() -> None:
    hosts = [f"h{i}" for i in range(10)]
    progress = Progress(["discovery"], hosts)
    progress.apply(Event("stage_started", {"stage": "discovery", "title": "Discovery"}))
    for host in hosts:
        _status(progress, host, "running", PROBING)
    for host in hosts[:3]:
        _status(progress, host, "running", HOST_READ)
    _status(progress, "h3", "failed", "cannot connect")
    clock = progress.clocks["discovery"]
    # Three read; the failed host is not a probe's time (a refused connection fails at once: counted, one host in
    # 0.1 s promised 20 minutes for 1,000 hosts on the simulated lab).
    assert clock.finished == 3
    # 3 hosts in 20 s: the 6 still probing need about 40 s more.
    now = clock.started + 20.0
    assert stage_counts(progress, "discovery") == {"read": 3, "failed": 1, "probing": 6}
    assert stage_progress_line(progress, "discovery", now) == (
        "discovery: 0/10 done, 3 read, 1 failed, 6 probing, about 40 s left"
    )
    # A host read again later in the stage does not count twice; when nobody probes there is no ETA.
    _status(progress, "h0", "running", HOST_READ)
    assert clock.finished == 3
    for host in hosts[4:]:
        _status(progress, host, "done", "verified")
    assert stage_progress_line(progress, "discovery", now) == "discovery: 6/10 done, 3 read, 1 failed"


def test_durations_read_at_a_glance() -> None:
    assert [duration(s) for s in (0.4, 45, 200, 3599, 3660)] == [
        "0 s",
        "45 s",
        "3 min 20 s",
        "59 min 59 s",
        "1 h 01 min",
    ]


async def test_connection_test_rows_appear_as_each_host_answers(tmp_path: Path) -> None:
    app = make_fleet_app(tmp_path / "state", 12, facts=False)
    async with app.run_test(size=(120, 40)) as pilot:
        await hosts_page(pilot, app)
        table = app.main.current().query_one("#hosts-table", VirtualTable)
        assert [str(row[3]) for row in table.rows[:2]] == ["·", "·"]
        app._connection_report(ConnectionReport("gpu-0002", True, True, True, "Ubuntu 22.04"))
        app._redrawn_at = 0.0
        await pilot.pause(0.3)
        # gpu-0002's row is filled in; the hosts not tested yet still show nothing.
        assert [str(c) for c in table.rows[1][3:]] == ["yes", "yes", "yes", "Ubuntu 22.04"]
        assert str(table.rows[0][3]) == "·"


async def test_the_hosts_page_opens_on_the_host_list_so_slash_filters_instead_of_typing_into_the_form(
    tmp_path: Path,
) -> None:
    app = make_fleet_app(tmp_path / "state", 12, facts=False)
    async with app.run_test(size=(120, 40)) as pilot:
        page = await hosts_page(pilot, app)
        table = page.query_one("#hosts-table", VirtualTable)
        assert app.focused is table
        address = page.query_one("#h-address", Input).value
        await pilot.press("slash", "0", "0", "0", "9")
        await pilot.pause(0.2)
        assert page.query_one("#h-address", Input).value == address  # the form is untouched
        assert app.focused is not None and "filter-text" in app.focused.classes
        assert table.keys == ["gpu-0009"]
        assert str(page.query_one(".filter-state", Label).render()) == "1/12 hosts (matching '0009')"


async def test_in_a_text_field_slash_is_typed_and_ctrl_f_reaches_the_filter(tmp_path: Path) -> None:
    app = make_fleet_app(tmp_path / "state", 12, facts=False)
    async with app.run_test(size=(120, 40)) as pilot:
        page = await hosts_page(pilot, app)
        field = page.query_one("#h-identity_file", Input)
        field.focus()
        field.value = ""
        await pilot.press("slash", "k")
        assert field.value == "/k"  # a path typed on purpose keeps its slash
        await pilot.press("ctrl+f", "0", "1")
        await pilot.pause(0.2)
        assert field.value == "/k"
        assert page.query_one("#hosts-table", VirtualTable).keys == ["gpu-0001", "gpu-0010", "gpu-0011", "gpu-0012"]


async def test_the_discovery_row_of_a_host_already_read_says_read_while_the_others_still_probe(tmp_path: Path) -> None:
    app = make_fleet_app(tmp_path / "state", 3)
    async with app.run_test(size=(120, 40)) as pilot:
        await hosts_page(pilot, app)
        bus = app.engine.bus
        bus.emit("stage_started", stage="discovery", title="Discovery")
        bus.emit("host_status", stage="discovery", host="gpu-0001", status="running", reason=HOST_READ)
        for host in ("gpu-0002", "gpu-0003"):
            bus.emit("host_status", stage="discovery", host=host, status="running", reason=PROBING)
        app.main.show_page("discovery")
        app._redrawn_at = 0.0
        await pilot.pause(0.4)
        table = app.main.current().query_one("#disc-hosts", VirtualTable)
        assert [str(row[1]) for row in table.rows] == ["… read", "… running", "… running"]


async def test_keys_typed_in_one_burst_after_slash_all_go_to_the_filter(tmp_path: Path) -> None:
    """A terminal delivers a fast typist's keys (or a paste) together: '/leaf' must not leave 'l', 'e', 'a' and 'f'
    to the page's bindings ('a' would start the stage) while the focus is still on its way to the filter."""
    app = make_fleet_app(tmp_path / "state", 12, facts=False)
    async with app.run_test(size=(120, 40)) as pilot:
        page = await hosts_page(pilot, app)
        for key, char in [("slash", "/"), ("0", "0"), ("0", "0"), ("1", "1"), ("f", "f")]:
            event = events.Key(key, char)  # sent as the terminal driver sends them, with no pause between
            event.set_sender(app)
            app._driver.send_message(event)  # type: ignore[union-attr]
        await pilot.pause(0.3)
        assert page.query_one(".filter-text", Input).value == "001f"
        assert str(page.query_one(".filter-state", Label).render()) == "0/12 hosts (matching '001f')"


async def test_a_host_without_facts_says_it_is_being_read_or_why_it_could_not_be(tmp_path: Path) -> None:
    """While discovery runs, 'press a to discover' would ask for what is already under way."""
    app = make_fleet_app(tmp_path / "state", 3, facts=False)
    async with app.run_test(size=(120, 40)) as pilot:
        await hosts_page(pilot, app)
        bus = app.engine.bus
        bus.emit("stage_started", stage="discovery", title="Discovery")
        bus.emit("host_status", stage="discovery", host="gpu-0001", status="running", reason=PROBING)
        bus.emit("host_status", stage="discovery", host="gpu-0002", status="failed", reason="no SSH answer within 10s")
        app.main.show_page("discovery")
        await pilot.pause(0.3)
        page = app.main.current()

        async def facts_line(host: str) -> str:
            page.host = host
            page._show()
            await pilot.pause(0.1)
            return str(page.query_one("#disc-host-facts", Static).render())

        assert await facts_line("gpu-0001") == "gpu-0001 is being read; its facts show here when it answers."
        assert await facts_line("gpu-0002") == "No facts for this host: no SSH answer within 10s"
        assert await facts_line("gpu-0003") == (
            "No facts yet for this host: press a to discover (reads only, changes nothing)."
        )


async def test_the_hosts_news_waits_while_a_key_is_handled_and_is_applied_on_the_next_tick_after(
    tmp_path: Path,
) -> None:
    """A key pressed during host work is drawn before the tick applies the events that came meanwhile, and never
    holds them back longer than KEY_FIRST_S."""
    app = make_fleet_app(tmp_path / "state", 12, facts=False)
    async with app.run_test(size=(120, 40)) as pilot:
        await hosts_page(pilot, app)
        news = Event("host_status", {"stage": "discovery", "host": "gpu-0003", "status": "running", "reason": PROBING})
        app.engine_thread.key_pending.set()
        app._key_at = time.monotonic()
        app.receive_event(news)
        app.flush()
        assert list(app._events) == [news], "applied while the key's frame was still to come"
        app._key_at -= app_module.KEY_FIRST_S  # the key's frame never came: the news goes in anyway
        app.flush()
        assert not app._events
        app.engine_thread.key_pending.clear()
