"""Safe apply and rollback in the terminal wizard, on the simulated cluster's lockout fault."""

from __future__ import annotations

from screens.dialogs import ConfirmRollback
from tests.tui.conftest import apply_stage, settle
from wizard.engine.state import StateStore


async def test_a_change_that_cuts_ssh_is_shown_rolled_back_and_the_other_host_can_be_rolled_back(make_app) -> None:
    app = make_app(faults=["server2:lockout"])
    async with app.run_test(size=(100, 30)) as pilot:
        await pilot.press("n", "n")
        await apply_stage(pilot, app)  # discovery
        for stage in ("ofed", "network"):
            await pilot.press("n")
            assert app.main.page == stage
            await apply_stage(pilot, app)
        # server2's netplan apply cut its management network; the host put the old files back by itself.
        assert app.progress.cell("network", "server1").status == "done"
        cut = app.progress.cell("network", "server2")
        assert cut.status == "failed"
        assert "rolled itself back" in cut.reason and "NOT in place" in cut.reason
        # Roll back the host where the change stayed: the dialog shows exactly what will run, per host.
        await pilot.press("u")
        await pilot.pause()
        assert isinstance(app.screen, ConfirmRollback)
        assert app.screen.plans["server2"] is None, "server2 kept nothing of the change: nothing to undo there"
        shown = [c.shell() for c in app.screen.plans["server1"].commands]
        assert "sudo rm -f -- /etc/netplan/60-roce-wizard.yaml" in shown and shown[-1] == "sudo netplan apply"
        await pilot.press("y")
        await settle(pilot, app)
        assert app.progress.cell("network", "server1").status == "pending"
        assert "rolled back" in app.progress.cell("network", "server1").reason
        assert StateStore(app.engine.state_dir).host("server1").stages["network"].status == "pending"
        # Nothing is left to roll back: the key says so instead of opening an empty dialog.
        await pilot.press("u")
        await pilot.pause()
        assert not isinstance(app.screen, ConfirmRollback)


async def test_declining_the_rollback_changes_nothing(make_app) -> None:
    app = make_app()
    async with app.run_test(size=(100, 30)) as pilot:
        await pilot.press("n", "n")
        await apply_stage(pilot, app)
        for _stage in ("ofed", "network"):
            await pilot.press("n")
            await apply_stage(pilot, app)
        assert app.progress.stage_status("network") == "done"
        await pilot.press("u")
        await pilot.pause()
        assert isinstance(app.screen, ConfirmRollback)
        await pilot.press("n")
        await settle(pilot, app)
        assert not isinstance(app.screen, ConfirmRollback)
        assert app.progress.stage_status("network") == "done"
        assert StateStore(app.engine.state_dir).host("server2").stages["network"].created
