"""The simulated lab in a process of its own: ``python -m wizard.lab.child`` (started by wizard/lab/lab_process.py).

A large demo cluster (hundreds of simulated hosts) is mostly the lab's work: every command a host runs is parsed and
interpreted by the lab's shell, in Python. In the wizard's own process that work and the wizard's share one core
and one heap. In a child process the lab gets the second core, and the wizard's memory and time are its own, which
is what a benchmark of the wizard must measure (bench/fleet_quick.py).

The protocol, one JSON object per line:
- stdin, first line: what to build (profile, host names, management addresses, faults, switch OS, clocks, disks);
- stdout, once the hosts listen: their endpoints, the client key and known_hosts, the hosts booted from disks;
- stdin closed (the wizard is done, or died) or SIGTERM: the lab stops;
- stdout, last line: a disk that could not be saved, and the lab's peak memory.
Errors before the lab listens are one line on stderr and exit status 2.
"""

from __future__ import annotations

import asyncio
import gc
import json
import resource
import signal
import sys
from pathlib import Path
from typing import Any


def _say(message: dict[str, Any]) -> None:
    sys.stdout.write(json.dumps(message) + "\n")
    sys.stdout.flush()


def _build(spec: dict[str, Any]) -> Any:
    from wizard.lab import Lab, parse_fault

    lab = Lab.for_profile(
        spec["profile"],
        spec["names"],
        mgmt_addresses=spec.get("mgmt") or None,
        faults=[parse_fault(text) for text in spec.get("faults", [])],
        switch_os=spec.get("switch_os"),
        switch_os_of=spec.get("switch_os_of") or None,
    )
    lab.time_scale = float(spec.get("time_scale", 1.0))
    lab.reboot_seconds = max(0.2, lab.reboot_seconds * lab.time_scale)
    return lab


async def _stdin_closed() -> None:
    """Wait until the wizard closes our stdin (it is done) or goes away (the pipe breaks)."""
    loop = asyncio.get_running_loop()
    reader = asyncio.StreamReader()
    await loop.connect_read_pipe(lambda: asyncio.StreamReaderProtocol(reader), sys.stdin)
    while await reader.read(4096):
        pass


async def serve(spec: dict[str, Any]) -> int:
    try:
        lab = _build(spec)
    except (ValueError, KeyError) as exc:
        sys.stderr.write(f"{exc}\n")  # the wizard shows it as the in-process lab's ValueError
        return 2
    booted = lab.use_disks(Path(spec["disks"])) if spec.get("disks") else []
    await lab.start()
    _quiet_collector()
    _say({
        "endpoints": {name: list(lab.endpoint(name)) for name in lab.names},
        "client_key": str(lab.client_key_path),
        "known_hosts": str(lab.known_hosts_path),
        "booted": booted,
    })  # fmt: skip
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGINT, signal.SIGTERM):
        loop.add_signal_handler(sig, stop.set)
    closed = asyncio.ensure_future(_stdin_closed())
    waiting = asyncio.ensure_future(stop.wait())
    await asyncio.wait([closed, waiting], return_when=asyncio.FIRST_COMPLETED)
    closed.cancel()
    waiting.cancel()
    await lab.stop()
    error = lab.disk_error
    usage = resource.getrusage(resource.RUSAGE_SELF)
    _say({
        "disk_error": [error.errno, error.strerror, error.filename] if error is not None else None,
        "peak_rss_mib": round(usage.ru_maxrss / 1024, 1),
        "cpu_s": round(usage.ru_utime + usage.ru_stime, 1),
    })  # fmt: skip
    return 0


def _quiet_collector() -> None:
    """Keep Python's cycle collector off the booted hosts: a full collection walks every object of the process, and a
    booted rails-256 lab is 400 MiB of them. Measured with gc.callbacks on a rails-256 `bwtest --quick`: 34 full
    collections took 30 s of the lab's 75 s of CPU after boot. Frozen after boot (gc.freeze: the collector skips what
    exists now) and with the thresholds raised, the 1,024-host benchmark (bench/fleet_quick.py) read the facts in
    100 s instead of 157 and the lab peaked at 1.5 GiB instead of 1.2: cycles made after boot still die young, in
    the collections of the first two generations, and the rest waits for a rarer full one (with a third threshold
    of 100 instead of 10 the peak was 1.6 GiB)."""
    gc.collect()
    gc.freeze()
    gc.set_threshold(50_000, 20, 10)


def main() -> int:
    from wizard.engine.worker import die_with_parent

    die_with_parent()  # a lab left behind would hold a thousand ports and a core
    line = sys.stdin.readline()
    try:
        spec = json.loads(line)
    except json.JSONDecodeError:
        sys.stderr.write("simulated lab: the first line of stdin must be its JSON spec\n")
        return 2
    return asyncio.run(serve(spec))


if __name__ == "__main__":
    raise SystemExit(main())
