"""Screenshots of the main screens, compared with the reviewed SVGs in __snapshots__ (update with --snapshot-update
only after looking at the report)."""

from __future__ import annotations

from textual.pilot import Pilot

from screens.app import WizardApp
from screens.dialogs import ConfirmPlan
from screens.engine_link import EngineLink
from tests.tui.conftest import settle, snapshot_state_dir, without_toasts
from wizard.engine.state import RunRecord, StateStore


def _app(name: str, faults: list[str] | None = None) -> WizardApp:
    return WizardApp(EngineLink(snapshot_state_dir(name), demo=True, faults=faults))


async def _open(pilot: Pilot, page: str) -> None:
    """From the start screen to a page, as the sidebar does (n from Hosts would add a timed tip toast)."""
    await pilot.press("n")
    await pilot.pause()
    pilot.app.main.show_page(page)  # type: ignore[attr-defined]
    await pilot.pause()


def test_start_screen(snap_compare) -> None:
    assert snap_compare(_app("start"), terminal_size=(80, 24))


def test_resume_screen_shows_where_each_host_stands(snap_compare) -> None:
    app = _app("resume")
    store = StateStore(app.engine.state_dir)
    store.save_run(RunRecord(cluster="l20-pair", demo=True, hosts=["server1", "server2"]))
    for host, ofed in (("server1", "done"), ("server2", "running")):
        store.host(host).stage("discovery").status = "done"
        store.host(host).stage("ofed").status = ofed  # type: ignore[assignment]
        store.save_host(host)
    assert snap_compare(WizardApp(EngineLink(app.engine.state_dir, demo=True)), terminal_size=(80, 24))


def test_hosts_after_connection_test(snap_compare) -> None:
    async def run_before(pilot: Pilot) -> None:
        await pilot.press("n", "t")
        await settle(pilot, pilot.app)  # type: ignore[arg-type]
        reports = pilot.app.conn_reports  # type: ignore[attr-defined]
        assert sorted(reports) == ["server1", "server2"]
        assert all(r.ok for r in reports.values()), [r.problem for r in reports.values()]
        await without_toasts(pilot)

    assert snap_compare(_app("hosts"), terminal_size=(80, 24), run_before=run_before)


def test_discovery_with_a_host_down(snap_compare) -> None:
    async def run_before(pilot: Pilot) -> None:
        await _open(pilot, "discovery")
        await pilot.press("a")
        await settle(pilot, pilot.app)  # type: ignore[arg-type]
        await pilot.press("right_square_bracket")
        await without_toasts(pilot)

    app = _app("discovery", faults=["server2:link_down=ens2f1np1"])
    assert snap_compare(app, terminal_size=(120, 40), run_before=run_before)


def test_stage_plan_with_disruptive_changes(snap_compare) -> None:
    async def run_before(pilot: Pilot) -> None:
        await _open(pilot, "ofed")
        await pilot.press("p")
        await settle(pilot, pilot.app)  # type: ignore[arg-type]
        await without_toasts(pilot)

    assert snap_compare(_app("plan"), terminal_size=(80, 24), run_before=run_before)


def test_confirmation_dialog_says_what_can_go_wrong(snap_compare) -> None:
    async def run_before(pilot: Pilot) -> None:
        await _open(pilot, "ofed")
        await pilot.press("a")
        for _ in range(400):
            await pilot.pause(0.05)
            if isinstance(pilot.app.screen, ConfirmPlan):
                break
        await without_toasts(pilot)

    assert snap_compare(_app("confirm"), terminal_size=(80, 24), run_before=run_before)


def test_summary_after_a_failed_host_in_the_light_theme(snap_compare) -> None:
    async def run_before(pilot: Pilot) -> None:
        pilot.app.theme = "textual-light"
        await _open(pilot, "discovery")
        await pilot.press("a")
        await settle(pilot, pilot.app)  # type: ignore[arg-type]
        pilot.app.main.show_page("summary")  # type: ignore[attr-defined]
        await without_toasts(pilot)

    assert snap_compare(
        _app("summary", faults=["server2:link_down=ens2f1np1"]), terminal_size=(80, 24), run_before=run_before
    )
