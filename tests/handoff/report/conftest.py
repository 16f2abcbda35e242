"""Real state directories, built once per session by the wizard itself against the simulated cluster."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[3]


def wizard(*args: str, scale: str, timeout: float = 300) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "ROCE_WIZARD_LAB_TIME_SCALE": scale}
    env.pop("ROCE_WIZARD_SUDO_PASSWORD", None)
    return subprocess.run([sys.executable, "-m", "wizard", *args], capture_output=True, text=True, timeout=timeout,
                          env=env, cwd=ROOT)  # fmt: skip


@pytest.fixture(scope="session")
def demo_state(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """`roce-wizard --demo --yes` then `roce-wizard bwtest --demo`: every stage verified, a passing bandwidth test.
    (bwtest at a tenth of lab time: at a hundredth its timed runs end before they report.)"""
    state = tmp_path_factory.mktemp("report") / "demo"
    run = wizard("--demo", "--yes", "--state-dir", str(state), scale="0.01")
    assert run.returncode == 0, run.stderr[-3000:]
    bw = wizard("bwtest", "--demo", "--state-dir", str(state), scale="0.1")
    assert bw.returncode == 0, bw.stderr[-3000:]
    return state


@pytest.fixture(scope="session")
def failed_state(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A run where server2's port ens2f1np1 has no link: discovery fails there, later stages are skipped, and no
    bandwidth test was run."""
    state = tmp_path_factory.mktemp("report") / "failed"
    run = wizard("--demo", "--yes", "--only", "discovery,ofed,network", "--fault", "server2:link_down=ens2f1np1",
                 "--state-dir", str(state), scale="0.01")  # fmt: skip
    assert run.returncode == 1, run.stderr[-3000:]
    return state
