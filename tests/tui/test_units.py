"""The pieces behind the screens: bounded log buffers, progress from runner events, engine helpers."""

from __future__ import annotations

import subprocess
import sys

from screens.log_buffer import LogBuffers
from screens.progress import Progress
from wizard.engine.events import Event
from wizard.engine.interactive import StageProgress, resume_point


def test_log_buffers_keep_only_the_last_lines_per_host_and_drain_once() -> None:
    buffers = LogBuffers(keep=100)
    for i in range(1000):
        buffers.add("h1", f"line {i}")
    buffers.add("h2", "other")
    assert len(buffers.tail("h1")) == 100
    assert buffers.tail("h1")[-1] == "line 999"
    batch = buffers.drain()
    assert len(batch["h1"]) == 100 and batch["h2"] == ["other"]
    assert buffers.drain() == {}
    assert buffers.ingested == 1001


def test_progress_follows_host_status_checks_and_plans() -> None:
    progress = Progress(["discovery", "ofed"], ["a", "b"])
    progress.apply(Event("stage_started", {"stage": "ofed", "title": "Driver stack"}))
    progress.apply(Event("host_status", {"stage": "ofed", "host": "a", "status": "running", "reason": "probing"}))
    assert progress.stage_status("ofed") == "running"
    progress.apply(
        Event(
            "check",
            {
                "stage": "ofed",
                "host": "a",
                "id": "x",
                "title": "X",
                "status": "fail",
                "evidence": "missing",
                "fix": None,
            },
        )
    )
    progress.apply(Event("host_status", {"stage": "ofed", "host": "a", "status": "failed", "reason": "X: missing"}))
    progress.apply(Event("host_status", {"stage": "ofed", "host": "b", "status": "done", "reason": "verified"}))
    assert progress.stage_status("ofed") == "failed"
    assert progress.cell("ofed", "a").checks[0]["evidence"] == "missing"
    assert progress.failures() == [("ofed", "a", "X: missing")]
    progress.apply(Event("host_simulated", {"host": "b"}))
    assert progress.simulated_hosts == {"b"}


def test_resume_point_is_the_first_stage_not_done_everywhere() -> None:
    done, failed = StageProgress("done", ""), StageProgress("failed", "x")
    table = {
        "a": {"discovery": done, "ofed": done, "network": failed},
        "b": {"discovery": done, "ofed": done, "network": done},
    }
    assert resume_point(table, ["discovery", "ofed", "network"]) == "network"
    table["a"]["network"] = StageProgress("skipped", "")
    assert resume_point(table, ["discovery", "ofed", "network"]) is None


def test_the_wizard_helpers_in_the_engine_do_not_import_textual() -> None:
    code = (
        "import sys, wizard.answers.write, wizard.engine.interactive, wizard.engine.conn_test\n"
        "print(','.join(sorted(m for m in sys.modules if m.split('.')[0] in ('textual', 'screens'))))\n"
    )
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert result.stdout.strip() == ""
