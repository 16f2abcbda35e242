"""A simulated cluster prepared once (stages discovery..roce) that each demo test copies, faults and scrapes."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ENTRY = "import sys\nfrom wizard.cli.metrics import main as metrics_cmd\nsys.exit(metrics_cmd(sys.argv[1:]))\n"


def metrics(*args: str, timeout: float = 120) -> subprocess.CompletedProcess[str]:
    """``roce-wizard metrics ARGS`` in a subprocess (fast simulated clocks)."""
    env = {**os.environ, "ROCE_WIZARD_LAB_TIME_SCALE": "0.02"}
    return subprocess.run([sys.executable, "-c", ENTRY, *args], capture_output=True, text=True, env=env,
                          timeout=timeout, cwd=Path(__file__).parents[3])  # fmt: skip


@pytest.fixture(scope="session")
def prepared(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, subprocess.CompletedProcess[str]]:
    """A demo state dir whose hosts are configured, and the clean ``--once`` scrape that prepared it."""
    state = tmp_path_factory.mktemp("metrics-demo") / "state"
    result = metrics("--demo", "--once", "--state-dir", str(state))
    assert result.returncode == 0, result.stderr[-2000:]
    return state, result


@pytest.fixture
def state_copy(prepared: tuple[Path, subprocess.CompletedProcess[str]], tmp_path: Path) -> Path:
    """The prepared hosts (their saved disks), for a run with faults that must not leak into other tests."""
    copy = tmp_path / "state"
    shutil.copytree(prepared[0], copy)
    return copy
