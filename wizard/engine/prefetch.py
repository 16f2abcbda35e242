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
import copy
import fnmatch
import json
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any

from wizard.engine.state import atomic_write
from wizard.executors.base import CommandResult, Executor, ExecutorError, SudoRefused, render_command

Probe = tuple[str, bool]  # (rendered command line, run with sudo)
MAX_LEARNED = 600  # per stage: a bound on what a pathological stage could make every host run


def read_file_argv(path: str) -> list[str]:
    """The command a batch runs for ``read_file(path)`` (what a stage declares to have a file read batched)."""
    return ["cat", "--", path]


class Prefetched:
    """An executor whose first run of each batched command is answered from the batch; everything else (repeats,
    misses, writes, files, reboots) goes to the real executor."""

    def __init__(self, inner: Executor, fetched: dict[Probe, CommandResult]) -> None:
        self.inner = inner
        self.name = inner.name
        self._fetched = dict(fetched)
        self.calls: list[Probe] = []  # every command the probe ran, in order (what the next batch fetches)
        self.misses: list[str] = []  # commands that cost a round trip of their own
        self.missed_keys: list[Probe] = []  # the same, with their sudo flag (what a dry run asks for)

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
            self.missed_keys.append(key)
        return await self.inner.run(argv, sudo=sudo, input=input, timeout_s=timeout_s, on_line=on_line)

    async def read_file(self, path: str, *, sudo: bool = False) -> str | None:
        """A batched ``cat`` answers it as SshExecutor.read_file would; anything else is the executor's own read."""
        key = (render_command(read_file_argv(path)), sudo)
        self.calls.append(key)
        result = self._fetched.pop(key, None)
        if result is not None and result.ok:
            return result.raw_stdout
        if result is not None and "No such file" in result.stderr:
            return None
        # not batched, or a failure the executor's own read knows how to report (permissions, a lost link)
        self.misses.append(key[0])
        self.missed_keys.append(key)
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


def explain_misses(misses: Sequence[str], dependent: Mapping[str, str], *, shown: int = 12) -> str:
    """The misses grouped by what they depend on (the stage's ``dependent_probes``: pattern -> reason), in the
    order they ran; a miss no pattern matches is named as undeclared (the engine learns it for the next reads)."""
    groups: dict[str, list[str]] = {}
    for command in misses:
        why = next((w for p, w in dependent.items() if fnmatch.fnmatchcase(command, p)), "not declared by the stage")
        groups.setdefault(why, []).append(command)
    parts = []
    for why, commands in groups.items():
        more = f" and {len(commands) - shown} more" if len(commands) > shown else ""
        parts.append(f"{why}: {'; '.join(commands[:shown])}{more}")
    return " | ".join(parts)


class _NotYetFetched:
    """The host of a dry run: every command it is asked for fails without leaving the control machine."""

    def __init__(self, name: str) -> None:
        self.name = name
        self.asked = False  # anything reached this host: the dry run's result is not the real one

    async def run(self, argv: Sequence[str] | str, **kwargs: Any) -> CommandResult:
        self.asked = True
        return CommandResult(render_command(argv), 255, "", "roce-wizard: not fetched yet (dry run)", 0.0)

    async def read_file(self, path: str, *, sudo: bool = False) -> str | None:
        self.asked = True
        return None

    def __getattr__(self, attr: str) -> Any:
        self.asked = True
        raise ExecutorError(self.name, f"dry run: {attr} is not available")


async def fetch_dependents(
    executor: Executor,
    fetched: dict[Probe, CommandResult],
    probe: Callable[[Any], Awaitable[Any]],
    *,
    rounds: int = 2,
) -> tuple[int, tuple[Any, Prefetched] | None]:
    """Add to ``fetched`` the commands a probe would run that depend on what it already has: run the probe's code
    against ``fetched`` with every other command failing locally (a dry run; nothing reaches the host), batch what it
    asked for, and repeat while it asks for more, at most ``rounds`` times.

    Returns the number of extra batches and, when the last dry run was answered entirely from ``fetched`` (it asked
    the host for nothing and raised nothing), its result and reader: the probe is deterministic given its answers,
    so that run IS the real read, and running the probe's parsing once more would only cost CPU.

    Why: per-port and per-card reads (``ethtool <netdev>``, ``mlxconfig -d <pci>``) need the port list from the same
    read, so they cannot be declared. The dry run costs CPU on the control machine, not a round trip per command. A
    command asked for because a dry-run answer was missing may be a wrong guess; it is only a wasted read, and the
    real probe still asks the host for anything it did not get."""
    batches = 0
    for _ in range(rounds + 1):
        host = _NotYetFetched(executor.name)
        dry = Prefetched(host, dict(fetched))  # type: ignore[arg-type]
        try:
            found = await probe(dry)
        except Exception:  # noqa: BLE001 - a dry run that trips over a missing answer still says what it asked for
            host.asked = True
        if not host.asked:
            return batches, (found, dry)
        wanted = [key for key in dict.fromkeys(dry.missed_keys) if key not in fetched]
        if not wanted or batches == rounds:
            break
        fetched.update(await fetch(executor, wanted))
        batches += 1
    return batches, None


async def read_stage(step: Any, ctx: Any, log: ProbeLog | None) -> tuple[dict[str, Any], Prefetched]:
    """A stage's probe on one host (``ctx``: a ProbeContext) in as few round trips as it takes: the declared and
    learned commands in one batch, what depends on them in another, then the probe answered from both. Returns the
    facts and the reader (its ``misses`` are what still cost a round trip of their own)."""
    executor = ctx.executor
    declared = [(render_command(argv), sudo) for argv, sudo in step.prefetch(ctx)]
    wanted = declared + (log.learned(step.id) if log is not None else [])
    fetched = await fetch(executor, wanted) if wanted else {}
    if fetched:
        dry_facts: list[dict[str, Any]] = []

        def dry_run(ex: Any) -> Awaitable[Any]:
            # The dry run reads a copy of the earlier stages' facts: a probe may add to them (ofed re-reads discovery)
            dry_facts.append(copy.deepcopy(ctx.facts))
            return step.probe(replace(ctx, executor=ex, facts=dry_facts[-1]))

        _, complete = await fetch_dependents(executor, fetched, dry_run)
        if complete is not None:
            found, dry = complete
            ctx.facts.clear()  # what the probe added to the facts, exactly as a real run would have added it
            ctx.facts.update(dry_facts[-1])
            reader = Prefetched(executor, {})
            reader.calls = dry.calls
            if log is not None:
                log.remember(step.id, reader.calls)
            return found, reader
    reader = Prefetched(executor, fetched)
    found = await step.probe(replace(ctx, executor=reader))
    if log is not None:
        log.remember(step.id, reader.calls)
    return found, reader


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
