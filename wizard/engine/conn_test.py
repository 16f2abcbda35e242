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
    seconds: float = 0.0  # how long the test of this host took (connect, login, the read)

    @property
    def ok(self) -> bool:
        return self.reachable and self.authenticated and self.sudo


def _os_name(os_release: str) -> str:
    for line in os_release.splitlines():
        if line.startswith("PRETTY_NAME="):
            return line.split("=", 1)[1].strip().strip('"')
    return "unknown"


# Both read-only commands of the test; an executor that can batch runs them in one exec (one SSH channel, one round
# trip per host after login), each still logged as its own command.
OS_RELEASE = ["cat", "/etc/os-release"]
SUDO_PROBE = ["sudo", "-n", "true"]
READ_TIMEOUT_S = 30.0


async def _read(executor: Executor) -> tuple[str, bool]:
    """The host's os-release and whether ``sudo -n true`` passed: one exec where the executor batches."""
    run_batch = getattr(executor, "run_batch", None)
    if run_batch is None:  # a test double: the two commands one by one, sudo through the executor's own proof
        os_release = (await executor.run(OS_RELEASE, timeout_s=20)).stdout
        await executor.ensure_sudo()
        return os_release, True
    os_release, sudo = await run_batch([OS_RELEASE, SUDO_PROBE], timeout_s=READ_TIMEOUT_S)
    return os_release.stdout, sudo.ok


async def check_host(executor: Executor) -> ConnectionReport:
    """Connect, read /etc/os-release and run ``true`` through sudo; never changes anything.

    After login this is one exec per host. Only where ``sudo -n true`` fails does the executor's own sudo proof
    run (``ensure_sudo``): it repeats ``sudo -n true`` to word the refusal as every stage words it, and with
    ``ssh.sudo: password`` it then needs an exec of its own (``sudo -S``, the password on stdin, never in a script).
    """
    report = ConnectionReport(executor.name)
    try:
        await executor.connect()
        report.reachable = report.authenticated = True
        os_release, sudo_ok = await _read(executor)
        report.os = _os_name(os_release)
        if not sudo_ok:
            await executor.ensure_sudo()  # raises SudoRefused naming the fix, or proves the password works
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
