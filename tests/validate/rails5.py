"""Five rails-16 hosts brought up once per test process, on switches nobody configured, for the incast and switch
tests to copy: the hosts' disks do not depend on the switches, so each test loads the switch files it needs into
its own copy instead of paying for a bring-up (45 s of CPU) of its own."""

from __future__ import annotations

import contextlib
import io
import shutil
import tempfile
from dataclasses import dataclass
from pathlib import Path

import pytest

from wizard.cli.main import main
from wizard.validate import perftest

ASSETS = Path(__file__).resolve().parents[2] / "assets"
QUICK = ["--incast", "--incast-rounds", "1", "--fanin", "2", "--no-sweep", "--no-nccl"]  # 2:1 oversubscribes


@dataclass(frozen=True)
class BroughtUp:
    answers: Path
    state: Path  # never touched by a test: copy it (``copy_to``)
    code: int  # the first bwtest --incast (one round) on the bare switches
    out: str

    def copy_to(self, where: Path) -> Path:
        shutil.copytree(self.state, where)
        return where


_CACHE: dict[str, BroughtUp] = {}


def five_hosts(path: Path) -> Path:
    """The shipped rails-16 answers with hosts gpu-001..gpu-005 only."""
    out, skip = [], False
    for line in (ASSETS / "answers.rails-16.yaml").read_text().splitlines(keepends=True):
        s = line.strip()
        if s.startswith("- name: gpu-"):
            skip = int(s.split("gpu-")[1][:3]) > 5
        elif not s.startswith("address:"):
            skip = False
        if not skip:
            out.append(line)
    path.write_text("".join(out))
    return path


def run(*argv: str) -> tuple[int, str]:
    buf = io.StringIO()
    with contextlib.redirect_stdout(buf):
        code = main(list(argv))
    return code, buf.getvalue()


def target(answers: Path, state: Path) -> list[str]:
    return ["--demo", "--profile", "rails-16", "--answers", str(answers), "--state-dir", str(state)]


def brought_up() -> BroughtUp:
    """The five hosts after `bwtest --incast` (one round) on bare switches: every stage it needs has run."""
    if "five" not in _CACHE:
        base = Path(tempfile.mkdtemp(prefix="roce-wizard-rails5-"))
        answers = five_hosts(base / "answers.yaml")
        with pytest.MonkeyPatch.context() as mp:
            mp.setenv("ROCE_WIZARD_LAB_TIME_SCALE", "0.1")
            mp.setattr(perftest, "START_DELAY_S", 0.1)
            code, out = run("bwtest", *target(answers, base / "state"), *QUICK)
        _CACHE["five"] = BroughtUp(answers, base / "state", code, out)
    return _CACHE["five"]
