"""Files the wizard made itself: rollback knows them even when a command made them, and a secret the wizard made
is rewritten without a backup copy (found by bench/chaos.py: a kill between two replica heads' key writes made
the resumed run back up the first head's wizard-generated key as if it were the host's original)."""

from __future__ import annotations

import asyncio
import posixpath
from pathlib import Path

from wizard.engine.apply import apply_change
from wizard.engine.apply_resume import record_intent, record_written
from wizard.engine.rollback import rollback_change
from wizard.engine.state import StageRecord, StateStore
from wizard.engine.step import Change, FileWrite, RemoteCommand
from wizard.executors.base import CommandResult

BACKUPS = "/var/lib/roce-wizard/backups/run-2/inference"
KEY = "/etc/roce-wizard/inference-api-key.env"


class MemoryHost:
    """A host's files in a dict; write_file copies the old content under backup_dir as the SSH executor does."""

    name = "server1"

    def __init__(self, files: dict[str, str]) -> None:
        self.files = dict(files)
        self.ran: list[list[str]] = []

    async def write_file(self, path: str, content: str, *, backup_dir: str | None = None, **_: object) -> str | None:
        backup = None
        if backup_dir is not None and path in self.files:
            backup = posixpath.join(backup_dir, path.lstrip("/"))
            self.files[backup] = self.files[path]
        self.files[path] = content
        return backup

    async def run(self, argv: list[str], **_: object) -> CommandResult:
        self.ran.append(list(argv))
        return CommandResult(command=" ".join(argv), exit_status=0, stdout="", stderr="", duration_s=0.0)


def _apply(host: MemoryHost, record: StageRecord, change: Change) -> list[tuple[str, str | None]]:
    intent = record_intent(record, change, BACKUPS)
    written = asyncio.run(apply_change(host, change, BACKUPS, 60.0, None, intent.unbacked))  # type: ignore[arg-type]
    record_written(record, written, intent)
    return written


def test_a_secret_the_wizard_created_is_rewritten_without_leaving_a_copy_of_the_old_key() -> None:
    record = StageRecord(created=[KEY])  # an earlier (killed) run wrote it
    host = MemoryHost({KEY: "VLLM_API_KEY=old\n"})
    written = _apply(
        host, record, Change(summary="shared key", files=[FileWrite(path=KEY, content="new", secret=True)])
    )
    assert written == [(KEY, None)]
    assert [p for p in host.files if p.startswith(BACKUPS)] == []
    assert record.created == [KEY] and record.backups == []


def test_a_file_of_the_operators_is_still_backed_up_even_when_secret() -> None:
    record = StageRecord()
    host = MemoryHost({KEY: "operator's own\n"})
    _apply(host, record, Change(summary="key", files=[FileWrite(path=KEY, content="new", before="x", secret=True)]))
    assert host.files[BACKUPS + KEY] == "operator's own\n"
    assert record.backups == [BACKUPS + KEY]


def test_a_non_secret_file_the_wizard_created_keeps_its_backup_for_the_guarded_revert() -> None:
    netplan = "/etc/netplan/60-roce-wizard.yaml"
    record = StageRecord(created=[netplan])
    host = MemoryHost({netplan: "old rails\n"})
    _apply(host, record, Change(summary="rails", files=[FileWrite(path=netplan, content="new rails\n")]))
    assert host.files[BACKUPS + netplan] == "old rails\n"


def test_files_a_command_creates_are_on_the_record_before_it_runs_and_rollback_removes_them(tmp_path: Path) -> None:
    store = StateStore(tmp_path)
    record = store.host("server1").stage("inference")
    host = MemoryHost({})
    change = Change(summary="generate key", commands=[RemoteCommand(argv=["sh", "-c", "true"])], creates_files=[KEY])
    intent = record_intent(record, change, BACKUPS)
    assert record.created == [KEY]  # saved before the command: a kill mid-command still leaves rollback knowing it
    record_written(record, asyncio.run(apply_change(host, change, BACKUPS, 60.0)), intent)  # type: ignore[arg-type]
    undo = rollback_change(store, "server1", ["inference"])
    assert undo is not None
    assert ["rm", "-f", "--", KEY] in [c.argv for c in undo.commands]
