"""A state directory that fills up or turns read-only: one line naming it and the OS reason, exit 2, nothing
half-written, and no change on a host without its record on disk first (issue 17)."""

from __future__ import annotations

import errno
import json
import os
import shutil
import subprocess
import sys
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from wizard.cli.main import main
from wizard.engine import state as state_module
from wizard.engine.events import EventBus
from wizard.engine.logs import HostLogs, Redactor
from wizard.engine.state import StateStore, atomic_write
from wizard.errors import StateError

ROOT = os.geteuid() == 0
INSTALL = "Install DOCA-OFED"  # the ofed stage's fourth change; the three before it are then on record
needs_root = pytest.mark.skipif(not ROOT, reason="mounts a small tmpfs (mount -t tmpfs) and remounts it: needs root")


# -- what every outcome must show ---------------------------------------------------------------------------------
def assert_one_line_error(stderr: str, state_dir: Path, code: str) -> None:
    errors = [line for line in stderr.splitlines() if line.startswith("roce-wizard: ")]
    assert errors[-1].startswith(f"roce-wizard: cannot write to the state directory {state_dir}: "), stderr[-2000:]
    assert f"({code})" in errors[-1] and "run the same command again to resume" in errors[-1]
    assert "Traceback" not in stderr


def assert_nothing_half_written(state_dir: Path) -> None:
    """Every state file there loads, and no temp file of an atomic write is left behind."""
    assert not [p.name for p in state_dir.rglob(".*") if p.is_file()]
    store = StateStore(state_dir)
    if store.exists():
        store.load_run()
    for name in store.host_names():
        store.host(name)
        store.load_facts(name)
    for image in [*state_dir.glob("lab/*.json"), *state_dir.glob("probes/*.json")]:
        json.loads(image.read_text())


def lab_packages(state_dir: Path, host: str) -> dict[str, Any]:
    """The simulated host's package database as its saved disk holds it."""
    return json.loads((state_dir / "lab" / f"{host}.json").read_text())["attrs"]["packages"]


def run_demo(state_dir: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> tuple[int, str]:
    monkeypatch.setenv("ROCE_WIZARD_LAB_TIME_SCALE", "0.02")
    code = main(["--demo", "--yes", "--only", "discovery,ofed", "--state-dir", str(state_dir)])
    return code, capsys.readouterr().err


def on_change(monkeypatch: pytest.MonkeyPatch, summary: str, host: str, action: Callable[[], None]) -> list[str]:
    """Run ``action`` once, when ``host`` announces the change ``summary`` (before its record or commands)."""
    fired: list[str] = []
    real = EventBus.emit

    def emit(self: EventBus, kind: str, **data: Any) -> None:
        if kind == "change_started" and data["host"] == host and summary in data["summary"] and not fired:
            fired.append(data["summary"])
            action()
        real(self, kind, **data)

    monkeypatch.setattr(EventBus, "emit", emit)
    return fired


@pytest.fixture
def tmpfs(tmp_path: Path) -> Iterator[Path]:
    mount = tmp_path / "mnt"
    mount.mkdir()
    subprocess.run(["mount", "-t", "tmpfs", "-o", "size=64m,mode=0700", "tmpfs", str(mount)], check=True)
    try:
        yield mount
    finally:
        unmount_all(mount)


def unmount_all(path: Path) -> None:
    """Unmount every mount stacked on ``path`` (a tmpfs, a bind mount over it)."""
    while subprocess.run(["umount", "-l", str(path)], capture_output=True).returncode == 0:
        pass


def fill(mount: Path) -> None:
    with (mount / "filler").open("wb") as handle:
        try:
            while True:
                handle.write(b"\0" * 65536)
                handle.flush()
        except OSError as exc:
            assert exc.errno == errno.ENOSPC


def remount(mount: Path, options: str) -> None:
    subprocess.run(["mount", "-o", f"remount,{options}", str(mount)], check=True)


def read_only_now(folder: Path) -> None:
    """Make ``folder`` read-only while files in it are open for writing (logs, the lock): a plain ``remount,ro`` is
    refused as busy then, a read-only bind mount over it is not (files opened before keep writing)."""
    subprocess.run(["mount", "--bind", str(folder), str(folder)], check=True)
    subprocess.run(["mount", "-o", "remount,bind,ro", str(folder)], check=True)


# -- writes, without root -----------------------------------------------------------------------------------------
def test_a_refused_write_keeps_the_old_file_leaves_no_temp_file_and_names_dir_and_reason(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    target = tmp_path / "hosts" / "server1.json"
    atomic_write(target, '{"old": true}')

    def full(*_: object) -> None:
        raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))

    monkeypatch.setattr(state_module.os, "fsync", full)
    with pytest.raises(StateError) as caught:
        atomic_write(target, '{"new": true}')
    assert str(caught.value).startswith(
        f"cannot write to the state directory {tmp_path}: No space left on device (ENOSPC), saving hosts/server1.json;"
    )
    assert json.loads(target.read_text()) == {"old": True}
    assert sorted(p.name for p in target.parent.iterdir()) == ["server1.json"]


def test_a_log_flush_the_disk_refuses_ends_the_run_at_the_next_write(tmp_path: Path) -> None:
    logs = HostLogs(tmp_path / "logs", Redactor())
    logs.write("server1", "first line")

    class Full:
        def write(self, _: str) -> int:
            raise OSError(errno.EROFS, os.strerror(errno.EROFS))

        def flush(self) -> None:
            raise OSError(errno.EROFS, os.strerror(errno.EROFS))

        def close(self) -> None:
            pass

    logs._files["server1"] = Full()  # type: ignore[assignment]
    logs._unflushed.add("server1")
    logs._flush()  # a loop callback: must not raise there ...
    with pytest.raises(StateError, match=r"Read-only file system \(EROFS\), saving logs;"):
        logs.write("server2", "next")  # ... but the next write, on any host, ends the run
    with pytest.raises(StateError):
        logs.close()


def test_a_change_whose_record_cannot_be_written_never_starts(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """The portable version of the tmpfs tests: from the install's announcement on, every rename of a state file
    fails as on a full disk (the lab's disks, saved by the lab, are not affected)."""
    real_replace = os.replace

    def refuse(src: Any, dst: Any) -> None:
        if Path(dst).parent.name != "lab":
            raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))
        real_replace(src, dst)

    fired = on_change(monkeypatch, INSTALL, "server1", lambda: monkeypatch.setattr(state_module.os, "replace", refuse))
    code, err = run_demo(tmp_path, monkeypatch, capsys)
    assert fired and code == 2
    assert_one_line_error(err, tmp_path, "ENOSPC")
    monkeypatch.setattr(state_module.os, "replace", real_replace)
    assert_nothing_half_written(tmp_path)
    assert "doca-ofed" not in lab_packages(tmp_path, "server1")  # the install never ran on the host
    ofed = StateStore(tmp_path).host("server1").stages["ofed"]
    assert (ofed.status, ofed.changes_applied) == ("running", 3)  # the record says where it stopped


def without_root_powers() -> list[str]:
    """A command prefix under which permissions bind: none for a user, ``setpriv`` dropping root's override."""
    if not ROOT:
        return []
    if shutil.which("setpriv") is None:
        pytest.skip("root writes through chmod 0500 and setpriv (util-linux) is missing to drop CAP_DAC_OVERRIDE")
    caps = "-dac_override,-dac_read_search"
    return ["setpriv", "--bounding-set", caps, "--inh-caps", caps]


def test_a_state_directory_without_write_permission_fails_before_anything_runs(tmp_path: Path) -> None:
    state_dir = tmp_path / "state"
    state_dir.mkdir(mode=0o500)
    env = {**os.environ, "ROCE_WIZARD_LAB_TIME_SCALE": "0.02"}
    argv = [sys.executable, "-m", "wizard", "--demo", "--yes", "--only", "discovery", "--state-dir", str(state_dir)]
    result = subprocess.run(
        [*without_root_powers(), *argv], capture_output=True, text=True, timeout=120, env=env
    )  # fmt: skip
    assert result.returncode == 2
    assert_one_line_error(result.stderr, state_dir, "EACCES")
    assert list(state_dir.iterdir()) == []


# -- a real full or read-only filesystem (root) ------------------------------------------------------------------
@needs_root
def test_a_state_disk_that_fills_before_a_change_stops_it_with_its_record_on_disk(
    tmpfs: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    state_dir = tmpfs / "state"
    fired = on_change(monkeypatch, INSTALL, "server1", lambda: fill(tmpfs))
    code, err = run_demo(state_dir, monkeypatch, capsys)
    assert fired and code == 2
    assert_one_line_error(err, state_dir, "ENOSPC")
    assert_nothing_half_written(state_dir)
    assert "doca-ofed" not in lab_packages(state_dir, "server1")
    assert StateStore(state_dir).host("server1").stages["ofed"].changes_applied == 3


@needs_root
def test_a_state_disk_made_read_only_mid_run_stops_cleanly_and_the_same_command_resumes(
    tmpfs: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    state_dir = tmpfs / "state"
    fired = on_change(monkeypatch, INSTALL, "server1", lambda: read_only_now(state_dir))
    code, err = run_demo(state_dir, monkeypatch, capsys)
    assert fired and code == 2
    assert_one_line_error(err, state_dir, "EROFS")
    assert_nothing_half_written(state_dir)
    assert "doca-ofed" not in lab_packages(state_dir, "server1")
    subprocess.run(["umount", str(state_dir)], check=True)  # writable again
    monkeypatch.undo()  # the hook is gone; the resume is the same command
    code, err = run_demo(state_dir, monkeypatch, capsys)
    assert code == 0, err[-2000:]
    assert "doca-ofed" in lab_packages(state_dir, "server1")


@needs_root
def test_a_small_tmpfs_that_fills_during_the_run_ends_it_with_one_line(tmp_path: Path) -> None:
    """Sized from a measured run (`du -sk` of the state directory): discovery and ofed on two hosts write ~476 KiB
    (logs ~324 KiB, the simulated disks ~68 KiB), discovery alone ~260 KiB; 360 KiB fills during the ofed stage."""
    mount = tmp_path / "small"
    mount.mkdir()
    subprocess.run(["mount", "-t", "tmpfs", "-o", "size=360k", "tmpfs", str(mount)], check=True)
    try:
        state_dir = mount / "state"
        env = {**os.environ, "ROCE_WIZARD_LAB_TIME_SCALE": "0.02"}
        argv = [sys.executable, "-m", "wizard", "--demo", "--yes", "--only", "discovery,ofed"]
        result = subprocess.run(
            [*argv, "--state-dir", str(state_dir)], capture_output=True, text=True, timeout=120, env=env
        )
        assert result.returncode == 2, result.stderr[-2000:]
        assert_one_line_error(result.stderr, state_dir, "ENOSPC")
        assert_nothing_half_written(state_dir)
    finally:
        unmount_all(mount)


@needs_root
def test_a_read_only_state_directory_fails_before_any_host_is_touched(tmpfs: Path) -> None:
    state_dir = tmpfs / "state"
    state_dir.mkdir()
    remount(tmpfs, "ro")
    env = {**os.environ, "ROCE_WIZARD_LAB_TIME_SCALE": "0.02"}
    result = subprocess.run(
        [sys.executable, "-m", "wizard", "--demo", "--yes", "--state-dir", str(state_dir)],
        capture_output=True, text=True, timeout=120, env=env,
    )  # fmt: skip
    assert result.returncode == 2
    assert_one_line_error(result.stderr, state_dir, "EROFS")
    assert list(state_dir.iterdir()) == []


@needs_root
def test_simulated_disks_that_cannot_be_saved_end_the_run_the_same_way(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """The lab keeps its hosts' disks in <state>/lab: here only that folder turns read-only."""
    state_dir = tmp_path / "state"
    lab = state_dir / "lab"
    lab.mkdir(parents=True)
    subprocess.run(["mount", "-t", "tmpfs", "-o", "size=4m", "tmpfs", str(lab)], check=True)
    try:
        fired = on_change(monkeypatch, INSTALL, "server1", lambda: read_only_now(lab))
        code, err = run_demo(state_dir, monkeypatch, capsys)
        assert fired and code == 2
        assert_one_line_error(err, state_dir, "EROFS")
        assert "saving lab;" in err
        assert_nothing_half_written(state_dir)
        assert "doca-ofed" not in lab_packages(state_dir, "server1")
        # the wizard's own record was writable: it says why the host stopped
        assert "cannot save the simulated hosts' disks" in StateStore(state_dir).host("server1").stages["ofed"].reason
    finally:
        unmount_all(lab)
