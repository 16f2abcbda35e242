"""Writing answers back out: the file an interactive run saves so headless mode can replay it."""

from __future__ import annotations

from typing import Any

from wizard.answers import ranges as host_ranges
from wizard.answers import yamlio
from wizard.answers.model import Answers

_HEADER = (
    "# roce-wizard answers, saved by the terminal wizard.\n"
    "# Replay it without questions: roce-wizard --answers THIS-FILE (add --yes to allow disruptive changes).\n"
    "# Every choice is written out, defaults included (roce-wizard schema explains each key).\n"
    "# No secrets are stored here.\n"
)


def answers_data(answers: Answers) -> dict[str, Any]:
    """The answers as plain data. Every value is written (defaults too), so a later roce-wizard with other
    defaults replays the same choices; unset optional keys are left out. Host ranges of the loaded file are written
    back as ranges while the host list is exactly what they expand to; once it changed, hosts are plain entries."""
    data = answers.model_dump(mode="json", exclude_none=True)
    compact = host_ranges.compact_form(data["hosts"])
    if compact is not None:
        data["hosts"] = compact
    ordered = {"version": data.pop("version")}
    for key in ("cluster", "ssh", "hosts"):
        if key in data:
            ordered[key] = data.pop(key)
    ordered.update({k: v for k, v in data.items() if v not in ({}, [])})
    return ordered


def dump_answers(answers: Answers) -> str:
    """YAML text that :func:`wizard.answers.model.parse_answers` reads back to equal answers."""
    return _HEADER + yamlio.dump(answers_data(answers))
