"""Benchmark: the simulated lab's memory and start time at the size of a rails-N profile.

Builds the Lab object of ``--profile`` (hosts, switches, the fabric) and starts it (every host's units and one SSH
listener per host on 127.0.0.1), then prints ONE JSON line:

- hosts: how many simulated hosts; switches: leaves, spines and the management switch;
- rss_mib: the process's resident memory once started (VmRSS), and rss_before_mib before anything was built;
- build_s: seconds to build the Lab object; start_s: seconds for ``await lab.start()``.

    python -m bench.lab_memory --profile rails-1024

Goal: well under 2 GiB at 1,024 hosts (a fleet-validation run keeps the lab, the engine and the TUI on one machine).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
import time
from pathlib import Path

if __package__ in (None, ""):  # run as a script: bench/ is on the path, not the repository root
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))


def rss_mib() -> float:
    """This process's resident memory now (VmRSS of /proc/self/status)."""
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    return 0.0


async def measure(profile: str) -> dict[str, object]:
    from wizard.answers.model import load_answers
    from wizard.answers.profiles import demo_answers
    from wizard.lab import Lab

    answers = load_answers(demo_answers(profile))  # the hosts and addresses the demo gives the lab
    before = rss_mib()
    started = time.perf_counter()
    lab = Lab.for_profile(
        profile, [h.name for h in answers.hosts], mgmt_addresses={h.name: h.address for h in answers.hosts}
    )
    built = time.perf_counter()
    await lab.start()
    up = time.perf_counter()
    try:
        switches = lab.fabric.switches
        return {
            "profile": profile,
            "hosts": len(lab.names),
            "switches": len(switches.switches) if switches is not None else 0,
            "rss_before_mib": round(before, 1),
            "rss_mib": round(rss_mib(), 1),
            "build_s": round(built - started, 2),
            "start_s": round(up - built, 2),
        }
    finally:
        await lab.stop()


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m bench.lab_memory", description=__doc__.splitlines()[0])
    p.add_argument("--profile", default="rails-1024", help="a demo profile (default rails-1024)")
    args = p.parse_args(argv)
    print(json.dumps(asyncio.run(measure(args.profile))), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
