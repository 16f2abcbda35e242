"""The command line: cheap --help, usage errors, and --listen serving /metrics over HTTP on 127.0.0.1."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import pytest
from prometheus_client.parser import text_string_to_metric_families

from tests.handoff.metrics.conftest import ENTRY
from wizard.cli.metrics import main as metrics_cmd
from wizard.errors import UsageError

ROOT = Path(__file__).parents[3]


def test_help_loads_neither_asyncio_nor_ssh_nor_prometheus_client():
    code = (
        "import sys\nfrom wizard.cli.metrics import main as metrics_cmd\n"
        "try:\n    metrics_cmd(['--help'])\nexcept SystemExit:\n    pass\n"
        "print('LOADED:' + ','.join(sorted(m for m in sys.modules if m.split('.')[0] in "
        "('asyncio', 'asyncssh', 'prometheus_client', 'steps'))))\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, cwd=ROOT).stdout
    assert "--once" in out and "--listen HOST:PORT" in out
    assert out.rsplit("LOADED:", 1)[1].strip() == ""


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["--demo", "--once", "--listen", "127.0.0.1:9420"], "not allowed with"),
        (["--demo", "--listen", "9420"], "want HOST:PORT"),
        (["--demo", "--listen", "127.0.0.1:99999"], "want HOST:PORT"),
        (["--demo", "--once", "--scrape-timeout", "0"], "must be positive"),
    ],
)
def test_unusable_arguments_are_usage_errors(argv: list[str], message: str):
    with pytest.raises(UsageError, match=message):
        metrics_cmd(argv)


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _get(url: str, deadline: float) -> str:
    while True:
        try:
            with urllib.request.urlopen(url, timeout=10) as response:
                return response.read().decode()
        except OSError:
            if time.monotonic() > deadline:
                raise
            time.sleep(0.3)


@pytest.mark.slow
def test_listen_serves_fresh_scrapes_until_sigterm(state_copy: Path):
    port = _free_port()
    env = {**os.environ, "ROCE_WIZARD_LAB_TIME_SCALE": "0.02"}
    proc = subprocess.Popen(
        [sys.executable, "-c", ENTRY, "--demo", "--state-dir", str(state_copy), "--listen", f"127.0.0.1:{port}"],
        cwd=ROOT, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )  # fmt: skip
    try:
        url = f"http://127.0.0.1:{port}/metrics"
        first = _get(url, time.monotonic() + 90)
        second = _get(url, time.monotonic() + 30)
        for text in (first, second):
            up = {s.labels["host"]: s.value for f in text_string_to_metric_families(text) for s in f.samples
                  if s.name == "roce_wizard_host_up"}  # fmt: skip
            assert up == {"server1": 1.0, "server2": 1.0}
        durations = [line for line in second.splitlines() if line.startswith("roce_wizard_scrape_duration_seconds ")]
        assert len(durations) == 1
    finally:
        proc.send_signal(signal.SIGTERM)
        _, err = proc.communicate(timeout=30)
    assert proc.returncode == 0, err[-2000:]
    assert f"serving http://127.0.0.1:{port}/metrics" in err
