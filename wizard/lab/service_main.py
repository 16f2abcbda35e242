"""The main process of a simulated Type=simple service: ExecStartPre=, ExecStart=, Restart= and the start limit.

What systemd does, and what this models (systemd.service(5), systemd.unit(5)):
- ExecStartPre= lines run one after another before ExecStart=; the unit is "activating (start-pre)" meanwhile. A
  failing line (not prefixed "-") fails the start, and Restart= treats that like a failed main process ("The
  service process may be the main service process, but it may also be one of the processes specified with
  ExecStartPre=").
- Restart=always restarts after any exit, a clean exit 0 included; Restart=on-failure only after a non-zero exit.
  This is the difference that matters for vLLM, which exits 0 when a Ray worker of its placement group dies.
- The start limit: more than StartLimitBurst= starts within StartLimitIntervalSec= (defaults 5 in 10 s) and
  systemd gives up: "Start request repeated too quickly", the unit stays failed.
"""

from __future__ import annotations

import asyncio
import re
import time
from typing import TYPE_CHECKING

from wizard.lab import services as sd

if TYPE_CHECKING:
    from wizard.lab.host import SimHost

DEFAULT_BURST = 5
DEFAULT_INTERVAL_S = 10.0


def seconds(text: str, default: float) -> float:
    """A systemd time span such as 15, 15s, 500ms or 30min, in seconds."""
    m = re.fullmatch(r"\s*(\d+(?:\.\d+)?)\s*(ms|s|sec|min|m)?\s*", text or "")
    if not m:
        return default
    return float(m.group(1)) * {"ms": 0.001, "min": 60.0, "m": 60.0}.get(m.group(2) or "s", 1.0)


async def _pre(host: SimHost, unit: sd.Unit, generation: int) -> int | None:
    """Run ExecStartPre=; the failing status, 0 when all passed, None when the unit was stopped meanwhile."""
    rt = sd.runtime(host, unit.name)
    lines = unit.all("Service", "ExecStartPre")
    if lines:
        rt.state, rt.sub = "activating", "start-pre"
    for line in lines:
        status = await sd.run_exec(host, unit, line)
        if rt.generation != generation:
            return None
        if status != 0 and not line.startswith("-"):
            host.journal_log(unit.name, f"{unit.name}: Control process exited, code=exited, status={status}/FAILURE")
            return status
    rt.state, rt.sub = "active", "running"
    return 0


async def run_simple(host: SimHost, unit: sd.Unit, line: str, generation: int, started: asyncio.Event) -> None:
    """Run the service until it stops for good, restarting it as its Restart= and start limit say."""
    policy = unit.get("Service", "Restart", "no")
    delay = seconds(unit.get("Service", "RestartSec"), 0.1)
    burst = int(unit.get("Unit", "StartLimitBurst", str(DEFAULT_BURST)) or DEFAULT_BURST)
    interval = seconds(unit.get("Unit", "StartLimitIntervalSec"), DEFAULT_INTERVAL_S)
    starts: list[float] = [0.0]  # simulated seconds of each start
    clock = time.monotonic()
    rt = sd.runtime(host, unit.name)
    while True:
        status = await _pre(host, unit, generation)
        if status is None:
            started.set()
            return
        started.set()
        if status == 0:
            if unit.all("Service", "ExecStartPre"):
                host.journal_log(unit.name, f"Started {unit.description}.")
            status = await sd.run_exec(host, unit, line)
        if rt.generation != generation:
            return  # stopped or restarted meanwhile
        again = policy == "always" or (policy in ("on-failure", "on-abnormal", "on-abort") and status != 0)
        now = (time.monotonic() - clock) / max(host.time_scale, 1e-6) + delay
        recent = [t for t in starts if now - t < interval]
        code = "status=0/SUCCESS" if status == 0 else f"status={status}/FAILURE"
        if not again or len(recent) >= burst:
            if status == 0 and not again:
                rt.state, rt.sub, rt.status = "inactive", "dead", 0
                host.journal_log(unit.name, f"{unit.name}: Deactivated successfully.")
            else:
                rt.state, rt.sub, rt.status = "failed", "failed", status or 1
                host.journal_log(unit.name, f"{unit.name}: Main process exited, code=exited, {code}")
                if again:
                    host.journal_log(unit.name, f"{unit.name}: Start request repeated too quickly.")
                host.journal_log(unit.name, f"{unit.name}: Failed with result 'exit-code'.")
            return
        host.journal_log(unit.name, f"{unit.name}: Main process exited, code=exited, {code}")
        rt.state, rt.sub = "activating", "auto-restart"
        await asyncio.sleep(delay * host.time_scale)
        if rt.generation != generation:
            return
        starts.append(now)
        host.journal_log(unit.name, f"{unit.name}: Scheduled restart job, restart counter is at {len(starts) - 1}.")
        host.pid_hint += 17
        rt.pid, rt.since = host.pid_hint, time.time()
        if not unit.all("Service", "ExecStartPre"):
            rt.state, rt.sub = "active", "running"
            host.journal_log(unit.name, f"Started {unit.description}.")
