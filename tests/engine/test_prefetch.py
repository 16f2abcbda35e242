"""One round trip per host per stage: declared and learned probes are fetched in one batch; the probe code is
answered from it, repeats and misses still reach the host, and the next read of any host needs no extra exec."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from wizard.engine.prefetch import Prefetched, ProbeLog, fetch
from wizard.executors.base import CommandResult, render_command


class CountingHost:
    """A host double that counts execs; ``run_batch`` is one exec for many commands."""

    name = "h1"

    def __init__(self) -> None:
        self.execs = 0
        self.counter = 0

    def _answer(self, command: str) -> CommandResult:
        if command.startswith("cat -- /missing"):
            return CommandResult(command, 1, "", "cat: /missing: No such file or directory", 0.0)
        if command == "read-counter":
            self.counter += 1
            return CommandResult(command, 0, str(self.counter), "", 0.0, f"{self.counter}\n")
        return CommandResult(command, 0, f"out of {command}", "", 0.0, f"out of {command}\n")

    async def run(self, argv: Any, *, sudo: bool = False, **kwargs: Any) -> CommandResult:
        self.execs += 1
        return self._answer(render_command(argv))

    async def read_file(self, path: str, *, sudo: bool = False) -> str | None:
        result = await self.run(["cat", "--", path])
        return result.raw_stdout if result.ok else None

    async def run_batch(self, commands: list[Any], *, sudo: bool = False) -> list[CommandResult]:
        self.execs += 1
        return [self._answer(render_command(c)) for c in commands]


async def probe(ex: Any) -> dict[str, Any]:
    """A stage's probe as stages write them: sequential calls, one depending on an earlier answer."""
    first = await ex.run(["uname", "-r"])
    second = await ex.run(["ethtool", first.stdout.split()[-1]])  # depends on the first answer
    missing = await ex.read_file("/missing")
    before = await ex.run("read-counter")
    after = await ex.run("read-counter")  # a second reading must be fresh, never the batched one
    return {"uname": first.stdout, "ethtool": second.stdout, "missing": missing, "moved": before.stdout != after.stdout}


async def test_the_first_read_learns_and_the_next_read_is_one_exec(tmp_path: Path) -> None:
    log = ProbeLog(tmp_path)
    host = CountingHost()
    reader = Prefetched(host, await fetch(host, log.learned("discovery")))  # type: ignore[arg-type]
    first = await probe(reader)
    log.remember("discovery", reader.calls)
    assert host.execs == 5 and len(reader.misses) == 5  # nothing known yet: one exec per probe

    host = CountingHost()
    again = ProbeLog(tmp_path)  # a new run reads the saved log
    reader = Prefetched(host, await fetch(host, again.learned("discovery")))  # type: ignore[arg-type]
    second = await probe(reader)
    assert second == first
    assert host.execs == 2, "one batch, plus the repeated counter read that must be fresh"
    assert reader.misses == ["read-counter"]
    assert second["moved"] is True and second["missing"] is None


async def test_sudo_and_plain_probes_are_fetched_apart_and_answered_apart() -> None:
    host = CountingHost()
    fetched = await fetch(host, [("id -u", False), ("id -u", True), ("id -u", False)])  # type: ignore[arg-type]
    assert sorted(fetched) == [("id -u", False), ("id -u", True)]
    assert host.execs == 2


def test_a_damaged_probe_log_is_ignored_not_fatal(tmp_path: Path) -> None:
    (tmp_path / "probes").mkdir()
    (tmp_path / "probes" / "roce.json").write_text("{not json")
    assert ProbeLog(tmp_path).learned("roce") == []


async def test_a_dry_run_finds_the_commands_that_depend_on_the_first_batch_so_a_fresh_read_is_two_batches() -> None:
    from wizard.engine.prefetch import fetch_dependents

    host = CountingHost()
    fetched = await fetch(host, [("uname -r", False)])  # type: ignore[arg-type]  # what a stage can declare
    extra, complete = await fetch_dependents(host, fetched, probe)  # type: ignore[arg-type]
    assert complete is None, "the probe reads a counter twice: the second reading must come from the host"
    assert extra == 1 and host.execs == 2  # the declared batch, then one batch of what depended on it
    assert ("ethtool -r", False) in fetched  # its argument came from the first batch's answer
    reader = Prefetched(host, fetched)  # type: ignore[arg-type]
    facts = await probe(reader)
    assert reader.misses == ["read-counter"]  # only the fresh second reading, as the stage wants
    assert facts["ethtool"] == "out of ethtool -r" and facts["moved"] is True


class TwoStepStage:
    """A stage whose second probe depends on the first, and which adds to the facts it was given."""

    id = "discovery"
    dependent_probes: dict[str, str] = {}

    def __init__(self) -> None:
        self.parsed = 0  # how many times the probe's code (its parsing) ran on the control machine

    def prefetch(self, ctx: Any) -> list[tuple[list[str], bool]]:
        return [(["uname", "-r"], False)]

    async def probe(self, ctx: Any) -> dict[str, Any]:
        self.parsed += 1
        first = await ctx.executor.run(["uname", "-r"])
        second = await ctx.executor.run(["ethtool", first.stdout.split()[-1]])
        ctx.facts["earlier"] = "re-read"  # as ofed re-reads discovery after an install
        return {"ethtool": second.stdout}


async def test_a_dry_run_answered_entirely_from_the_batches_is_the_read_itself(tmp_path: Path) -> None:
    from wizard.engine.prefetch import read_stage
    from wizard.engine.step import ProbeContext

    host, stage = CountingHost(), TwoStepStage()
    facts: dict[str, Any] = {"discovery": {"old": True}}
    log = ProbeLog(tmp_path)
    found, reader = await read_stage(stage, ProbeContext(None, host, None, facts), log)  # type: ignore[arg-type]
    assert found == {"ethtool": "out of ethtool -r"}
    assert host.execs == 2, "the declared batch and the batch of what depended on it"
    assert stage.parsed == 2, "two dry runs (the second answered everything); no third run of the same parsing"
    assert facts == {"discovery": {"old": True}, "earlier": "re-read"}, "what the probe added reaches the facts"
    assert reader.misses == [] and ("ethtool -r", False) in reader.calls
    assert ("ethtool -r", False) in log.learned("discovery")
    # The next read knows everything up front: one batch, one run of the probe's code.
    host2, stage2 = CountingHost(), TwoStepStage()
    again, _ = await read_stage(stage2, ProbeContext(None, host2, None, {}), log)  # type: ignore[arg-type]
    assert again == found and host2.execs == 1 and stage2.parsed == 1
