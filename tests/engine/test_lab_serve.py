"""`roce-wizard lab serve` as a standalone SSH server that the wizard, without --demo, reaches like real hosts."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import yaml

ENV = {**os.environ, "ROCE_WIZARD_LAB_TIME_SCALE": "0.01"}


def test_served_lab_is_reached_through_the_written_answers(tmp_path: Path) -> None:
    answers = tmp_path / "lab.yaml"
    server = subprocess.Popen(
        [sys.executable, "-m", "wizard", "lab", "serve", "--hosts", "3", "--write-answers", str(answers)],
        stderr=subprocess.PIPE,
        text=True,
        env=ENV,
    )
    try:
        deadline = time.monotonic() + 60
        while not answers.exists() and time.monotonic() < deadline:
            assert server.poll() is None, server.stderr.read() if server.stderr else ""
            time.sleep(0.2)
        doc = yaml.safe_load(answers.read_text())
        assert [h["name"] for h in doc["hosts"]] == ["gpu-001", "gpu-002", "gpu-003"]
        assert {h["address"] for h in doc["hosts"]} == {"127.0.0.1"}
        assert Path(doc["ssh"]["identity_file"]).stat().st_mode & 0o777 == 0o600
        run = subprocess.run(
            [sys.executable, "-m", "wizard", "--answers", str(answers), "--only", "discovery",
             "--state-dir", str(tmp_path / "state")],
            capture_output=True, text=True, timeout=120, env=ENV,
        )  # fmt: skip
        assert run.returncode == 0, run.stderr[-2000:]
        assert "gpu-003 [simulated]: ok" in run.stderr, "hosts that report being simulated are labelled"
        assert "gpu-001: this host reports that it is SIMULATED" in run.stderr
        facts = yaml.safe_load((tmp_path / "state" / "facts" / "gpu-002.json").read_text())
        assert facts["discovery"]["simulated"] is True, "the hosts themselves say they are simulated"
    finally:
        server.send_signal(signal.SIGINT)
        server.wait(timeout=30)
    assert server.returncode == 0
