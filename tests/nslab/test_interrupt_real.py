"""Stopping the wizard ends its commands on real OpenSSH hosts, not only its side of them.

Closing an SSH channel leaves a command without a pty running on the host (sshd sends it no SIGHUP). The wizard sends
the RFC 4254 "signal" request first, which sshd (7.9 and later) turns into a SIGTERM for the session's processes.
"""

from __future__ import annotations

import json
import signal
import subprocess
import time
from pathlib import Path

import pytest

from tests.nslab.conftest import NsCluster

pytestmark = pytest.mark.nslab


def alive(pids: list[int]) -> list[int]:
    """The PIDs among ``pids`` that still run (a zombie counts as gone: it runs nothing)."""
    running = []
    for pid in pids:
        try:
            state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
        except (OSError, IndexError):
            continue
        if state != "Z":
            running.append(pid)
    return running


@pytest.mark.hosts(2)
@pytest.mark.parametrize(("sig", "code"), [(signal.SIGTERM, 143), (signal.SIGINT, 130)])
def test_a_stopped_wizard_leaves_no_command_running_on_its_hosts(
    ns_cluster: NsCluster, sig: signal.Signals, code: int
) -> None:
    answers = ns_cluster.answers()
    h1 = ns_cluster.host("h1")
    started = h1.hang_command("lspci")  # a probe of discovery that now never returns (exec sleep 600)
    process = subprocess.Popen(
        ns_cluster.command("--answers", str(answers), "--only", "discovery", "--json"),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    deadline = time.monotonic() + 120
    while not started.exists():
        assert process.poll() is None and time.monotonic() < deadline, "the hanging probe never started"
        time.sleep(0.05)
    pids = [int(p) for p in Path(f"{started}.pids").read_text().split()]
    assert alive(pids), "the hung probe runs on the host"

    process.send_signal(sig)
    out, err = process.communicate(timeout=60)

    assert process.returncode == code, err
    assert f"roce-wizard: interrupted by {sig.name} during stage discovery" in err
    assert "run the same command again to resume" in err and "Traceback" not in err
    gone_by = time.monotonic() + 10
    while alive(pids) and time.monotonic() < gone_by:
        time.sleep(0.1)
    assert alive(pids) == [], "the command the wizard was waiting for still runs on h1"
    record = json.loads((ns_cluster.workdir / "state" / "hosts" / "h1.json").read_text())
    assert record["stages"]["discovery"]["status"] == "interrupted", record["stages"]["discovery"]
    assert record["stages"]["discovery"]["reason"].startswith(f"interrupted by {sig.name}")
