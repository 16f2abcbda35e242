"""Host work in an engine process of its own (wizard/engine/worker.py), as the wizard does it for real hosts.

Here the hosts are the simulated lab's (the lab stays in the wizard's process; the worker reaches it over SSH on
loopback, as it reaches real hosts), so the same flow as tests/tui/test_flow.py can be checked across the process
boundary: rows, confirmations, plans, a quit that saves the interrupted stage, and a worker that dies.
"""

from __future__ import annotations

from pathlib import Path

from screens.app import WizardApp
from screens.dialogs import ConfirmPlan
from screens.engine_link import EngineLink
from screens.log_buffer import LogBuffers
from tests.tui.conftest import apply_stage, quit_mid_work, settle, until
from wizard.engine.events import Event
from wizard.engine.state import StateStore
from wizard.engine.worker_events import SHOWN, OutputCoalescer, event_from_message


def in_worker(state: Path) -> WizardApp:
    return WizardApp(EngineLink(state, demo=True, engine="process"))


async def test_the_connection_test_discovery_a_confirmed_stage_a_plan_and_a_quit_run_in_worker_processes(
    tmp_path: Path,
) -> None:
    app = in_worker(tmp_path / "state")
    assert app.engine.worker_process
    async with app.run_test(size=(120, 40)) as pilot:
        await pilot.press("n", "t")
        await settle(pilot, app)
        assert sorted(app.conn_reports) == ["server1", "server2"]
        assert all(r.ok and r.os == "Ubuntu 22.04.5 LTS" for r in app.conn_reports.values())
        await pilot.press("n")
        await apply_stage(pilot, app)
        assert app.progress.stage_status("discovery") == "done", app.progress.failures()
        # The worker wrote the facts and the host logs; the screen read the facts from disk, as on its thread.
        assert app.facts_index().summaries["server1"].ports
        log = (tmp_path / "state" / "logs" / "server1.log").read_text()
        assert "nvidia-smi" in log
        # Its log pane got the commands, and long outputs folded as if every line had come.
        pane = "\n".join(app.buffers.tail("server1"))
        assert "$ " in pane and "more line" in pane
        # A stage that changes hosts: the worker asks, the dialog answers, the answer goes back.
        await pilot.press("n")
        await apply_stage(pilot, app, answer="A")
        assert app.progress.stage_status("ofed") == "done", app.progress.failures()
        # A plan comes back as the HostPlans the plan view shows.
        await pilot.press("n", "p")
        await settle(pilot, app)
        plans = app.plans["network"]
        assert sorted(plans) == ["server1", "server2"] and plans["server1"].changes
        # Quitting while the worker waits for a confirmation stops it as SIGTERM stops headless mode.
        await pilot.press("a")
        await until(pilot, lambda: isinstance(app.screen, ConfirmPlan), "the network stage's confirmation", 20)
        await quit_mid_work(pilot, app)
    assert app.return_code == 1
    assert app.engine_process.runs == 5, "test, discovery, ofed, the plan and network: each in a worker"
    saved = StateStore(tmp_path / "state")
    assert saved.host("server1").stages["ofed"].status == "done"
    assert saved.host("server1").stages["network"].status == "interrupted"


async def test_a_worker_that_dies_is_named_in_one_line_with_its_log(tmp_path: Path, monkeypatch) -> None:
    monkeypatch.setenv("PYTHONPATH", str(tmp_path / "poison"))  # the worker imports a broken module first
    (tmp_path / "poison").mkdir()
    (tmp_path / "poison" / "sitecustomize.py").write_text("import os\nos._exit(7)\n")
    app = in_worker(tmp_path / "state")
    async with app.run_test(size=(120, 40)) as pilot:
        await pilot.press("n", "t")
        await settle(pilot, app)
        shown = [n.message for n in app._notifications]
        assert any("engine process failed" in m and "exit status 7" in m and "wizard-engine.log" in m for m in shown)
        assert app.busy is None


def fold(events: list[Event]) -> tuple[list[str], int]:
    """What the log pane holds after ``events`` (as the app applies them) and how many lines it folded."""
    buffers = LogBuffers()
    for event in events:
        data = event.data
        if event.kind == "output":
            for line in data["lines"] if "lines" in data else [data["line"]]:
                buffers.add(data["host"], "  " + line)
            if data.get("more"):
                buffers.add_folded(data["host"], data["more"])
        elif event.kind == "command":
            buffers.add(data["host"], f"$ {data['command']}")
    buffers.drain()
    return buffers.tail("h1"), buffers.folded


def test_output_cut_on_the_way_folds_in_the_pane_exactly_as_every_line_would() -> None:
    events = [
        Event("command", {"host": "h1", "command": "ethtool -S eth0"}),
        *[Event("output", {"host": "h1", "stream": "stdout", "line": f"counter_{i}: {i}"}) for i in range(1600)],
        Event("command", {"host": "h1", "command": "cat /etc/os-release"}),
        Event("output", {"host": "h1", "stream": "stdout", "lines": ["NAME=Ubuntu", "VERSION_ID=22.04"]}),
        Event("output", {"host": "h1", "stream": "stdout", "lines": [f"pkg{i}" for i in range(30000)]}),
        Event("command", {"host": "h1", "command": "true"}),
    ]
    sent: list[dict] = []
    coalescer = OutputCoalescer(sent.append)
    for event in events:
        coalescer.event(event)
    coalescer.flush()
    assert len(sent) == 5, "the 1,600 single lines went as one message, the two outputs in a row as one"
    assert all(len(m.get("lines", [])) <= SHOWN for m in sent)
    assert sent[1]["more"] == 1600 - SHOWN and sent[3]["more"] == 30002 - SHOWN
    assert fold([event_from_message(m) for m in sent]) == fold(events)


async def test_the_sudo_password_reaches_the_worker_on_its_input_and_no_file(tmp_path: Path) -> None:
    password = "rw-tui-" + "Zq7" * 8
    state = tmp_path / "state"
    app = WizardApp(EngineLink(state, demo=True, engine="process", faults=["server1:sudo_password"]))
    app.engine.password = password  # what the dialog (or $ROCE_WIZARD_SUDO_PASSWORD) gives the wizard
    async with app.run_test(size=(120, 40)) as pilot:
        await pilot.press("n", "n")
        await apply_stage(pilot, app)
        # server1's sudo asked for it (sudo -S): discovery there needed it to travel to the worker.
        assert app.progress.cell("discovery", "server1").status == "done", app.progress.failures()
    leaked = [str(p) for p in state.rglob("*") if p.is_file() and password.encode() in p.read_bytes()]
    assert [p for p in leaked if "/lab/" not in p] == [], "the password reached a file the wizard wrote"
