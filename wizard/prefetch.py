"""One round trip per host per stage: a stage's read-only probes are fetched in one batch before its probe code
runs, and the probe code's ``run``/``read_file`` calls are answered from that batch.

Which commands go in the batch is data, decided by the engine, not by each stage:
- what the stage declares up front (``Step.prefetch``: commands that depend on nothing but the answers and the
  facts of earlier stages), and
- what the stage's probe ran on hosts before (the probe log kept in ``<state>/probes/<stage>.json``): commands
  that depend on an earlier probe's output (a device name read from sysfs, a netdev found by lspci) cannot be
  declared before the host is read once; after one read they are known, so every later read of any host of the
  cluster, and every re-run, is one exec.
A command that is not in the batch still runs, as its own exec (a second round trip), and the host log says which
and why. A command the probe runs a second time is never answered from the batch: a repeat means the stage wants a
fresh reading (counters read twice to see them move).
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from wizard.executors.base import CommandResult, Executor, SudoRefused, render_command
from wizard.state import atomic_write

Probe = tuple[str, bool]  # (rendered command line, run with sudo)
MAX_LEARNED = 600  # per stage: a bound on what a pathological stage could make every host run


class Prefetched:
    """An executor whose first run of each batched command is answered from the batch; everything else (repeats,
    misses, writes, files, reboots) goes to the real executor."""

    def __init__(self, inner: Executor, fetched: dict[Probe, CommandResult]) -> None:
        self.inner = inner
        self.name = inner.name
        self._fetched = dict(fetched)
        self.calls: list[Probe] = []  # every command the probe ran, in order (what the next batch fetches)
        self.misses: list[str] = []  # commands that cost a round trip of their own

    def __getattr__(self, attr: str) -> Any:
        return getattr(self.inner, attr)

    async def run(
        self,
        argv: Sequence[str] | str,
        *,
        sudo: bool = False,
        input: str | None = None,
        timeout_s: float | None = None,
        on_line: Any = None,
    ) -> CommandResult:
        key = (render_command(argv), sudo)
        if input is None:
            self.calls.append(key)
            hit = self._fetched.pop(key, None)
            if hit is not None:
                if on_line:
                    for stream, text in (("stdout", hit.stdout), ("stderr", hit.stderr)):
                        for line in text.splitlines() if text else []:
                            on_line(stream, line)
                return hit
            self.misses.append(key[0])
        return await self.inner.run(argv, sudo=sudo, input=input, timeout_s=timeout_s, on_line=on_line)

    async def read_file(self, path: str, *, sudo: bool = False) -> str | None:
        """A batched ``cat`` answers it as SshExecutor.read_file would; anything else is the executor's own read."""
        key = (render_command(["cat", "--", path]), sudo)
        self.calls.append(key)
        result = self._fetched.pop(key, None)
        if result is not None and result.ok:
            return result.raw_stdout
        if result is not None and "No such file" in result.stderr:
            return None
        # not batched, or a failure the executor's own read knows how to report (permissions, a lost link)
        self.misses.append(key[0])
        return await self.inner.read_file(path, sudo=sudo)


async def fetch(executor: Executor, probes: Sequence[Probe]) -> dict[Probe, CommandResult]:
    """Run the probes in one exec per privilege (plain and sudo batches at once). An executor that cannot batch
    (a test double) gets nothing fetched: the probe runs its commands itself, exactly as before."""
    run_batch = getattr(executor, "run_batch", None)
    if run_batch is None:
        return {}
    unique = list(dict.fromkeys(probes))
    groups = {sudo: [c for c, s in unique if s == sudo] for sudo in (False, True)}
    groups = {sudo: g for sudo, g in groups.items() if g}
    results = await asyncio.gather(*(run_batch(g, sudo=sudo) for sudo, g in groups.items()), return_exceptions=True)
    out: dict[Probe, CommandResult] = {}
    for (sudo, group), res in zip(groups.items(), results, strict=True):
        if isinstance(res, SudoRefused):
            # the probe meets the same refusal on its own sudo command and reports it the way the stage always
            # has (a check naming the cause), so nothing is fetched for this group
            continue
        if isinstance(res, BaseException):
            raise res
        out.update({(c, sudo): r for c, r in zip(group, res, strict=True)})
    return out


class ProbeLog:
    """What each stage's probe ran, kept with the state so the next read of any host is one exec."""

    def __init__(self, root: Path) -> None:
        self.folder = root / "probes"
        self._cache: dict[str, list[Probe]] = {}

    def learned(self, stage: str) -> list[Probe]:
        if stage not in self._cache:
            path = self.folder / f"{stage}.json"
            try:
                data = json.loads(path.read_text(encoding="utf-8"))
                self._cache[stage] = [(str(c), bool(s)) for c, s in data if isinstance(c, str)]
            except (OSError, ValueError, TypeError):
                self._cache[stage] = []  # no log yet, or a damaged one: it is only an optimisation
        return self._cache[stage]

    def remember(self, stage: str, calls: Sequence[Probe]) -> None:
        """Add what a probe ran (first runs only); saved only when something new was learned."""
        known = self.learned(stage)
        first = list(dict.fromkeys(calls))
        new = [c for c in first if c not in known]
        if not new or len(known) >= MAX_LEARNED:
            return
        known.extend(new[: MAX_LEARNED - len(known)])
        atomic_write(self.folder / f"{stage}.json", json.dumps(known, indent=0))
