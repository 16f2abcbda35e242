"""Pilot fixtures: the wizard on the simulated cluster with short simulated durations and no cursor blink."""

from __future__ import annotations

import shutil
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


async def settle(pilot: Pilot, app: WizardApp) -> None:
    """Wait for host work, then for the next redraw of what it changed."""
    await app.workers.wait_for_complete()
    await pilot.pause(0.5)


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
    await pilot.pause()
    assert isinstance(app.screen, Question)
    await pilot.press("y")
    await pilot.pause()
