"""Pilot fixtures: the wizard on the simulated cluster with short simulated durations and no cursor blink."""

from __future__ import annotations

import shutil
import time
from collections.abc import Callable
from pathlib import Path

import pytest
from textual.pilot import Pilot
from textual.widgets import Input

from screens.app import WizardApp
from screens.engine_link import EngineLink

SIZES = [(80, 24), (160, 50)]
SNAPSHOT_ROOT = Path("/tmp/roce-wizard-tui-snapshots")


@pytest.fixture(autouse=True)
def fast_lab(monkeypatch: pytest.MonkeyPatch) -> None:
    """Simulated package installs and reboots take a fraction of their real time."""
    monkeypatch.setenv("ROCE_WIZARD_LAB_TIME_SCALE", "0.02")


@pytest.fixture(autouse=True)
def no_cursor_blink(monkeypatch: pytest.MonkeyPatch) -> None:
    """A blinking cursor makes screenshots depend on timing."""
    monkeypatch.setattr(Input, "_toggle_cursor", lambda self: None)


@pytest.fixture
def make_app(tmp_path: Path) -> Callable[..., WizardApp]:
    def make(faults: list[str] | None = None, state_dir: Path | None = None) -> WizardApp:
        return WizardApp(EngineLink(state_dir or tmp_path / "state", demo=True, faults=faults))

    return make


def snapshot_state_dir(name: str) -> Path:
    """A fixed path (it is shown on screen), emptied first so every snapshot starts from bare hosts."""
    path = SNAPSHOT_ROOT / name
    shutil.rmtree(path, ignore_errors=True)
    return path


async def settle(pilot: Pilot, app: WizardApp, timeout_s: float = 60.0) -> None:
    """Wait for host work, then until its outcome is drawn: the redraw runs on a timer tick, and on a loaded machine
    a fixed pause can end before that tick (a screenshot then shows the table without the results)."""
    await app.workers.wait_for_complete()
    deadline = time.monotonic() + timeout_s
    while app.busy is not None or app._dirty:
        if time.monotonic() > deadline:
            raise AssertionError(f"the app did not settle in {timeout_s:.0f} s (busy={app.busy!r})")
        await pilot.pause(0.05)
    await pilot.pause(0.2)


async def until(pilot: Pilot, condition: Callable[[], object], what: str, timeout_s: float = 30.0) -> None:
    """Wait until ``condition()`` holds: on a loaded machine one pause can end before the message that makes it
    true (a form's validation, the main screen opened after the start screen) has been handled."""
    deadline = time.monotonic() + timeout_s
    while not condition():
        if time.monotonic() > deadline:
            raise AssertionError(f"{what} did not happen within {timeout_s:.0f} s")
        await pilot.pause(0.05)


async def without_toasts(pilot: Pilot, timeout_s: float = 30.0) -> None:
    """Dismiss every notification and wait until no toast is left on screen (removal takes a refresh)."""
    from textual.widgets._toast import Toast

    pilot.app.clear_notifications()
    deadline = time.monotonic() + timeout_s
    while pilot.app.screen.query(Toast):
        if time.monotonic() > deadline:
            raise AssertionError("notifications stayed on screen")
        await pilot.pause(0.05)
    await pilot.pause(0.1)


async def apply_stage(pilot: Pilot, app: WizardApp, *, answer: str = "A") -> None:
    """Press a on the shown stage and answer every confirmation dialog with ``answer``."""
    from screens.dialogs import ConfirmPlan

    await pilot.press("a")
    for _ in range(600):
        await pilot.pause(0.05)
        if isinstance(app.screen, ConfirmPlan):
            await pilot.press(answer)
        elif app.busy is None:
            break
    await settle(pilot, app)


async def quit_mid_work(pilot: Pilot, app: WizardApp) -> None:
    """Press q while hosts are being worked on: the app asks first, and y quits."""
    from screens.dialogs import Question

    await pilot.press("q")
    await until(pilot, lambda: isinstance(app.screen, Question), "the quit question")
    await pilot.press("y")
    # Stopping the running stage (its workers cancelled and waited for) ends in app.exit; on a loaded machine that
    # took longer than one pause, and leaving run_test first left the exit code unset (seen in CI).
    await until(pilot, lambda: app.return_code is not None, "the app exiting once the host work stopped")
