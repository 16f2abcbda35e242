"""Record a stage's probe on the simulated lab as a table (command -> stdout/stderr/exit), and replay such tables.

    python -m tests.record_probes discovery server1            # bare reference host
    python -m tests.record_probes roce server1 --prepared      # DOCA-OFED, rails and peermem in place

writes ``tests/fixtures/probes/<stage>-<host>.json``: every command the probe ran (``read_file`` as
``cat -- PATH``, as a batch runs it), in order, with its result. ``table_executor`` answers a probe from such a
table with no host at all; a command missing from the table fails the test that fed it.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
from collections.abc import AsyncIterator, Sequence
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

from steps import all_steps
from wizard.answers.model import Answers, load_answers
from wizard.engine.prefetch import Prefetched, Probe, read_file_argv
from wizard.engine.session import production_targets
from wizard.engine.step import ProbeContext, Step
from wizard.executors.base import CommandResult, render_command
from wizard.executors.ssh import SshExecutor

ROOT = Path(__file__).resolve().parents[1]
EXAMPLE = ROOT / "assets" / "answers.example.yaml"
TABLES = ROOT / "tests" / "fixtures" / "probes"


def step(stage: str) -> Step:
    return next(s for s in all_steps() if s.id == stage)


@asynccontextmanager
async def lab_hosts(*, prepared: bool) -> AsyncIterator[tuple[Answers, dict[str, SshExecutor]]]:
    """The reference lab (2 x L20 x 8, 4 ConnectX-4 Lx ports each) with an SSH executor per host, as the answers
    reach it; ``prepared``: as stages ofed, network and gpudirect leave the hosts (see test_nccl_demo.prepare)."""
    from tests.steps.test_nccl_demo import prepare
    from wizard.lab import Lab

    answers = load_answers(EXAMPLE)
    lab = Lab.reference([h.name for h in answers.hosts], mgmt_addresses={h.name: h.address for h in answers.hosts})
    lab.time_scale = 0.001
    if prepared:
        for index, name in enumerate(lab.names):
            prepare(lab.host(name), index)
    await lab.start()
    executors = {}
    for name, target in production_targets(answers, None).items():
        target.address, target.port = lab.endpoint(name)
        target.identity_file, target.known_hosts = str(lab.client_key_path), str(lab.known_hosts_path)
        executors[name] = SshExecutor(target)
    try:
        yield answers, executors
    finally:
        for ex in executors.values():
            await ex.close()
        await lab.stop()


class Recorder:
    """Passes every call to the host and keeps each command's result (first run only) for the table."""

    def __init__(self, inner: Any) -> None:
        self.inner = inner
        self.name = inner.name
        self.rows: dict[Probe, CommandResult] = {}

    def __getattr__(self, attr: str) -> Any:
        return getattr(self.inner, attr)

    async def run(self, argv: Sequence[str] | str, *, sudo: bool = False, **kwargs: Any) -> CommandResult:
        result = await self.inner.run(argv, sudo=sudo, **kwargs)
        self.rows.setdefault((render_command(argv), sudo), result)
        return result

    async def read_file(self, path: str, *, sudo: bool = False) -> str | None:
        """Recorded as the ``cat -- PATH`` a batch runs for it (a missing file as cat's own failure)."""
        result = await self.inner.run(read_file_argv(path), sudo=sudo)
        self.rows.setdefault((render_command(read_file_argv(path)), sudo), result)
        return await self.inner.read_file(path, sudo=sudo)


def table_rows(rows: dict[Probe, CommandResult]) -> list[dict[str, Any]]:
    return [
        {"command": c, "sudo": s, "exit": r.exit_status, "stdout": r.raw_stdout, "stderr": r.stderr}
        for (c, s), r in rows.items()
    ]


def load_table(path: Path) -> dict[Probe, CommandResult]:
    """A table as the batch ``fetch`` would have returned it."""
    data = json.loads(path.read_text(encoding="utf-8"))
    return {
        (row["command"], row["sudo"]): CommandResult(
            f"sudo {row['command']}" if row["sudo"] else row["command"],
            row["exit"],
            row["stdout"].removesuffix("\n"),
            row["stderr"],
            0.0,
            row["stdout"],
        )
        for row in data["commands"]
    }


class NoHost:
    """The executor behind a table: there is no host, so any command the table does not answer fails."""

    name = "no-host"

    async def run(self, argv: Sequence[str] | str, **_: Any) -> CommandResult:
        raise AssertionError(f"not in the table: {render_command(argv)}")

    async def read_file(self, path: str, **_: Any) -> str | None:
        raise AssertionError(f"not in the table: cat -- {path}")


def table_executor(path: Path) -> Prefetched:
    return Prefetched(NoHost(), load_table(path))  # type: ignore[arg-type]


async def first_read(stage: str, host: str, *, prepared: bool) -> tuple[list[Probe], Prefetched, dict[str, Any]]:
    """A stage's first read of a lab host with nothing learned, as the runner does it: earlier facts (discovery)
    read first, then the stage's declared commands fetched in one batch per privilege and the probe answered from
    them. Returns the declared commands, the reader (``calls``, ``misses``) and the facts the probe returned."""
    from wizard.engine.prefetch import fetch

    async with lab_hosts(prepared=prepared) as (answers, executors):
        entry, ex = next(h for h in answers.hosts if h.name == host), executors[host]
        facts: dict[str, Any] = {}
        if stage != "discovery":
            facts["discovery"] = await step("discovery").probe(ProbeContext(entry, ex, answers, facts))
        ctx = ProbeContext(entry, ex, answers, facts)
        declared = [(render_command(c), sudo) for c, sudo in step(stage).prefetch(ctx)]
        reader = Prefetched(ex, await fetch(ex, declared))
        found = await step(stage).probe(ProbeContext(entry, reader, answers, facts))
    return declared, reader, found


async def record(stage: str, host: str, *, prepared: bool) -> Path:
    async with lab_hosts(prepared=prepared) as (answers, executors):
        entry = next(h for h in answers.hosts if h.name == host)
        facts: dict[str, Any] = {}
        if stage != "discovery":
            facts["discovery"] = await step("discovery").probe(ProbeContext(entry, executors[host], answers, facts))
        recorder = Recorder(executors[host])
        await step(stage).probe(ProbeContext(entry, recorder, answers, facts))  # type: ignore[arg-type]
    path = TABLES / f"{stage}-{host}.json"
    source = "reference lab, " + ("prepared (DOCA-OFED, rails, peermem)" if prepared else "bare host")
    doc = {"stage": stage, "host": host, "source": f"{source}; recorded by tests/record_probes.py"}
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(doc | {"commands": table_rows(recorder.rows)}, indent=1) + "\n", encoding="utf-8")
    return path


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("stage")
    parser.add_argument("host")
    parser.add_argument("--prepared", action="store_true", help="hosts as stages ofed, network, gpudirect leave them")
    args = parser.parse_args(argv)
    print(asyncio.run(record(args.stage, args.host, prepared=args.prepared)))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
