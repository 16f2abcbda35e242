"""Validation results saved with the wizard's state (``<state>/validation/``) and exported as JSON."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from wizard.engine.state import atomic_write
from wizard.validate.model import Report


def results_dir(state_dir: Path) -> Path:
    return state_dir / "validation"


def run_path(state_dir: Path, report: Report) -> Path:
    """Where the run is kept: ``bwtest-<when it finished>.json`` (names sort by time)."""
    stamp = (report.finished or report.started).replace(":", "").replace("+", "Z")
    return results_dir(state_dir) / f"bwtest-{stamp}.json"


def save(state_dir: Path, report: Report) -> Path:
    """Write ``latest.json`` and a timestamped copy; returns the latest path."""
    folder = results_dir(state_dir)
    folder.mkdir(parents=True, exist_ok=True)
    # Compact UTF-8 bytes straight from the serialiser, written to both files: a 1,024-host fleet run is 14 MB so,
    # and was 22 MB indented, then a str and its encoded copy at the wizard's peak memory (`bwtest --json` prints
    # the results indented).
    data = Report.__pydantic_serializer__.to_json(report)
    atomic_write(run_path(state_dir, report), data)
    latest = folder / "latest.json"
    atomic_write(latest, data)
    return latest


def load_latest(state_dir: Path) -> Report | None:
    path = results_dir(state_dir) / "latest.json"
    if not path.exists():
        return None
    return Report.model_validate_json(path.read_text(encoding="utf-8"))


def to_json(report: Report) -> dict[str, Any]:
    """The JSON export: the saved model plus per-rail ratios, ready for a ticket or a dashboard."""
    data = json.loads(report.model_dump_json())
    for key in ("rails", "together"):
        for item, rail in zip(data[key], getattr(report, key), strict=True):
            item["ratio"] = round(rail.ratio, 3) if rail.ratio is not None else None
    return data
