"""Load copies of real tool outputs kept under tests/fixtures/real-outputs/<tool>/."""

from __future__ import annotations

from pathlib import Path

FIXTURES = Path(__file__).parent / "fixtures" / "real-outputs"


def real_output(tool: str, name: str) -> str:
    """Return the text of the real-output fixture ``name`` captured from ``tool``."""
    return (FIXTURES / tool / name).read_text(encoding="utf-8")


def real_outputs(tool: str) -> list[Path]:
    """Return every real-output fixture file for ``tool``, sorted by name."""
    return sorted(p for p in (FIXTURES / tool).iterdir() if p.is_file())
