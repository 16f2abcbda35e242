"""Saved progress: atomic, private, versioned, and never corrupt even when the writer is killed."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from wizard.engine.state import RunRecord, StateStore, atomic_write
from wizard.errors import StateError


def test_host_records_round_trip_with_private_permissions(tmp_path: Path) -> None:
    store = StateStore(tmp_path)
    record = store.host("server1").stage("discovery")
    record.status = "done"
    record.reason = "verified"
    store.save_host("server1")
    path = tmp_path / "hosts" / "server1.json"
    assert path.stat().st_mode & 0o777 == 0o600
    again = StateStore(tmp_path).host("server1")
    assert again.stages["discovery"].status == "done"
    assert again.stages["discovery"].reason == "verified"


def test_a_state_file_from_another_schema_version_is_refused_clearly(tmp_path: Path) -> None:
    (tmp_path / "hosts").mkdir()
    (tmp_path / "hosts" / "a.json").write_text(json.dumps({"schema_version": 99, "host": "a"}))
    with pytest.raises(StateError, match="schema version 99"):
        StateStore(tmp_path).host("a")


def test_a_stage_status_is_read_without_keeping_the_host_record(tmp_path: Path) -> None:
    """The demo asks every host whether its first stages are done before a bwtest: at 1,024 hosts loading every
    record for it held 160 MiB that nothing else read."""
    store = StateStore(tmp_path)
    store.host("server1").stage("discovery").status = "done"
    store.host("server1").stage("discovery").checks = []
    store.save_host("server1")
    fresh = StateStore(tmp_path)
    assert fresh.stage_status("server1", "discovery") == "done"
    assert fresh.stage_status("server1", "roce") == "pending", "a stage the record does not have"
    assert fresh.stage_status("server2", "discovery") == "pending", "a host with no record"
    assert fresh._hosts == {}, "nothing kept"
    store.host("server1").stage("roce").status = "failed"  # a record already loaded is the one asked
    assert store.stage_status("server1", "roce") == "failed"
    (tmp_path / "hosts" / "a.json").write_text(json.dumps({"schema_version": 99, "host": "a"}))
    with pytest.raises(StateError, match="schema version 99"):
        fresh.stage_status("a", "discovery")


def test_a_garbled_state_file_is_reported_not_trusted(tmp_path: Path) -> None:
    (tmp_path / "run.json").write_text("{not json")
    with pytest.raises(StateError, match="not valid JSON"):
        StateStore(tmp_path).load_run()


def test_run_record_round_trips(tmp_path: Path) -> None:
    store = StateStore(tmp_path)
    store.save_run(RunRecord(cluster="c", answers_digest="abc", hosts=["a"]))
    loaded = store.load_run()
    assert loaded is not None and loaded.cluster == "c" and loaded.hosts == ["a"]


_WRITER = """
import sys
from wizard.engine.state import atomic_write
from pathlib import Path
path = Path(sys.argv[1])
n = 0
while True:
    n += 1
    atomic_write(path, '{"n": %d, "pad": "%s"}' % (n, "x" * 200000))
"""


def test_kill_9_during_saves_never_leaves_a_corrupt_file(tmp_path: Path) -> None:
    target = tmp_path / "state.json"
    atomic_write(target, '{"n": 0, "pad": ""}')
    for _ in range(5):
        proc = subprocess.Popen([sys.executable, "-c", _WRITER, str(target)])
        time.sleep(0.3)
        os.kill(proc.pid, signal.SIGKILL)
        proc.wait()
        data = json.loads(target.read_text())
        assert isinstance(data["n"], int)
    leftovers = [p.name for p in tmp_path.iterdir() if p.name != "state.json"]
    # A killed writer may leave its temp file behind, but never a half-written state.json.
    assert all(name.startswith(".state.json.") for name in leftovers)
