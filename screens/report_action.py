"""The Summary page's "report" action: write the whole-run HTML report next to the state and say where."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any, Protocol

REPORT_NAME = "report.html"


class Notifier(Protocol):
    """What the action needs of the app: Textual's App.notify."""

    def notify(self, message: str, *, severity: Any = ..., timeout: float | None = ...) -> None: ...


def write_report(state_dir: Path, out: Path | None = None) -> Path:
    """Collect the run saved in ``state_dir`` and write the report (default ``<state_dir>/report.html``, private
    like the state). Raises WizardError (StateError) when the directory holds no run."""
    from wizard.cli.report import write_html
    from wizard.report.collect import collect

    return write_html(collect(state_dir), out or state_dir / REPORT_NAME)


async def report_action(app: Notifier, state_dir: Path, out: Path | None = None) -> Path | None:
    """Write the report off the event loop (a thousand hosts take a moment) and notify its path, or why not."""
    from wizard.errors import WizardError

    try:
        path = await asyncio.to_thread(write_report, state_dir, out)
    except (WizardError, OSError) as exc:
        app.notify(f"no report: {exc}", severity="error", timeout=10)
        return None
    app.notify(f"run report written to {path} (open it in a browser; it prints well)", timeout=10)
    return path
