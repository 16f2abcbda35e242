"""Quitting the terminal wizard while a stage applies stops it as SIGTERM stops a headless run."""

from __future__ import annotations

import json

from tests.tui.conftest import apply_stage, settle


async def test_quit_while_a_stage_applies_records_the_hosts_as_interrupted(make_app, tmp_path) -> None:
    from screens.dialogs import ConfirmPlan, Question

    app = make_app(faults=["server1:hang"])
    server1 = tmp_path / "state" / "hosts" / "server1.json"
    async with app.run_test(size=(100, 30)) as pilot:
        await pilot.press("n", "t")
        await settle(pilot, app)
        await pilot.press("n")
        await apply_stage(pilot, app)
        await pilot.press("n")
        await pilot.press("a")
        for _ in range(1200):  # until server1's hung apt-get is the command in flight
            await pilot.pause(0.05)
            if isinstance(app.screen, ConfirmPlan):
                await pilot.press("A")
            elif server1.exists() and "apt-get install" in str(json.loads(server1.read_text())["command_in_flight"]):
                break
        else:
            raise AssertionError("the hung command never started")
        await pilot.press("q")
        await pilot.pause(0.2)
        assert isinstance(app.screen, Question)
        await pilot.press("y")
        for _ in range(200):
            await pilot.pause(0.05)
            if not app.is_running:
                break
    assert app.return_code == 1
    record = json.loads(server1.read_text())
    assert record["stages"]["ofed"]["status"] == "interrupted"
    reason = record["stages"]["ofed"]["reason"]
    assert reason.startswith("interrupted by quit: `sudo env DEBIAN_FRONTEND=noninteractive apt-get install"), reason
