"""Fixtures of the namespace lab: fresh hosts with real sshd for every test, an answers file, the CLI.

Every test here carries the ``nslab`` marker (`pytest -m nslab` runs only them) and skips, with the reason, where
network namespaces, root or OpenSSH's server are missing (tests/install-lab-tools.sh installs the tools with apt).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

from tests.nslab.lab import NsLab, missing_requirements


class NsCluster:
    """A running lab plus the wizard pointed at it."""

    def __init__(self, lab: NsLab, workdir: Path) -> None:
        self.lab = lab
        self.workdir = workdir

    def host(self, name: str):  # type: ignore[no-untyped-def]
        return next(h for h in self.lab.hosts if h.name == name)

    def answers(
        self, *, ssh: dict[str, Any] | None = None, host_extra: dict[str, dict[str, Any]] | None = None
    ) -> Path:
        data = self.lab.answers("nslab", connect_timeout_s=10, keepalive_interval_s=1, **(ssh or {}))
        for host in data["hosts"]:
            host.update((host_extra or {}).get(host["name"], {}))
        path = self.workdir / "answers.yaml"
        path.write_text(yaml.safe_dump(data, sort_keys=False))
        return path

    def command(self, *args: str) -> list[str]:
        return [sys.executable, "-m", "wizard", *args, "--state-dir", str(self.workdir / "state")]

    def run(self, *args: str, timeout_s: float = 180) -> subprocess.CompletedProcess[str]:
        return subprocess.run(self.command(*args), capture_output=True, text=True, timeout=timeout_s)

    def strike_when(self, marker: Path, args: list[str], strike, timeout_s: float = 180):  # type: ignore[no-untyped-def]
        """Start the wizard, wait until ``marker`` appears (a hanging command began), call ``strike`` and return
        the finished process with its output."""
        process = subprocess.Popen(self.command(*args), stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        deadline = time.monotonic() + timeout_s
        while not marker.exists():
            if process.poll() is not None or time.monotonic() > deadline:
                process.kill()
                out, err = process.communicate()
                raise AssertionError(f"the hanging command never started:\n{err}")
            time.sleep(0.05)
        strike()
        try:
            out, err = process.communicate(timeout=timeout_s)
        except subprocess.TimeoutExpired:
            process.kill()
            out, err = process.communicate()
            raise AssertionError(f"the wizard hung after the fault:\n{err}") from None
        return subprocess.CompletedProcess(process.args, process.returncode, out, err)


def events(stdout: str) -> list[dict[str, Any]]:
    return [json.loads(line) for line in stdout.splitlines() if line.startswith("{")]


def host_failures(stdout: str) -> dict[str, str]:
    return {e["host"]: e["reason"] for e in events(stdout) if e["event"] == "host_status" and e["status"] == "failed"}


@pytest.fixture
def ns_cluster(tmp_path: Path, request: pytest.FixtureRequest) -> Iterator[NsCluster]:
    """``@pytest.mark.hosts(n, sudo_password=[...])`` picks the size; default 2 hosts."""
    reason = missing_requirements()
    if reason:
        pytest.skip(f"namespace lab: {reason}")
    marker = request.node.get_closest_marker("hosts")
    n = marker.args[0] if marker else 2
    sudo_password = set(marker.kwargs.get("sudo_password", ())) if marker else set()
    lab = NsLab(Path(os.environ.get("ROCE_WIZARD_NSLAB_DIR", "/tmp/roce-wizard-nslab")))
    lab.up(n, sudo_password)
    try:
        yield NsCluster(lab, tmp_path)
    finally:
        lab.down()
