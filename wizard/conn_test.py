"""Connection test per host before any stage: reachable, authenticated, sudo, operating system."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable
from dataclasses import dataclass

from wizard.executors.base import (
    AuthenticationFailed,
    Executor,
    ExecutorError,
    HostKeyRejected,
    HostUnreachable,
    SudoRefused,
)


@dataclass(slots=True)
class ConnectionReport:
    """What the test found on one host; ``problem`` says what to fix when something is not right."""

    host: str
    reachable: bool = False
    authenticated: bool = False
    sudo: bool = False
    os: str = ""
    problem: str = ""
    seconds: float = 0.0  # how long the test of this host took (connect, login, two commands)

    @property
    def ok(self) -> bool:
        return self.reachable and self.authenticated and self.sudo


def _os_name(os_release: str) -> str:
    for line in os_release.splitlines():
        if line.startswith("PRETTY_NAME="):
            return line.split("=", 1)[1].strip().strip('"')
    return "unknown"


async def check_host(executor: Executor) -> ConnectionReport:
    """Connect, read /etc/os-release and run ``true`` through sudo; never changes anything."""
    report = ConnectionReport(executor.name)
    try:
        await executor.connect()
        report.reachable = report.authenticated = True
        report.os = _os_name((await executor.run(["cat", "/etc/os-release"], timeout_s=20)).stdout)
        await executor.ensure_sudo()  # sudo -n true (or the password, once): the same proof every stage relies on
        report.sudo = True
    except (AuthenticationFailed, HostKeyRejected) as exc:
        report.reachable = True
        report.problem = exc.detail
    except HostUnreachable as exc:
        report.problem = exc.detail
    except SudoRefused as exc:
        report.reachable = report.authenticated = True
        report.problem = exc.detail
    except ExecutorError as exc:
        report.problem = exc.detail
    return report


async def check_hosts(
    executors: dict[str, Executor],
    limit: int = 64,
    on_report: Callable[[ConnectionReport], None] | None = None,
    close_after: bool = False,
) -> dict[str, ConnectionReport]:
    """Test every host, ``limit`` at a time; one host failing never stops the others, and each report is handed
    to ``on_report`` as soon as it is known (a slow host holds up nobody's line). ``close_after`` ends each
    host's connection once it is tested."""
    gate = asyncio.Semaphore(limit)

    async def one(executor: Executor) -> ConnectionReport:
        async with gate:
            started = time.monotonic()
            report = await check_host(executor)
            report.seconds = time.monotonic() - started
            if close_after:  # a check of 1,000 hosts need not keep 1,000 sessions open until the last one answers
                await executor.close()
            if on_report is not None:
                on_report(report)
            return report

    reports = await asyncio.gather(*(one(e) for e in executors.values()))
    return {r.host: r for r in reports}
