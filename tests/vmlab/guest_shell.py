"""The tests' own root shell on each VM: one SSH connection per guest, kept for the whole test.

A new connection costs a TCG guest about 2 s of its single emulated CPU (key exchange, host key signature, PAM and
logind session), a command on a kept one about 0.2 s; the qemu tier runs a few hundred such commands. The wizard and
Ansible never use these connections: they open their own, so what the tests prove about new connections is unchanged.

The connections live on an event loop of their own in a background thread, so their keepalives run between the
test's commands and a connection that a network change killed is closed within seconds, not found dead by the next
command. A command is never sent twice: a connection found closed is replaced before the command goes out; one that
dies while the command runs raises, as a fresh connection would have.
"""

from __future__ import annotations

import asyncio
import threading
from pathlib import Path
from typing import Any

import asyncssh

KEEPALIVE_S = 5
KEEPALIVE_MISSES = 3


async def connect(port: int, key_file: Path, known_hosts: Path) -> asyncssh.SSHClientConnection:
    return await asyncssh.connect(
        "127.0.0.1",
        port,
        username="root",
        client_keys=[str(key_file)],
        known_hosts=str(known_hosts),
        connect_timeout=20,
        keepalive_interval=KEEPALIVE_S,
        keepalive_count_max=KEEPALIVE_MISSES,
    )


class GuestShells:
    """Root shells on the guests, one kept connection per SSH port."""

    def __init__(self, key_file: Path, known_hosts: Path) -> None:
        self.key_file = key_file
        self.known_hosts = known_hosts
        self._conns: dict[int, asyncssh.SSHClientConnection] = {}
        self._loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self._loop.run_forever, name="guest-shells", daemon=True)
        self._thread.start()

    def run(self, port: int, command: str, timeout_s: float) -> asyncssh.SSHCompletedProcess:
        future = asyncio.run_coroutine_threadsafe(self._run(port, command, timeout_s), self._loop)
        return future.result()

    async def _run(self, port: int, command: str, timeout_s: float) -> asyncssh.SSHCompletedProcess:
        conn = self._conns.get(port)
        if conn is None or conn.is_closed():
            self._conns.pop(port, None)
            conn = self._conns[port] = await connect(port, self.key_file, self.known_hosts)
        try:
            return await conn.run(command, timeout=timeout_s)
        except BaseException:
            # Whatever went wrong (a cut network, a timeout), the next command starts on a new connection.
            self._conns.pop(port, None)
            conn.close()
            raise

    def close(self) -> None:
        async def close_all() -> None:
            conns: list[Any] = list(self._conns.values())
            self._conns.clear()
            for conn in conns:
                conn.close()
            for conn in conns:
                await conn.wait_closed()

        if self._thread.is_alive():
            try:
                asyncio.run_coroutine_threadsafe(close_all(), self._loop).result(timeout=10)
            except Exception:  # noqa: BLE001 - a guest already gone must not fail the teardown
                pass
            self._loop.call_soon_threadsafe(self._loop.stop)
            self._thread.join(timeout=10)
        self._loop.close()
