"""The ``hang`` fault: one command never ends on its own, as a stuck `apt-get` or a wedged driver reload does.

It ends only as a real process would: by a signal its SSH client sends over the channel (RFC 4254 6.9; the lab's
server turns it into a cancel with the signal's name, wizard/lab/server.py). Closing the channel alone leaves it
hanging, as OpenSSH leaves a command without a pty running. What happened is appended to ``LOG`` on the host's
disk, so a test can see after the wizard exited that the command it started was ended, and by which signal.
"""

from __future__ import annotations

import asyncio
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from wizard.lab.host import SimHost
    from wizard.lab.streams import Sink

LOG = "/var/log/roce-lab-hang.log"
# What a real apt-get prints while another apt (unattended-upgrades) holds the lock: the usual reason it hangs.
APT_LOCK = (
    "Waiting for cache lock: Could not get lock /var/lib/dpkg/lock-frontend. "
    "It is held by process 1742 (unattended-upgr)...\n"
)
DEFAULT_MATCH = "apt-get install"


def hangs(host: SimHost, command: str) -> bool:
    """Whether ``command`` is the one the fault hangs (the first whose line contains the fault's text)."""
    fault = host.fault("hang")
    if fault is None or getattr(host, "hang_fired", False) or (fault.arg or DEFAULT_MATCH) not in command:
        return False
    host.hang_fired = True  # type: ignore[attr-defined]
    return True


async def hang(host: SimHost, command: str, err: Sink) -> None:
    """Say why on stderr, then wait until cancelled; the cancel's message (the signal name) is logged as how the
    command ended. The stderr line also tells a watcher (a test) that the command is surely running now."""
    _log(host, f"hung: {command}")
    err.write(APT_LOCK if "apt" in command else "roce-wizard lab: this command hangs until it gets a signal\n")
    try:
        await asyncio.Event().wait()
    except asyncio.CancelledError as exc:
        _log(host, f"ended by {exc.args[0] if exc.args else 'cancel'}: {command}")
        raise


def _log(host: SimHost, line: str) -> None:
    old = host.fs.read_bytes(LOG) if host.fs.exists(LOG) else b""
    host.fs.install(LOG, old + line.encode() + b"\n", mode=0o640)
