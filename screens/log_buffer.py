"""Bounded per-host log buffers between the runner and the log panes (full logs are on disk)."""

from __future__ import annotations

from collections import deque

DEFAULT_KEEP = 2000
TOTAL_KEEP = 200_000
"""Lines kept over all hosts: 1,000 hosts keep 200 lines each (about 25 MiB), not 2,000 (the full logs are on disk)."""
MIN_KEEP = 100


class LogBuffers:
    """Keeps the last ``keep`` lines per host and the lines not yet shown, drained in batches by a timer.

    ``add`` is called for every output line; it only appends, so a flood of lines costs no screen work until
    the next drain. Appending to a deque and swapping the pending dict are atomic under the GIL, so a
    thread-side producer is safe too.
    """

    def __init__(self, keep: int = DEFAULT_KEEP) -> None:
        self.keep = self.base_keep = keep
        self.lines: dict[str, deque[str]] = {}
        self._pending: dict[str, list[str]] = {}
        self.ingested = 0

    def add(self, host: str, line: str) -> None:
        self.lines.setdefault(host, deque(maxlen=self.keep)).append(line)
        self._pending.setdefault(host, []).append(line)
        self.ingested += 1

    def drain(self) -> dict[str, list[str]]:
        """Lines added since the last drain, per host (at most ``keep`` per host)."""
        pending, self._pending = self._pending, {}
        return {host: lines[-self.keep :] for host, lines in pending.items()}

    def set_host_count(self, hosts: int) -> None:
        """Fewer lines per host when there are many hosts, so the total stays near TOTAL_KEEP."""
        keep = min(self.base_keep, max(MIN_KEEP, TOTAL_KEEP // max(1, hosts)))
        if keep != self.keep:
            self.keep = keep
            self.lines = {host: deque(lines, maxlen=keep) for host, lines in self.lines.items()}

    def tail(self, host: str) -> list[str]:
        return list(self.lines.get(host, ()))
