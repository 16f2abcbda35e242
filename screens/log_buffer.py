"""Bounded per-host log buffers between the runner and the log panes (full logs are on disk).

The panes show what was run and how it ended; a command's bulky output (an ``ethtool -S`` dump is 1,600 lines per
port, a discovery batch tens of thousands per host) is folded into one line after its first few lines, so the
commands stay in view. Every line still reaches ``logs/<host>.log``: ``L`` opens it.
"""

from __future__ import annotations

from collections import deque

DEFAULT_KEEP = 2000
TOTAL_KEEP = 200_000
"""Lines kept over all hosts: 1,000 hosts keep 200 lines each (about 25 MiB), not 2,000 (the full logs are on disk)."""
MIN_KEEP = 100
OUTPUT = "  "  # how the app indents a command's output lines ("$ cmd" above them, "  = exit 1" after a failure)
OUTCOME = "  = "
HEAD = 6  # output lines of one command shown before the rest is folded
SLACK = 2  # a command with at most HEAD + SLACK lines shows them all: folding 1 line would hide nothing


def fold_line(hidden: int) -> str:
    """The line that stands for a command's folded output."""
    return f"{OUTPUT}… {hidden:,} more line{'s' if hidden != 1 else ''} of output (L: full log)"


def is_output(line: str) -> bool:
    return line.startswith(OUTPUT) and not line.startswith(OUTCOME)


class _Block:
    """The output of the command a host is running: how many lines came, and the few held back."""

    __slots__ = ("held", "hidden", "seen", "quiet_at")

    def __init__(self) -> None:
        self.seen = 0  # output lines since the command started
        self.held: list[str] = []  # lines HEAD+1 .. HEAD+SLACK, shown only if the output ends there
        self.hidden = 0  # lines folded and not yet stood for by a fold line (held lines count once folding starts)
        self.quiet_at = -1  # ``hidden`` at the last drain: unchanged at the next one means the output paused


class LogBuffers:
    """Keeps the last ``keep`` lines per host and the lines not yet shown, drained in batches by a timer.

    ``add`` is called for every line; it only appends, so a flood of lines costs no screen work until the next
    drain. Output lines beyond a command's first HEAD are counted, not kept, and shown as one fold line when the
    command's output ends (its next command, outcome or change line, or a drain after it stopped growing).
    Appending to a deque and swapping the pending dict are atomic under the GIL, so a thread-side producer is safe
    too.
    """

    def __init__(self, keep: int = DEFAULT_KEEP) -> None:
        self.keep = self.base_keep = keep
        self.lines: dict[str, deque[str]] = {}
        self._pending: dict[str, list[str]] = {}
        self._blocks: dict[str, _Block] = {}
        self.ingested = 0
        self.folded = 0  # output lines kept out of the panes (they are in the host logs on disk)

    def add(self, host: str, line: str) -> None:
        self.ingested += 1
        if not is_output(line):
            self._close(host)
            self._keep(host, line)
            return
        block = self._blocks.get(host)
        if block is None:
            block = self._blocks[host] = _Block()
        block.seen += 1
        if block.seen <= HEAD:
            self._keep(host, line)
        elif block.seen <= HEAD + SLACK:
            block.held.append(line)
        else:
            if block.held:  # folding starts: the held lines are folded too
                block.hidden, block.held = len(block.held), []
                self.folded += block.hidden
            block.hidden += 1
            self.folded += 1

    def add_folded(self, host: str, count: int) -> None:
        """``count`` more output lines of the command now printing, known by their number only (an engine process
        sends a long output's first lines, which the pane shows, and how many followed): folded as if added."""
        block = self._blocks.get(host)
        if block is None or block.seen < HEAD + SLACK:  # only ever after the lines shown: add them the usual way
            for _ in range(count):
                self.add(host, OUTPUT)
            return
        self.ingested += count
        block.seen += count
        if block.held:
            block.hidden, block.held = len(block.held), []
            self.folded += block.hidden
        block.hidden += count
        self.folded += count

    def _keep(self, host: str, line: str) -> None:
        self.lines.setdefault(host, deque(maxlen=self.keep)).append(line)
        self._pending.setdefault(host, []).append(line)

    def _close(self, host: str) -> None:
        """The command's output ended: show what was held back, or the fold line."""
        block = self._blocks.pop(host, None)
        if block is None:
            return
        for line in block.held:
            self._keep(host, line)
        if block.hidden:
            self._keep(host, fold_line(block.hidden))

    def drain(self) -> dict[str, list[str]]:
        """Lines added since the last drain, per host (at most ``keep`` per host). Folded output that stopped
        growing since the last drain gets its fold line now, so a pane never waits for the host's next command
        to show it (output that goes on later folds again, under another fold line)."""
        for host, block in self._blocks.items():
            if block.hidden and block.hidden == block.quiet_at:
                self._keep(host, fold_line(block.hidden))
                block.hidden = 0
            block.quiet_at = block.hidden
        pending, self._pending = self._pending, {}
        return {host: lines[-self.keep :] for host, lines in pending.items()}

    def set_host_count(self, hosts: int) -> None:
        """Fewer lines per host when there are many hosts, so the total stays near TOTAL_KEEP."""
        keep = min(self.base_keep, max(MIN_KEEP, TOTAL_KEEP // max(1, hosts)))
        if keep != self.keep:
            self.keep = keep
            self.lines = {host: deque(lines, maxlen=keep) for host, lines in self.lines.items()}

    def tail(self, host: str) -> list[str]:
        """The host's kept lines, with a fold line for output that is still being folded."""
        lines = list(self.lines.get(host, ()))
        block = self._blocks.get(host)
        if block is not None and block.hidden:
            lines.append(fold_line(block.hidden))
        return lines[-self.keep :]
