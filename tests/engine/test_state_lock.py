"""One writer per state directory: the second wizard is refused naming the first; a dead holder's lock is free."""

from __future__ import annotations

import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import textwrap
from collections.abc import Iterator
from pathlib import Path

import pytest

from wizard.engine.state_lock import (
    LOCK_NAME,
    Holder,
    StateLock,
    command_line,
    lock_state_dir,
    recorded_holder,
    unlock_state_dir,
)
from wizard.errors import EXIT_USAGE, StateError

REPO = Path(__file__).resolve().parents[2]

# A wizard that takes the lock and then works for a long time (until it is killed).
HOLDER = textwrap.dedent(
    """
    import sys, time
    from wizard.engine.state_lock import lock_state_dir
    lock_state_dir(sys.argv[1], argv=["--answers", "site.yaml", "--yes"])
    print("locked", flush=True)
    time.sleep(120)
    """
)
# A second wizard: takes the lock, exits as the command line does on a StateError (2, one line on stderr).
CONTENDER = textwrap.dedent(
    """
    import sys
    from wizard.errors import EXIT_USAGE, StateError
    from wizard.engine.state_lock import lock_state_dir
    try:
        lock = lock_state_dir(sys.argv[1])
    except StateError as exc:
        sys.stderr.write(f"roce-wizard: {exc}\\n")
        sys.exit(EXIT_USAGE)
    print("proceeding as", lock.holder.pid, flush=True)
    """
)
# Takes the flock itself and writes no holder record: a wizard caught between locking and recording.
BARE_FLOCK = textwrap.dedent(
    """
    import fcntl, os, sys, time
    fd = os.open(sys.argv[1], os.O_RDWR | os.O_CREAT, 0o600)
    fcntl.flock(fd, fcntl.LOCK_EX)
    print("locked", flush=True)
    time.sleep(120)
    """
)


def python(script: str, *args: str) -> list[str]:
    return [sys.executable, "-c", script, *args]


@pytest.fixture
def holder_process(tmp_path: Path) -> Iterator[subprocess.Popen[str]]:
    """A first wizard holding ``tmp_path / "state"``; killed at the end whatever the test did."""
    proc = subprocess.Popen(python(HOLDER, str(tmp_path / "state")), cwd=REPO, stdout=subprocess.PIPE, text=True)
    try:
        assert proc.stdout is not None and proc.stdout.readline().strip() == "locked"
        yield proc
    finally:
        if proc.poll() is None:
            proc.kill()
        proc.wait(timeout=10)


def contend(state_dir: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(python(CONTENDER, str(state_dir)), cwd=REPO, capture_output=True, text=True, timeout=60)


def test_second_wizard_exits_2_naming_the_first_ones_pid_host_and_command(
    tmp_path: Path, holder_process: subprocess.Popen[str]
) -> None:
    second = contend(tmp_path / "state")
    assert second.returncode == EXIT_USAGE == 2
    lines = second.stderr.strip().splitlines()
    assert len(lines) == 1, second.stderr  # one line, no traceback
    assert (
        f"state directory {tmp_path / 'state'} is in use by pid {holder_process.pid} on {socket.gethostname()}"
        in lines[0]
    )
    assert "(roce-wizard --answers site.yaml --yes); wait for it or stop it" in lines[0]
    assert second.stdout == ""  # it did not proceed


def test_lock_of_a_sigkilled_wizard_is_taken_over_and_its_record_overwritten(
    tmp_path: Path, holder_process: subprocess.Popen[str]
) -> None:
    state = tmp_path / "state"
    assert contend(state).returncode == 2
    holder_process.send_signal(signal.SIGKILL)
    assert holder_process.wait(timeout=10) == -signal.SIGKILL
    # The dead wizard's record is still in the file, but it is not shown as a live holder ...
    assert json.loads((state / LOCK_NAME).read_text())["pid"] == holder_process.pid
    assert recorded_holder(state) is None
    # ... and the next wizard simply gets the lock: the kernel released it when its holder died.
    second = contend(state)
    assert second.returncode == 0, second.stderr
    assert second.stdout.split() == ["proceeding", "as", str(second.stdout.split()[-1])]
    assert int(second.stdout.split()[-1]) != holder_process.pid


def test_holder_record_names_this_process_and_replaces_a_dead_holders_longer_record(tmp_path: Path) -> None:
    (tmp_path / LOCK_NAME).write_text(Holder(1, "x" * 300, "2020-01-01T00:00:00+00:00", "roce-wizard old").to_text())
    with StateLock(tmp_path, argv=["--demo", "--yes"]) as lock:
        record = json.loads((tmp_path / LOCK_NAME).read_text())
        assert record["pid"] == os.getpid()
        assert record["host"] == socket.gethostname()
        assert record["command"] == "roce-wizard --demo --yes"
        assert record["since"][:4].isdigit() and record["since"][10] == "T"
        assert lock.holder is not None and lock.holder.pid == os.getpid()
        assert recorded_holder(tmp_path) == lock.holder


def test_lock_file_is_private_even_under_a_permissive_umask(tmp_path: Path) -> None:
    old = os.umask(0)
    try:
        with StateLock(tmp_path / "new" / "state"):
            assert (tmp_path / "new" / "state" / LOCK_NAME).stat().st_mode & 0o777 == 0o600
            assert (tmp_path / "new" / "state").stat().st_mode & 0o777 == 0o700
    finally:
        os.umask(old)


def test_an_existing_lock_file_with_a_loose_mode_is_made_private(tmp_path: Path) -> None:
    (tmp_path / LOCK_NAME).write_text("")
    (tmp_path / LOCK_NAME).chmod(0o644)
    with StateLock(tmp_path):
        assert (tmp_path / LOCK_NAME).stat().st_mode & 0o777 == 0o600


def test_the_environment_and_secret_looking_option_values_are_never_written(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("ROCE_WIZARD_SUDO_PASSWORD", "env-secret-q8Zr1")
    argv = ["--answers", "a.yaml", "--sudo-password", "argv-secret-1", "--api-key=argv-secret-2", "--yes"]
    with StateLock(tmp_path, argv=argv):
        text = (tmp_path / LOCK_NAME).read_text()
    assert "secret" not in text
    assert command_line(argv) == "roce-wizard --answers a.yaml --sudo-password '***' '--api-key=***' --yes"


def test_a_holder_that_has_not_recorded_itself_yet_is_still_refused_in_one_line(tmp_path: Path) -> None:
    path = tmp_path / LOCK_NAME
    proc = subprocess.Popen(python(BARE_FLOCK, str(path)), cwd=REPO, stdout=subprocess.PIPE, text=True)
    try:
        assert proc.stdout is not None and proc.stdout.readline().strip() == "locked"
        with pytest.raises(StateError, match=r"in use by another roce-wizard \(just started\); wait for it or stop it"):
            StateLock(tmp_path).acquire()
    finally:
        proc.kill()
        proc.wait(timeout=10)


def test_two_locks_in_one_process_conflict_but_lock_state_dir_is_reentrant(tmp_path: Path) -> None:
    first = lock_state_dir(tmp_path)
    try:
        assert lock_state_dir(tmp_path) is first and first.held
        with pytest.raises(StateError, match=f"in use by pid {os.getpid()}"):
            StateLock(tmp_path).acquire()  # flock is per open file: a second open in one process is a second writer
    finally:
        unlock_state_dir(tmp_path)
    assert not first.held
    with StateLock(tmp_path) as again:
        assert again.held


def test_release_clears_the_record_and_lets_the_next_wizard_in(tmp_path: Path) -> None:
    lock = StateLock(tmp_path).acquire()
    lock.release()
    assert (tmp_path / LOCK_NAME).read_text() == ""
    assert (tmp_path / LOCK_NAME).exists()  # kept: removing it would let two wizards lock two different files
    assert recorded_holder(tmp_path) is None
    assert contend(tmp_path).returncode == 0


def test_a_state_directory_removed_under_the_lock_is_locked_again(tmp_path: Path) -> None:
    state = tmp_path / "state"
    lock = lock_state_dir(state)
    try:
        shutil.rmtree(state)  # what --reset does to the demo's state directory
        assert not lock.held
        assert lock_state_dir(state) is lock and lock.held
        assert contend(state).returncode == 2  # the new directory is guarded, not left open
    finally:
        unlock_state_dir(state)


def test_a_lock_file_removed_between_open_and_flock_is_not_trusted(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import fcntl

    real_flock, calls = fcntl.flock, []

    def flock_after_a_reset(fd: int, operation: int) -> None:
        if not calls:
            (tmp_path / LOCK_NAME).unlink()  # another wizard's --reset wins the race
        calls.append(operation)
        real_flock(fd, operation)

    monkeypatch.setattr("wizard.engine.state_lock.fcntl.flock", flock_after_a_reset)
    with StateLock(tmp_path) as lock:
        assert len(calls) == 2  # locked the orphaned file, saw it was gone, locked the new one
        assert lock.held
        assert contend(tmp_path).returncode == 2


@pytest.mark.slow
def test_the_wizard_itself_refuses_a_second_run_on_a_state_directory_in_use(
    tmp_path: Path, holder_process: subprocess.Popen[str]
) -> None:
    # The real command line, as a second operator would type it while the first run applies: exit 2, one line, and
    # the first run's progress untouched (not even --reset removes it).
    state = tmp_path / "state"
    run = [sys.executable, "-m", "wizard", "--demo", "--yes", "--only", "discovery", "--state-dir", str(state)]
    for extra in ([], ["--reset"]):
        second = subprocess.run(
            [*run, *extra],
            cwd=REPO, capture_output=True, text=True, timeout=120,
        )  # fmt: skip
        assert second.returncode == EXIT_USAGE, second.stderr
        assert f"in use by pid {holder_process.pid}" in second.stderr, second.stderr
        assert (state / LOCK_NAME).exists() and not (state / "run.json").exists()
    rollback = subprocess.run(
        [sys.executable, "-m", "wizard", "rollback", "--demo", "--yes", "--state-dir", str(state)],
        cwd=REPO, capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert rollback.returncode == EXIT_USAGE and f"in use by pid {holder_process.pid}" in rollback.stderr


def test_a_state_directory_that_cannot_be_written_is_one_line_naming_it_not_a_traceback(tmp_path: Path) -> None:
    import errno
    from unittest import mock

    from wizard.errors import StateError

    refused = OSError(errno.EROFS, "Read-only file system")
    with mock.patch("os.open", side_effect=refused), pytest.raises(StateError) as err:
        StateLock(tmp_path / "state").acquire()
    assert str(err.value).startswith(f"cannot write to the state directory {tmp_path / 'state'}: ")
    assert "Read-only file system (EROFS), saving lock" in str(err.value)
