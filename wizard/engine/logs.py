"""Per-host log files of everything run and printed, with secrets redacted before anything is written."""

from __future__ import annotations

import contextlib
import time
from collections.abc import Iterator
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
    """Appends to ``logs/<host>.log``; files are opened lazily and kept open for the run.

    Each command's end and every message is flushed at once; output lines are flushed once per event-loop turn
    (a batch of probes delivers thousands of lines in one turn: a write(2) per line cost more than the SSH work).
    """

    def __init__(self, folder: Path, redact: Redactor) -> None:
        self.folder = folder
        self.redact = redact
        self._files: dict[str, IO[str]] = {}
        self._unflushed: set[str] = set()
        self._flush_on: object = None  # the loop a flush is scheduled on
        self._stamp_second = -1
        self._stamp_text = ""
        self.error: Exception | None = None  # the state directory refused a write (full or read-only)

    def path(self, host: str) -> Path:
        return self.folder / f"{host}.log"

    def _file(self, host: str) -> IO[str]:
        if self.error is not None:  # raised again: a flush that failed between calls must still end the run
            raise self.error
        handle = self._files.get(host)
        if handle is None:
            with self._writing():
                self.folder.mkdir(parents=True, exist_ok=True, mode=0o700)
                handle = self.path(host).open("a", encoding="utf-8")
                self.path(host).chmod(0o600)
            self._files[host] = handle
        return handle

    @contextlib.contextmanager
    def _writing(self) -> Iterator[None]:
        """A full or read-only state directory becomes the one-line StateError that ends the run."""
        from wizard.engine.state import write_error

        try:
            yield
        except OSError as exc:
            self.error = write_error(self.folder.parent, exc, self.folder)
            raise self.error from None

    def _stamp(self) -> str:
        second = int(time.time())
        if second != self._stamp_second:  # strftime once a second, not once a line
            self._stamp_second, self._stamp_text = second, time.strftime("%H:%M:%S", time.gmtime(second))
        return self._stamp_text

    def _append(self, host: str, text: str) -> IO[str]:
        handle = self._file(host)
        with self._writing():
            handle.write(f"{self._stamp()} {self.redact(text)}\n")
        return handle

    def write(self, host: str, text: str) -> None:
        handle = self._append(host, text)
        with self._writing():
            handle.flush()

    def command(self, host: str, command: str) -> None:
        self._append(host, f"$ {command}")
        self._flush_soon(host)

    def line(self, host: str, stream: Stream, line: str) -> None:
        self._append(host, ("  | " if stream == "stdout" else "  ! ") + line)
        self._flush_soon(host)

    def lines(self, host: str, stream: Stream, lines: list[str]) -> None:
        """Many output lines at once: one timestamp, one redaction pass and one write for all of them."""
        prefix = f"{self._stamp()} " + ("  | " if stream == "stdout" else "  ! ")
        text = prefix + ("\n" + prefix).join(lines) + "\n"
        handle = self._file(host)
        with self._writing():
            handle.write(self.redact(text))
        self._flush_soon(host)

    def finished(self, host: str, result: CommandResult | None, error: str | None) -> None:
        if result is not None:
            self.write(host, f"  = exit {result.exit_status} ({result.duration_s:.2f}s)")
        else:
            self.write(host, f"  = failed: {error}")

    def _flush_soon(self, host: str) -> None:
        import asyncio  # already loaded whenever a loop runs; not at import time (start-up of --help)

        self._unflushed.add(host)
        try:
            loop = asyncio.get_running_loop()
        except RuntimeError:  # no loop (a direct call): nothing would flush later
            self._flush()
            return
        if self._flush_on is not loop:  # one flush per turn; a loop that ended before flushing is not waited for
            self._flush_on = loop
            loop.call_soon(self._flush)

    def _flush(self) -> None:
        self._flush_on = None
        try:
            for host in self._unflushed:
                handle = self._files.get(host)
                if handle is not None:
                    handle.flush()
        except OSError as exc:  # a loop callback: kept, and raised by the next write (or by close)
            from wizard.engine.state import write_error

            self.error = self.error or write_error(self.folder.parent, exc, self.folder)
        self._unflushed.clear()

    def close(self) -> None:
        """Close every log; raises the state directory's write error, if any, once all are closed."""
        self._unflushed.clear()
        failed: OSError | None = None
        for handle in self._files.values():
            try:
                handle.close()
            except OSError as exc:  # the last buffered lines did not fit
                failed = failed or exc
        self._files.clear()
        if self.error is None and failed is not None:
            from wizard.engine.state import write_error

            self.error = write_error(self.folder.parent, failed, self.folder)
        if self.error is not None:
            raise self.error
