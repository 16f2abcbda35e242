"""The GID tables of one simulated rails host: how long the lab takes to answer the discovery stage's two reads (the
GID slots in use of its eight ports, then their types and netdevs: steps/discovery/gid_read.py), and how long the
wizard takes to parse the answer. Both happen once per host in a
discovery and again in every bwtest, so at 1,024 hosts a millisecond here is a second of the run.

    python -m bench.gid_tables --repeat 20

Prints one JSON line: milliseconds per host for the lab's answer and for the parse, the output's size."""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import time

from bench.tui_common import command_line
from steps.discovery.gid_read import read_gid_text
from wizard.lab.cluster import Lab
from wizard.lab.rails_plan import host_names
from wizard.parsers.rdma_gids import parse_sysfs_gids


async def measure(repeat: int) -> dict[str, object]:
    lab = Lab.for_profile("rails-16", host_names(16))
    host = lab.host(host_names(16)[0])

    async def grep(command: str) -> str:
        return (await host.run(command)).stdout

    text = await read_gid_text(grep)  # the first read builds the host's sysfs tree
    started = time.perf_counter()
    for _ in range(repeat):
        text = await read_gid_text(grep)
    lab_ms = (time.perf_counter() - started) / repeat * 1000
    started = time.perf_counter()
    for _ in range(repeat):
        table = parse_sysfs_gids(text)
    parse_ms = (time.perf_counter() - started) / repeat * 1000
    return {
        "command": command_line("gid_tables"),
        "lab_answer_ms": round(lab_ms, 1),
        "parse_ms": round(parse_ms, 2),
        "lines": text.count("\n"),
        "entries": len(table.entries),
        "repeat": repeat,
        "cpus": os.cpu_count(),
    }


def main() -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--repeat", type=int, default=20)
    print(json.dumps(asyncio.run(measure(parser.parse_args().repeat))))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
