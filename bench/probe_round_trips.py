"""Round trips (SSH execs) per host per stage read: a figure that does not depend on machine noise.

Runs the headless wizard in this process against the simulated lab and counts every exec the SSH executor opens
(a batch is one; a command answered from a batch is none), attributed to the stage read (``Runner._read_host``)
that caused it. Execs outside a stage read (applies, cluster probes, connection set-up) are counted as "other".

    python bench/probe_round_trips.py -- --demo --only discovery --state-dir /tmp/rt   # fresh: first read
    python bench/probe_round_trips.py -- --demo --only discovery --state-dir /tmp/rt   # again: learned reads

Everything after ``--`` is passed to ``roce-wizard`` unchanged (``--json`` output is dropped).
"""

from __future__ import annotations

import contextlib
import contextvars
import io
import sys
from collections import Counter
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from wizard.cli import main as cli  # noqa: E402
from wizard.engine.runner import Runner  # noqa: E402
from wizard.executors.ssh import SshExecutor  # noqa: E402

READ: contextvars.ContextVar[str] = contextvars.ContextVar("read", default="other")
EXECS: Counter[tuple[str, str]] = Counter()  # (host, "stage #n") -> execs
READS: Counter[tuple[str, str]] = Counter()  # (host, stage) -> reads so far
WAVES: Counter[tuple[str, str]] = Counter()  # (host, "stage #n") -> round trips (execs in flight together count once)
IN_FLIGHT: Counter[tuple[str, str]] = Counter()


def instrument() -> None:
    exec_ = SshExecutor._exec
    read_host = Runner._read_host

    async def counted_exec(self: SshExecutor, *args: Any, **kwargs: Any) -> Any:
        key = (self.target.name, READ.get())
        EXECS[key] += 1
        # A round trip is a wave of execs in flight together (the plain and the sudo batch go out at once): an exec
        # that starts while none of the same read is running starts a new wave.
        if not IN_FLIGHT[key]:
            WAVES[key] += 1
        IN_FLIGHT[key] += 1
        try:
            return await exec_(self, *args, **kwargs)
        finally:
            IN_FLIGHT[key] -= 1

    async def counted_read(self: Runner, stage: str, host: str) -> Any:
        READS[(host, stage)] += 1
        token = READ.set(f"{stage} #{READS[(host, stage)]}")
        try:
            return await read_host(self, stage, host)
        finally:
            READ.reset(token)

    SshExecutor._exec = counted_exec  # type: ignore[method-assign]
    Runner._read_host = counted_read  # type: ignore[method-assign]


def main(argv: list[str]) -> int:
    instrument()
    with contextlib.redirect_stdout(io.StringIO()):
        code = cli.main(argv)
    hosts = sorted({h for h, _ in EXECS})
    reads = sorted({r for _, r in EXECS}, key=lambda r: (r == "other", r))
    print(f"roce-wizard {' '.join(argv)}  (exit {code})")
    print("execs (round trips) per host")
    print(f"{'read':<18}" + "".join(f"{h:>12}" for h in hosts))
    for read in reads:
        print(f"{read:<18}" + "".join(f"{f'{EXECS[(h, read)]} ({WAVES[(h, read)]})':>12}" for h in hosts))
    return code


if __name__ == "__main__":
    args = sys.argv[1:]
    raise SystemExit(main(args[1:] if args[:1] == ["--"] else args))
