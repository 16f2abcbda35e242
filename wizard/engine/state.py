"""Saved progress: one small JSON file per host, written atomically after every command, mode 0600.

Layout of a state directory::

    run.json              schema version, answers digest, cluster, last run
    hosts/<host>.json     per stage: status, timestamps, reason, checks, backups; the command in flight
    facts/<host>.json     latest facts per stage
    logs/<host>.log       everything run on the host and everything it printed

Per-host files keep each save small, so saving after every command stays cheap with a thousand hosts.
"""

from __future__ import annotations

import contextlib
import errno
import json
import os
import tempfile
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from wizard.engine.step import CheckItem
from wizard.errors import StateError

SCHEMA_VERSION = 1
# interrupted: the run was stopped (SIGINT, SIGTERM, quit) while the stage ran on the host; a resume re-plans it.
Status = Literal["pending", "running", "done", "failed", "skipped", "interrupted"]


def now() -> str:
    return datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


class _Model(BaseModel):
    model_config = ConfigDict(extra="forbid")


class StageRecord(_Model):
    status: Status = "pending"
    started_at: str | None = None
    finished_at: str | None = None
    reason: str = ""
    checks: list[CheckItem] = Field(default_factory=list)
    changes_applied: int = 0
    backups: list[str] = Field(default_factory=list)
    """Copies of files this stage replaced, on the host: <backup root>/<run>/<stage>/<original path>."""
    created: list[str] = Field(default_factory=list)
    """Files this stage created where none existed (a rollback removes them)."""
    created_links: list[str] = Field(default_factory=list)
    """Virtual interfaces (bonds) this stage created (a rollback deletes them before re-applying netplan)."""


class HostRecord(_Model):
    schema_version: int = SCHEMA_VERSION
    host: str
    stages: dict[str, StageRecord] = Field(default_factory=dict)
    command_in_flight: str | None = None
    last_command: str | None = None
    updated_at: str | None = None

    def stage(self, stage: str) -> StageRecord:
        return self.stages.setdefault(stage, StageRecord())


class _StageStatus(BaseModel):
    """What StateStore.stage_status reads of a saved stage: only its status (the rest is left unread)."""

    model_config = ConfigDict(extra="ignore")
    status: Status = "pending"


class _Statuses(BaseModel):
    model_config = ConfigDict(extra="ignore")
    host: str
    stages: dict[str, _StageStatus] = Field(default_factory=dict)


class RunRecord(_Model):
    schema_version: int = SCHEMA_VERSION
    cluster: str = ""
    answers_digest: str = ""
    answers_path: str | None = None
    demo: bool = False
    hosts: list[str] = Field(default_factory=list)
    started_at: str | None = None
    finished_at: str | None = None
    exit_code: int | None = None
    interrupted: str | None = None
    """Why the run stopped early ("SIGTERM during stage ofed on 2 host(s)"); None when it ran to its end."""


def atomic_write(path: Path, text: str | bytes, *, durable: bool = True) -> None:
    """Write ``text`` so that a crash at any moment leaves either the old or the new file, never a mix.

    The rename alone makes that true when the wizard is killed (the kernel keeps the new file). ``durable`` also
    fsyncs it so it survives a power loss of the control machine; that costs milliseconds per write on a busy disk,
    and it blocks the event loop, so records that a later run re-reads from the hosts anyway skip it."""
    with writing_state(state_dir_of(path), path):
        path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
        fd, temp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
        try:
            os.fchmod(fd, 0o600)
            # bytes are written as they are: a caller with megabytes of UTF-8 JSON saves an encoded copy of it
            with os.fdopen(fd, "wb") as handle:
                handle.write(text.encode("utf-8") if isinstance(text, str) else text)
                handle.flush()
                if durable:
                    os.fsync(handle.fileno())
            os.replace(temp, path)
        except BaseException:
            try:
                os.unlink(temp)  # a full or read-only disk leaves no temp file behind, and the old file as it was
            except OSError:
                pass
            raise


# Folders of a state directory (see the module docstring); a file in one of them belongs to the folder above.
_STATE_FOLDERS = frozenset({"hosts", "facts", "logs", "probes", "lab"})


def state_dir_of(path: Path) -> Path:
    """The state directory a state file lives in."""
    return path.parent.parent if path.parent.name in _STATE_FOLDERS else path.parent


def write_error(state_dir: Path, exc: OSError, path: Path | None = None) -> StateError:
    """One line for a write the state directory refused: where, the OS reason and its code, and what to do."""
    code = errno.errorcode.get(exc.errno or 0, "")
    reason = f"{exc.strerror or exc} ({code})" if code else str(exc.strerror or exc)
    what = ""
    if path is not None:
        what = f", saving {path.relative_to(state_dir) if path.is_relative_to(state_dir) else path}"
    return StateError(
        f"cannot write to the state directory {state_dir}: {reason}{what}; what was saved before is intact and "
        "no change was started without its record - free space or make it writable (or use another --state-dir), "
        "then run the same command again to resume"
    )


@contextlib.contextmanager
def writing_state(state_dir: Path, path: Path | None = None) -> Iterator[None]:
    """Turns an OS error of a write into the StateError that ends the run with one line (exit 2)."""
    try:
        yield
    except OSError as exc:
        raise write_error(state_dir, exc, path) from None


class StateStore:
    """Reads and writes one cluster's state directory."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self._hosts: dict[str, HostRecord] = {}

    @property
    def logs_dir(self) -> Path:
        return self.root / "logs"

    def exists(self) -> bool:
        return (self.root / "run.json").exists()

    # -- run ----------------------------------------------------------------------------------------------
    def load_run(self) -> RunRecord | None:
        data = self._read(self.root / "run.json")
        if data is None:
            return None
        return self._validate(RunRecord, data, "run.json")

    def save_run(self, record: RunRecord) -> None:
        atomic_write(self.root / "run.json", record.model_dump_json(indent=2))

    # -- hosts --------------------------------------------------------------------------------------------
    def host(self, name: str) -> HostRecord:
        """The host's record, loaded from disk the first time."""
        if name not in self._hosts:
            data = self._read(self._host_path(name))
            record = self._validate(HostRecord, data, f"hosts/{name}.json") if data else HostRecord(host=name)
            self._hosts[name] = record
        return self._hosts[name]

    def stage_status(self, name: str, stage: str) -> Status:
        """A stage's status on a host, without loading (and keeping) the host's whole record: asking it of every
        host of a 1,024-host fleet held 160 MiB of records that nothing else read."""
        if name in self._hosts:
            return self._hosts[name].stage(stage).status
        data = self._read(self._host_path(name))
        if not data:
            return "pending"
        statuses = self._validate(_Statuses, data, f"hosts/{name}.json")  # host()'s checks: version, then shape
        return statuses.stages.get(stage, _StageStatus()).status

    def save_host(self, name: str, *, durable: bool = True) -> None:
        """``durable=False`` for status-only saves: a record lost to a power cut is re-verified on the hosts."""
        record = self.host(name)
        record.updated_at = now()
        atomic_write(self._host_path(name), record.model_dump_json(indent=1), durable=durable)

    def host_names(self) -> list[str]:
        folder = self.root / "hosts"
        if not folder.is_dir():
            return []
        return sorted(p.stem for p in folder.glob("*.json"))

    # -- facts --------------------------------------------------------------------------------------------
    def load_facts(self, name: str) -> dict[str, Any]:
        return self._read(self.root / "facts" / f"{name}.json") or {}

    def save_facts(self, name: str, facts: dict[str, Any]) -> None:
        # Facts are read from the hosts again by every run: a power cut may lose them, never corrupt them.
        text = json.dumps(facts, indent=1, sort_keys=True)
        atomic_write(self.root / "facts" / f"{name}.json", text, durable=False)

    # -- helpers ------------------------------------------------------------------------------------------
    def _host_path(self, name: str) -> Path:
        return self.root / "hosts" / f"{name}.json"

    def _read(self, path: Path) -> Any:
        try:
            text = path.read_text(encoding="utf-8")
        except FileNotFoundError:
            return None
        except OSError as exc:
            raise StateError(f"cannot read {path}: {exc.strerror}") from None
        try:
            return json.loads(text)
        except json.JSONDecodeError as exc:
            raise StateError(f"{path} is not valid JSON ({exc.msg} at line {exc.lineno})") from None

    def _validate(self, model: type[_Model], data: Any, label: str) -> Any:
        version = data.get("schema_version") if isinstance(data, dict) else None
        if version != SCHEMA_VERSION:
            raise StateError(
                f"{self.root / label} has schema version {version!r}; this roce-wizard reads version "
                f"{SCHEMA_VERSION} (use another --state-dir or move the old one away)"
            )
        try:
            return model.model_validate(data)
        except ValidationError as exc:
            raise StateError(
                f"{self.root / label} is not a roce-wizard state file ({exc.errors()[0]['msg']})"
            ) from None
