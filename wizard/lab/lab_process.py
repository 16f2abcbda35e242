"""The wizard's side of a simulated lab run in a child process (wizard/lab/child.py says why and the protocol).

It offers what the demo uses of an in-process Lab: each host's endpoint, the client key and known_hosts, the hosts
booted from saved disks, a disk that could not be saved, and stop(). The hosts are reached over SSH on 127.0.0.1
either way, through the same executor as production.
"""

from __future__ import annotations

import asyncio
import json
import os
import sys
from collections.abc import Mapping, Sequence
from pathlib import Path

from wizard.errors import UsageError

START_TIMEOUT_S = 600.0  # a 1,024-host lab restoring its disks takes about a minute on a loaded 2-core machine
STOP_TIMEOUT_S = 60.0


def build_error(message: str) -> UsageError:
    """A lab that could not be built, as the usage error the wizard shows (in-process or in the child alike)."""
    return UsageError(message if "--switch-os" in message else f"--fault: {message}")


class LabProcessError(RuntimeError):
    """The child lab did not start (its own one-line message)."""


class LabProcess:
    def __init__(
        self,
        profile: str,
        names: Sequence[str],
        *,
        mgmt_addresses: Mapping[str, str] | None = None,
        faults: Sequence[str] = (),
        switch_os: str | None = None,
        switch_os_of: Mapping[str, str] | None = None,
        time_scale: float = 1.0,
    ) -> None:
        self.spec = {
            "profile": profile,
            "names": list(names),
            "mgmt": dict(mgmt_addresses or {}),
            "faults": list(faults),
            "switch_os": switch_os,
            "switch_os_of": dict(switch_os_of or {}),
            "time_scale": time_scale,
            "disks": None,
        }
        self.process: asyncio.subprocess.Process | None = None
        self.booted: list[str] = []
        self.disk_error: OSError | None = None
        self.peak_rss_mib: float | None = None
        self.cpu_s: float | None = None  # the lab's own CPU seconds (its shell work for every simulated host)
        self._endpoints: dict[str, tuple[str, int]] = {}
        self._key = self._known = Path()

    async def boot(self, disks: Path | None) -> list[str]:
        """Start the lab, its hosts booted from the disks saved in ``disks`` where there are any; returns those
        hosts. A lab that cannot be built (a bad fault, an unknown profile) raises UsageError with its message."""
        self.spec["disks"] = str(disks) if disks is not None else None
        try:
            await self.start()
        except LabProcessError as exc:
            raise build_error(str(exc)) from None
        return self.booted

    async def start(self) -> None:
        self.process = await asyncio.create_subprocess_exec(
            sys.executable, "-m", "wizard.lab.child",
            stdin=asyncio.subprocess.PIPE, stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE,
            env={**os.environ, "PYTHONUNBUFFERED": "1"},
        )  # fmt: skip
        assert self.process.stdin is not None and self.process.stdout is not None
        self.process.stdin.write((json.dumps(self.spec) + "\n").encode())
        await self.process.stdin.drain()
        try:
            line = await asyncio.wait_for(self.process.stdout.readline(), START_TIMEOUT_S)
        except TimeoutError:
            line = b""
        if not line:
            await self._reap()
            raise LabProcessError(await self._stderr_line() or "the simulated lab's process ended before it listened")
        ready = json.loads(line)
        self._endpoints = {name: (host, int(port)) for name, (host, port) in ready["endpoints"].items()}
        self._key, self._known = Path(ready["client_key"]), Path(ready["known_hosts"])
        self.booted = list(ready["booted"])

    def endpoint(self, name: str) -> tuple[str, int]:
        if name not in self._endpoints:
            raise KeyError(f"{name} has no endpoint (lab not started?)")
        return self._endpoints[name]

    @property
    def client_key_path(self) -> Path:
        return self._key

    @property
    def known_hosts_path(self) -> Path:
        return self._known

    async def stop(self) -> None:
        """Close the child's stdin (it stops its hosts and says how it ended) and wait for it."""
        if self.process is None or self.process.returncode is not None:
            return
        assert self.process.stdin is not None and self.process.stdout is not None
        self.process.stdin.close()
        try:
            line = await asyncio.wait_for(self.process.stdout.readline(), STOP_TIMEOUT_S)
        except TimeoutError:
            line = b""
        if line:
            end = json.loads(line)
            error = end.get("disk_error")
            self.disk_error = OSError(*error) if error else None
            self.peak_rss_mib = end.get("peak_rss_mib")
            self.cpu_s = end.get("cpu_s")
        await self._reap()

    async def _reap(self) -> None:
        assert self.process is not None
        try:
            await asyncio.wait_for(self.process.wait(), STOP_TIMEOUT_S)
        except TimeoutError:
            self.process.kill()
            await self.process.wait()

    async def _stderr_line(self) -> str:
        assert self.process is not None and self.process.stderr is not None
        text = (await self.process.stderr.read()).decode(errors="replace").strip()
        return text.splitlines()[-1] if text else ""
