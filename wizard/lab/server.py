"""One real asyncssh SSH/SFTP listener per simulated host (public-key auth only)."""

from __future__ import annotations

import asyncio
import logging
from typing import TYPE_CHECKING

import asyncssh

from wizard.lab.sftp import HostSFTPServer
from wizard.lab.streams import ReaderInput, Sink

if TYPE_CHECKING:
    from wizard.lab.host import SimHost

log = logging.getLogger(__name__)

IDENT = "RoceWizardLab_1.0 roce-wizard simulated host"
BANNER = "roce-wizard simulated host {name} ({os}) - every result here is simulated\n"
CLIENT_ADDRESS = "10.0.0.1"


# the simulated hosts' ciphers (see listen)
LAB_CIPHERS = ("aes128-gcm@openssh.com", "aes256-gcm@openssh.com", "aes128-ctr", "aes256-ctr")


class _ChannelSink(Sink):
    """stdout/stderr of an exec channel; writes after the channel closed are dropped.

    What a command writes before it next waits leaves as one SSH data message, as a real program's stdio buffer
    and pipe hand sshd a block, not a line (stdout to a pipe is block buffered, setbuf(3)): the simulated ethtool -S
    sent one encrypted packet per line, a third of the lab's CPU on a fleet's counter reads and as much of the
    wizard's reading them."""

    def __init__(self, writer: asyncssh.SSHWriter) -> None:
        self.writer = writer
        self._pending: list[str] = []

    def write(self, text: str) -> None:
        if not text:
            return
        if not self._pending:
            asyncio.get_running_loop().call_soon(self.flush)  # once the command yields, or ends
        self._pending.append(text)

    def flush(self) -> None:
        if not self._pending:
            return
        text = "".join(self._pending)
        self._pending.clear()
        try:
            self.writer.write(text)
        except (asyncssh.Error, BrokenPipeError, OSError, RuntimeError):
            pass


class _Session(asyncssh.SSHServer):
    def __init__(self, node: HostListener) -> None:
        self.node = node
        self.conn: asyncssh.SSHServerConnection | None = None

    def connection_made(self, conn: asyncssh.SSHServerConnection) -> None:
        self.conn = conn
        self.node.connections.add(conn)

    def connection_lost(self, exc: Exception | None) -> None:
        if self.conn is not None:
            self.node.connections.discard(self.conn)

    def begin_auth(self, username: str) -> bool:
        if self.conn is not None:
            host = self.node.host
            self.conn.send_auth_banner(BANNER.format(name=host.name, os=host.profile.os_pretty))
        return True

    def password_auth_supported(self) -> bool:
        return False

    def kbdint_auth_supported(self) -> bool:
        return False

    def public_key_auth_supported(self) -> bool:
        return True

    def validate_public_key(self, username: str, key: asyncssh.SSHKey) -> bool:
        if self.node.host.fault("auth_refused"):
            return False
        return key.public_data == self.node.client_public.public_data


class HostListener:
    """The SSH endpoint of one host; closes (connection refused) while the host reboots."""

    def __init__(
        self, host: SimHost, bind: str, port: int, host_key: asyncssh.SSHKey, client_public: asyncssh.SSHKey
    ) -> None:
        self.host = host
        self.bind = bind
        self.port = port
        self.host_key = host_key
        self.client_public = client_public
        self.acceptor: asyncssh.SSHAcceptor | None = None
        self.connections: set[asyncssh.SSHServerConnection] = set()
        self.tasks: set[asyncio.Task] = set()
        host.power_listeners.append(self._power)

    async def listen(self) -> None:
        self.acceptor = await asyncssh.create_server(
            lambda: _Session(self),
            self.bind,
            self.port,
            server_host_keys=[self.host_key],
            process_factory=self._handle,
            sftp_factory=lambda chan: HostSFTPServer(chan, self.host),
            server_version=IDENT,
            allow_scp=False,
            reuse_address=True,
            keepalive_interval=0,
            # AES-GCM costs one cryptography call per packet where asyncssh's chacha20-poly1305 builds a cipher
            # object per packet (about a fifth of a demo run's CPU). Any SSH client offers AES-GCM; the cipher
            # chosen is the client's first one the server also lists, so chacha20 is left out here.
            encryption_algs=LAB_CIPHERS,
        )
        self.port = self.acceptor.sockets[0].getsockname()[1] if self.port == 0 else self.port

    async def close(self) -> None:
        if self.acceptor is not None:
            self.acceptor.close()
            await self.acceptor.wait_closed()
            self.acceptor = None
        self.abort_all()
        for t in list(self.tasks):
            t.cancel()

    def abort_all(self) -> None:
        for conn in list(self.connections):
            conn.abort()
        self.connections.clear()

    def _power(self, event: str) -> asyncio.Task | None:
        if event == "off":
            if self.acceptor is not None:
                self.acceptor.close()
                self.acceptor = None
            self.abort_all()
        elif event == "on" and self.acceptor is None:
            task = asyncio.get_running_loop().create_task(self.listen())
            self.tasks.add(task)
            task.add_done_callback(self.tasks.discard)
            return task
        return None

    async def _handle(self, process: asyncssh.SSHServerProcess) -> None:
        host = self.host
        conn = process.channel.get_connection()
        command = process.command
        if command is None:
            process.stderr.write("roce-wizard simulated host: no interactive shell; run a command instead\n")
            process.exit(1)
            return
        user = process.get_extra_info("username") or "root"
        peer = process.get_extra_info("peername") or ("127.0.0.1", 0)
        drop = host.take_ssh_drop(command)
        out, err = _ChannelSink(process.stdout), _ChannelSink(process.stderr)
        run = asyncio.ensure_future(
            host.exec(
                command,
                user=user,
                env=dict(process.env or {}),
                stdin=ReaderInput(process.stdin),
                out=out,
                err=err,
                client=(CLIENT_ADDRESS, int(peer[1])),
            )
        )
        signalled: list[str] = []

        def signal_received(name: str) -> None:
            # sshd killpg()s the session on a "signal" request (RFC 4254 6.9); asyncssh would only queue it on stdin
            signalled.append(name)
            run.cancel(f"SIG{name}")

        process.signal_received = signal_received  # type: ignore[method-assign]
        try:
            status = await run
        except asyncio.CancelledError:
            out.flush()
            err.flush()
            if not signalled or not run.cancelled():
                run.cancel()
                raise
            try:
                process.exit_with_signal(signalled[0])  # what sshd reports for a command killed by a signal
            except (asyncssh.Error, OSError, RuntimeError):
                pass
            return
        except Exception as exc:  # a simulator bug must show up as a failed command, not a hung session
            log.exception("lab command failed on %s: %s", host.name, command)
            err.write(f"roce-wizard lab: internal error while running the command: {exc!r}\n")
            status = 70
        out.flush()  # every byte before the exit status, as sshd sends them
        err.flush()
        if drop:
            conn.abort()
            return
        try:
            process.exit(status)
        except (asyncssh.Error, OSError, RuntimeError):
            pass
