"""Per-host log files of everything run and printed, with secrets redacted before anything is written."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path
from typing import IO

from wizard.executors.base import CommandResult, Stream


class Redactor:
    """Replaces known secret values (sudo password) with asterisks in any text."""

    def __init__(self, secrets: list[str] | None = None) -> None:
        self._secrets = [s for s in (secrets or []) if s]

    def add(self, secret: str | None) -> None:
        if secret:
            self._secrets.append(secret)

    def __call__(self, text: str) -> str:
        for secret in self._secrets:
            text = text.replace(secret, "******")
        return text


class HostLogs:
    """Appends to ``logs/<host>.log``; files are opened lazily and kept open for the run."""

    def __init__(self, folder: Path, redact: Redactor) -> None:
        self.folder = folder
        self.redact = redact
        self._files: dict[str, IO[str]] = {}

    def path(self, host: str) -> Path:
        return self.folder / f"{host}.log"

    def _file(self, host: str) -> IO[str]:
        handle = self._files.get(host)
        if handle is None:
            self.folder.mkdir(parents=True, exist_ok=True, mode=0o700)
            handle = self.path(host).open("a", encoding="utf-8", buffering=1)
            self.path(host).chmod(0o600)
            self._files[host] = handle
        return handle

    def write(self, host: str, text: str) -> None:
        stamp = datetime.now(UTC).strftime("%H:%M:%S")
        self._file(host).write(f"{stamp} {self.redact(text)}\n")

    def command(self, host: str, command: str) -> None:
        self.write(host, f"$ {command}")

    def line(self, host: str, stream: Stream, line: str) -> None:
        self.write(host, ("  | " if stream == "stdout" else "  ! ") + line)

    def finished(self, host: str, result: CommandResult | None, error: str | None) -> None:
        if result is not None:
            self.write(host, f"  = exit {result.exit_status} ({result.duration_s:.2f}s)")
        else:
            self.write(host, f"  = failed: {error}")

    def close(self) -> None:
        for handle in self._files.values():
            handle.close()
        self._files.clear()
