"""The Summary page's report action writes the report beside the state and tells the user where, or why not."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path
from typing import Any

from screens.report_action import REPORT_NAME, report_action, write_report


class FakeApp:
    def __init__(self) -> None:
        self.notes: list[tuple[str, Any]] = []

    def notify(self, message: str, *, severity: Any = "information", timeout: float | None = None) -> None:
        self.notes.append((message, severity))


async def test_the_action_writes_the_report_in_the_state_dir_and_names_it(demo_state: Path, tmp_path: Path) -> None:
    app = FakeApp()
    out = tmp_path / "r.html"
    path = await report_action(app, demo_state, out)
    assert path == out and out.read_text().startswith("<!DOCTYPE html>")
    assert "RoCE fabric run report: l20-pair" in out.read_text()
    assert app.notes == [(f"run report written to {out} (open it in a browser; it prints well)", "information")]


def test_by_default_the_report_lands_in_the_state_directory_privately(demo_state: Path, tmp_path: Path) -> None:
    import shutil

    state = tmp_path / "state"
    shutil.copytree(demo_state, state)
    path = write_report(state)
    assert path == state / REPORT_NAME and path.stat().st_mode & 0o777 == 0o600


async def test_a_state_dir_without_a_run_is_an_error_notice_not_a_crash(tmp_path: Path) -> None:
    app = FakeApp()
    assert await report_action(app, tmp_path) is None
    [(message, severity)] = app.notes
    assert severity == "error" and message.startswith(f"no report: no saved run in {tmp_path}")
    assert not (tmp_path / REPORT_NAME).exists()


def test_report_help_loads_no_heavy_module() -> None:
    code = (
        "import sys\nfrom wizard.cli.report import main as report_cmd\n"
        "try:\n    report_cmd(['--help'])\nexcept SystemExit:\n    pass\n"
        "print('LOADED:' + ','.join(sorted(m for m in sys.modules if m.split('.')[0] in "
        "('asyncio', 'asyncssh', 'pydantic', 'yaml', 'textual', 'steps'))))\n"
    )
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert "--html FILE" in result.stdout and "--json" in result.stdout
    assert result.stdout.rsplit("LOADED:", 1)[1].strip() == ""
