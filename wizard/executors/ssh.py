"""SSH executor on asyncssh: one reused connection per host, streamed output, sudo, files with backups."""

from __future__ import annotations

import asyncio
import contextlib
import errno
import os
import posixpath
import secrets
import shlex
import socket
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

import asyncssh

from wizard.executors import batch
from wizard.executors.base import (
    AuthenticationFailed,
    CommandResult,
    CommandTimeout,
    ConnectionLost,
    ExecutorError,
    HostKeyRejected,
    HostUnreachable,
    LineCallback,
    Stream,
    SudoRefused,
    render_command,
)
from wizard.executors.jump import Jump

_SUDO_PASSWORD_HINT = (
    "configure NOPASSWD for this user, or set ssh.sudo: password and provide it via $ROCE_WIZARD_SUDO_PASSWORD "
    "or the prompt"
)


# Parsed output must not depend on the host's locale (German ethtool or date, decimal commas): every command runs
# with LC_ALL=C. sudo's env_reset may drop LC_ALL, so commands run through sudo get it again from env(1).
SBIN_ON_PATH = 'PATH="$PATH:/usr/local/sbin:/usr/sbin:/sbin"; LC_ALL=C; export PATH LC_ALL; '
SUDO_C_LOCALE = ("env", "LC_ALL=C")
# AES-GCM first: asyncssh does a packet's AES-GCM in one call into OpenSSL (AES-NI), its ChaCha20-Poly1305 (its and
# OpenSSH's first choice) in four Python-level cipher calls per packet, a fifth of the wizard's CPU in a 300-host
# discovery (profiled on the namespace lab). Every OpenSSH since 6.2 offers both; the rest stay as fallbacks.
CIPHER_PREFERENCE = (
    "aes128-gcm@openssh.com",
    "aes256-gcm@openssh.com",
    "chacha20-poly1305@openssh.com",
    "aes256-ctr",
    "aes192-ctr",
    "aes128-ctr",
)
READ_CHUNK = 65536  # characters read from a command's output at a time (whatever has arrived, up to this)


@dataclass(slots=True)
class SshTarget:
    """How to reach one host. ``name`` is the wizard's host name; ``address`` is what SSH connects to."""

    name: str
    address: str
    port: int = 22
    username: str = "root"
    identity_file: str | None = None
    known_hosts: str | None = None
    accept_new_host_keys: bool = False
    connect_timeout_s: float = 10.0
    keepalive_interval_s: float = 5.0
    command_timeout_s: float = 900.0
    sudo_password: str | None = field(default=None, repr=False)
    jump: Jump | None = None
    """The bastion this host is reached through (shared with other hosts); None: directly, ignoring any ProxyJump
    of ~/.ssh/config (the answers' builder, wizard/engine/session.py, has already resolved it into ``jump``)."""


class CommandListener(Protocol):
    """Receives every command, output line and result: log files, log panes, state saving."""

    def command_started(self, host: str, command: str) -> None: ...

    def output_line(self, host: str, stream: Stream, line: str) -> None: ...

    def output_lines(self, host: str, stream: Stream, lines: list[str]) -> None:
        """Many lines that arrived together (a probe's output replayed from a batch): one call, not one per line.
        Listeners that only know ``output_line`` get them one by one."""
        for line in lines:
            self.output_line(host, stream, line)

    def command_finished(self, host: str, command: str, result: CommandResult | None, error: str | None) -> None: ...


class SshExecutor:
    """Runs commands on one host over a single reused asyncssh connection."""

    def __init__(self, target: SshTarget, listener: CommandListener | None = None) -> None:
        self.target = target
        self.name = target.name
        self.listener = listener
        self._conn: asyncssh.SSHClientConnection | None = None
        self._connect_lock = asyncio.Lock()
        self._sudo_mode: str | None = None  # "nopasswd" | "password", decided on first sudo use
        # Why asyncssh closed the connection ("Server not responding to keepalive"): a dead link noticed while no
        # command ran shows only as "connection closed" on the next command, so the reason is kept for it.
        self._lost_reason: str | None = None
        # A login shell may print on stdout before the command runs (a ~/.bashrc that echoes a motd, for exec
        # sessions too): lone commands print this marker first, and what came before it is not their output.
        self._start_marker = "@@roce-wizard-start-" + secrets.token_hex(8)

    # -- connection ---------------------------------------------------------------------------------------
    async def connect(self) -> None:
        """Open the connection if it is not open; raises a one-line :class:`ExecutorError` subclass."""
        async with self._connect_lock:
            jump = self.target.jump  # a connection tunnelled through a dropped bastion connection is gone too
            if self._conn is not None and not self._conn.is_closed() and (jump is None or jump.is_open()):
                return
            try:
                self._conn = await self._open()
            except ExecutorError as exc:
                if self._lost_reason:  # why the last connection ended says more than why a new one cannot start
                    exc.detail = f"{exc.detail} (the previous connection ended: {self._lost_reason})"
                raise
            self._lost_reason = None

    async def _open(self) -> asyncssh.SSHClientConnection:
        t = self.target
        known = self._known_hosts_path()
        try:
            return await self._dial(known)
        except asyncssh.HostKeyNotVerifiable as exc:
            if not t.accept_new_host_keys:
                raise HostKeyRejected(t.name, self._host_key_message(known, str(exc))) from None
            if self._has_recorded_key(known):
                raise HostKeyRejected(t.name, self._host_key_message(known, "host key changed")) from None
            await self._record_new_host_key(known)
            return await self._dial(known)

    async def _dial(self, known: Path) -> asyncssh.SSHClientConnection:
        t = self.target
        if t.jump is None:
            return await self._dial_via(known, None)
        try:
            return await self._dial_via(known, await t.jump.connect(t.name))
        except HostUnreachable:
            # The shared bastion connection may have dropped since it was last used: dial it again, once.
            if t.jump.is_open():
                raise
            return await self._dial_via(known, await t.jump.connect(t.name))

    async def _dial_via(self, known: Path, tunnel: asyncssh.SSHClientConnection | None) -> asyncssh.SSHClientConnection:
        t = self.target
        options: dict[str, Any] = {
            "port": t.port,
            "username": t.username,
            "known_hosts": _parsed_known_hosts(known),
            "connect_timeout": t.connect_timeout_s,
            "keepalive_interval": t.keepalive_interval_s,
            "keepalive_count_max": 3,
            "tunnel": tunnel,
            "encryption_algs": CIPHER_PREFERENCE,
        }
        if t.identity_file:
            options["client_keys"] = [os.path.expanduser(t.identity_file)]
        executor = self

        class Watch(asyncssh.SSHClient):
            def connection_lost(self, exc: Exception | None) -> None:
                if exc is not None:
                    executor._lost_reason = str(exc)

        try:
            conn, _client = await asyncssh.create_connection(Watch, t.address, **options)
            return conn
        except asyncssh.HostKeyNotVerifiable:
            raise
        except asyncssh.PermissionDenied:
            raise AuthenticationFailed(
                t.name, f"authentication refused for user {t.username!r} (check the key, the agent, ssh.user)"
            ) from None
        except TimeoutError:
            why = f"no SSH answer from {t.address}:{t.port} within {t.connect_timeout_s:g}s"
            raise HostUnreachable(t.name, t.jump.failure(t.name, why) if t.jump else why) from None
        except asyncssh.ChannelOpenError as exc:
            if not t.jump:
                raise HostUnreachable(t.name, f"cannot connect to {t.address}:{t.port}: {exc.reason}") from None
            why = f"the bastion cannot connect to {t.address}:{t.port} ({exc.reason or 'channel refused'})"
            if exc.code == asyncssh.OPEN_ADMINISTRATIVELY_PROHIBITED:
                why = f"the bastion refuses to forward to {t.address}:{t.port} ({exc.reason}; AllowTcpForwarding?)"
            raise HostUnreachable(t.name, t.jump.failure(t.name, why)) from None
        except (OSError, asyncssh.Error) as exc:
            why = f"cannot connect to {t.address}:{t.port}: {_connect_failure(exc)}"
            raise HostUnreachable(t.name, t.jump.failure(t.name, why) if t.jump else why) from None
        except asyncssh.KeyImportError as exc:
            raise AuthenticationFailed(t.name, f"cannot load identity file {t.identity_file}: {exc}") from None

    def _known_hosts_path(self) -> Path:
        return Path(os.path.expanduser(self.target.known_hosts or "~/.ssh/known_hosts"))

    def _host_pattern(self) -> str:
        t = self.target
        return t.address if t.port == 22 else f"[{t.address}]:{t.port}"

    def _has_recorded_key(self, known: Path) -> bool:
        if not known.exists():
            return False
        keys = asyncssh.read_known_hosts(str(known)).match(self.target.address, "", self.target.port)
        return bool(keys[0] or keys[1])

    async def _record_new_host_key(self, known: Path) -> None:
        t = self.target
        tunnel = await t.jump.connect(t.name) if t.jump else None
        try:
            key = await asyncio.wait_for(
                asyncssh.get_server_host_key(t.address, t.port, tunnel=tunnel), t.connect_timeout_s
            )
        except (TimeoutError, OSError, asyncssh.Error) as exc:
            raise HostUnreachable(t.name, f"cannot fetch the host key of {self._host_pattern()}: {exc}") from None
        if key is None:
            raise HostKeyRejected(t.name, "server offered no host key")
        known.parent.mkdir(parents=True, exist_ok=True)
        line = f"{self._host_pattern()} {key.export_public_key('openssh').decode().strip()}\n"
        with known.open("a", encoding="utf-8") as handle:
            handle.write(line)

    def _host_key_message(self, known: Path, reason: str) -> str:
        return (
            f"host key of {self._host_pattern()} not verified against {known} ({reason}); check it, then add it "
            f"with ssh-keyscan, or set ssh.accept_new_host_keys: true to record new hosts"
        )

    async def close(self) -> None:
        if self._conn is not None:
            self._conn.close()
            with contextlib.suppress(Exception):
                await self._conn.wait_closed()
            self._conn = None

    async def check_new_connection(self) -> None:
        """Prove the host is reachable over a NEW connection (the old one may survive a broken network)."""
        known = self._known_hosts_path()
        try:
            conn = await self._dial(known)
        except Exception as exc:
            if isinstance(exc, (HostUnreachable, AuthenticationFailed, HostKeyRejected)):
                raise
            raise HostUnreachable(self.name, f"new connection failed: {exc}") from None
        try:
            result = await asyncio.wait_for(conn.run("true", check=False), self.target.connect_timeout_s)
            if result.exit_status != 0:
                raise HostUnreachable(self.name, "a new connection opened but could not run a command")
        except (TimeoutError, asyncssh.Error, OSError) as exc:
            raise HostUnreachable(self.name, f"new connection failed: {exc}") from None
        finally:
            conn.close()

    async def wait_until_back(self, *, timeout_s: float) -> None:
        """After a reboot: drop the old connection and reconnect with backoff until ``timeout_s`` passes."""
        await self.close()
        deadline = time.monotonic() + timeout_s
        delay = 0.2
        last = ""
        while time.monotonic() < deadline:
            await asyncio.sleep(delay)
            try:
                await self.connect()
                return
            except (HostUnreachable, ConnectionLost) as exc:
                last = exc.detail
            delay = min(delay * 2, 10.0)
        raise HostUnreachable(self.name, f"did not come back within {timeout_s:g}s ({last})")

    # -- commands -----------------------------------------------------------------------------------------
    async def run(
        self,
        argv: Sequence[str] | str,
        *,
        sudo: bool = False,
        input: str | None = None,
        timeout_s: float | None = None,
        on_line: LineCallback | None = None,
    ) -> CommandResult:
        """Run one command; a non-zero exit is a result, a lost connection or a timeout is raised."""
        command = render_command(argv)
        stdin = input
        # Debian gives non-root users no sbin directories in PATH, yet read-only tools live there (sysctl,
        # ethtool, ip on older releases). sudo has its own secure_path.
        remote = SBIN_ON_PATH + command
        if sudo:
            remote, stdin = await self._with_sudo(argv, input)
        remote = f"printf '%s\\n' {self._start_marker}; {remote}"
        shown = f"sudo {command}" if sudo else command
        if self.listener:
            self.listener.command_started(self.name, shown)
        limit = timeout_s or self.target.command_timeout_s
        try:
            result = await self._exec(command, remote, stdin, limit, on_line, marker=self._start_marker)
        except Exception as exc:
            if self.listener:
                self.listener.command_finished(self.name, shown, None, str(exc))
            raise
        if self.listener:
            self.listener.command_finished(self.name, shown, result, None)
        return result

    async def open_process(self, argv: Sequence[str], *, sudo: bool = False) -> asyncssh.SSHClientProcess[str]:
        """Start a long-lived command on a channel of its own and leave its stdin open (wizard/engine/host_lock.py holds
        the host's lock so); the caller reads it and ends it. It is no step of a stage, so it is not logged as the
        command in flight."""
        remote, stdin = SBIN_ON_PATH + render_command(argv), None
        if sudo:
            remote, stdin = await self._with_sudo(argv, None)
        await self.connect()
        assert self._conn is not None
        try:
            process = await self._conn.create_process(remote, encoding="utf-8", errors="replace")
            if stdin:
                process.stdin.write(stdin)  # the sudo password line; no EOF, that would end the command
        except (asyncssh.Error, OSError) as exc:
            self._conn = None
            raise ConnectionLost(self.name, f"connection lost before {render_command(argv)!r} started: {exc}") from None
        return process

    async def run_batch(
        self, commands: Sequence[Sequence[str] | str], *, sudo: bool = False, timeout_s: float | None = None
    ) -> list[CommandResult]:
        """Run read-only ``commands`` in one exec (wizard/executors/batch.py); the host log still shows each
        command with its own output and status, as if it had been run alone."""
        if not commands:
            return []
        token = batch.new_token()
        text, shell = batch.script(commands), batch.shell_argv(token)
        remote, stdin = SBIN_ON_PATH + shlex.join(shell), text
        optimistic = sudo and self._sudo_mode is None and not self.target.sudo_password
        if optimistic:
            # Straight to `sudo -n`, without the separate `sudo -n true` first: that exec was a round trip of its own
            # in front of every host's first sudo batch. If sudo itself refuses, the script never starts (no opening
            # delimiter) and the usual proof below words the refusal exactly as before.
            remote = shlex.join(["sudo", "-n", "--", *SUDO_C_LOCALE, *shell])
        elif sudo:
            remote, stdin = await self._with_sudo(shell, text)
        limit = timeout_s or self.target.command_timeout_s
        shown = f"a batch of {len(commands)} probes ({render_command(commands[0])}, ...)"
        received: list[str] = []
        try:
            result = await self._exec(shown, remote, stdin, limit, None, quiet=True, received=received)
        except (ConnectionLost, CommandTimeout) as exc:
            # Name the probe that was running, as a lone exec would have, and log the probes that had finished.
            parts = batch.split("".join(received), "", token, len(commands))
            running = next((i for i, part in enumerate(parts) if part.exit_status is None), 0)
            for command, part in zip(commands[:running], parts[:running], strict=True):
                self._replay(batch.as_result(command, part, 0.0, sudo=sudo))
            name = render_command(commands[running])
            exc.detail = exc.detail.replace(repr(shown), repr(name), 1) + (
                f" (probe {running + 1} of {len(commands)} sent in one batch)"
            )
            exc.args = (f"{self.name}: {exc.detail}",)
            if self.listener:
                self.listener.command_started(self.name, f"sudo {name}" if sudo else name)
                self.listener.command_finished(self.name, f"sudo {name}" if sudo else name, None, exc.detail)
            raise
        if optimistic:
            if f"\n{token} 0\n" not in result.raw_stdout:
                await self._sudo_mode_for_host()  # raises SudoRefused naming the cause, as a lone sudo command would
                return await self.run_batch(commands, sudo=sudo, timeout_s=timeout_s)
            self._sudo_mode = "nopasswd"
        parts = batch.split(result.raw_stdout, result.stderr + "\n", token, len(commands))
        share = result.duration_s / len(commands)
        results = [batch.as_result(c, part, share, sudo=sudo) for c, part in zip(commands, parts, strict=True)]
        for command, part, one in zip(commands, parts, results, strict=True):
            if part.exit_status is None:
                error = f"the probe batch ended before {render_command(command)!r} finished (exit {result.exit_status})"
                if self.listener:
                    self.listener.command_started(self.name, one.command)
                    self.listener.command_finished(self.name, one.command, None, error)
                raise ConnectionLost(self.name, error)
            self._replay(one)
        return results

    def _replay(self, one: CommandResult) -> None:
        """Show one command of a batch in the host log as if it had run alone: start, output lines, end."""
        if not self.listener:
            return
        self.listener.command_started(self.name, one.command)
        bulk = getattr(self.listener, "output_lines", None)
        for stream, text in (("stdout", one.stdout), ("stderr", one.stderr)):
            if not text:
                continue
            # A batch hands over every probe's output at once: one call per probe and stream, not per line (at 256
            # hosts the per-line events were most of the control machine's CPU).
            if bulk is not None:
                bulk(self.name, stream, text.splitlines())
            else:
                for line in text.splitlines():
                    self.listener.output_line(self.name, stream, line)  # type: ignore[arg-type]
        self.listener.command_finished(self.name, one.command, one, None)

    async def _with_sudo(self, argv: Sequence[str] | str, input: str | None) -> tuple[str, str | None]:
        inner = ["sh", "-c", argv] if isinstance(argv, str) else list(argv)
        mode = await self._sudo_mode_for_host()
        if mode == "nopasswd":
            return shlex.join(["sudo", "-n", "--", *SUDO_C_LOCALE, *inner]), input
        password = self.target.sudo_password or ""
        # -k makes sudo ask every time, so the password line is always consumed and never reaches the command.
        return shlex.join(["sudo", "-k", "-S", "-p", "", "--", *SUDO_C_LOCALE, *inner]), password + "\n" + (input or "")

    async def ensure_sudo(self) -> None:
        await self._sudo_mode_for_host()

    async def _sudo_mode_for_host(self) -> str:
        if self._sudo_mode is not None:
            return self._sudo_mode
        probe = await self._exec("sudo -n true", "sudo -n true", None, self.target.connect_timeout_s * 3, None)
        if probe.ok:
            self._sudo_mode = "nopasswd"
            return self._sudo_mode
        if not self.target.sudo_password:
            reason = probe.first_error_line()
            if "password" in reason:
                raise SudoRefused(self.name, f"sudo asks for a password ({reason}); {_SUDO_PASSWORD_HINT}")
            raise SudoRefused(self.name, f"sudo -n true failed: {reason}")
        check = await self._exec(
            "sudo -S true", "sudo -k -S -p '' -- true", self.target.sudo_password + "\n", 30.0, None
        )
        if not check.ok:
            raise SudoRefused(self.name, f"sudo refused the password or the user: {check.first_error_line()}")
        self._sudo_mode = "password"
        return self._sudo_mode

    async def _exec(
        self,
        shown: str,
        remote: str,
        stdin: str | None,
        timeout_s: float,
        on_line: LineCallback | None,
        *,
        quiet: bool = False,
        received: list[str] | None = None,
        marker: str | None = None,
    ) -> CommandResult:
        """Run ``remote``; with ``marker``, stdout before the line holding it is login noise and is dropped."""
        await self.connect()
        assert self._conn is not None
        started = time.monotonic()
        err: list[str] = []
        raw: list[str] = received if received is not None else []  # stdout so far, for a caller cut off mid-way
        try:
            process = await self._conn.create_process(remote, encoding="utf-8", errors="replace")
        except (asyncssh.Error, OSError) as exc:
            self._conn = None
            why = self._bastion_note(f"connection lost before {shown!r} started: {self._lost_reason or exc}")
            raise ConnectionLost(self.name, why) from None
        try:
            if stdin:
                process.stdin.write(stdin)
            process.stdin.write_eof()
        except BrokenPipeError:
            # The command ended before reading its input (`sudo -n` refusing at once does): what it printed and its
            # exit status still come; a connection that really died shows up below as a missing exit status.
            pass

        noise = [marker is not None]  # still before the marker

        def take(line: str, stream: Stream, sink: list[str]) -> None:
            """One line of output, with its newline (none on a last line without one)."""
            if stream == "stdout" and noise[0]:
                noise[0] = marker not in line  # type: ignore[operator]
                return
            text = line.rstrip("\n")
            # stdout keeps each line with its newline, and is joined once at the end: kept a second time without
            # them, a probe batch's thousands of lines doubled the control machine's memory in a 64-host wave
            sink.append(line if stream == "stdout" else text)
            if on_line:
                on_line(stream, text)
            if self.listener and not quiet:
                self.listener.output_line(self.name, stream, text)

        async def pump(reader: asyncssh.SSHReader[str], stream: Stream, sink: list[str]) -> None:
            # Read what has arrived and split it here: asyncssh's line iterator costs a lock, a search and a wakeup
            # per line, and a discovery batch prints about 1,000 lines per host (a quarter of the wizard's CPU in
            # a 300-host discovery, profiled on the namespace lab).
            pending = ""
            while chunk := await reader.read(READ_CHUNK):
                *lines, pending = (pending + chunk).split("\n")
                for line in lines:
                    take(line + "\n", stream, sink)
            if pending:
                take(pending, stream, sink)

        work = asyncio.gather(pump(process.stdout, "stdout", raw), pump(process.stderr, "stderr", err), process.wait())
        try:
            await asyncio.wait_for(work, timeout_s)
        except TimeoutError:
            process.close()
            raise CommandTimeout(self.name, f"{shown!r} still running after {timeout_s:g}s; stopped") from None
        except asyncio.CancelledError:
            if work.done() and not work.cancelled():
                work.exception()  # Python 3.11 stores the cancel as the gather's exception; taken, so never logged
            await _end_remote(process)
            raise
        except (asyncssh.Error, OSError, BrokenPipeError) as exc:
            self._conn = None
            raise ConnectionLost(self.name, self._bastion_note(f"connection lost during {shown!r}: {exc}")) from None
        status = process.exit_status
        if status is None:
            # asyncssh reports no exit status when the connection died mid-command: the outcome is unknown.
            self._conn = None
            raise ConnectionLost(self.name, self._bastion_note(f"connection lost during {shown!r} (no exit status)"))
        if status < 0 and process.exit_signal:
            status = 128 + 9
        raw_stdout = "".join(raw)
        stdout = raw_stdout[:-1] if raw_stdout.endswith("\n") else raw_stdout  # the lines without their newlines
        return CommandResult(shown, status, stdout, "\n".join(err), time.monotonic() - started, raw_stdout)

    def _bastion_note(self, message: str) -> str:
        """``message``, plus why the bastion connection ended when the host's connection went down with it."""
        jump = self.target.jump
        if jump is None or jump.is_open() or not jump.lost_reason:
            return message
        return f"{message} (the connection to bastion {jump.describe()} ended: {jump.lost_reason})"

    # -- files --------------------------------------------------------------------------------------------
    async def read_file(self, path: str, *, sudo: bool = False) -> str | None:
        """Content of ``path`` or None when it does not exist."""
        result = await self.run(["cat", "--", path], sudo=sudo)
        if result.ok:
            return result.raw_stdout
        if "No such file" in result.stderr:
            return None
        raise ConnectionLost(self.name, f"cannot read {path}: {result.first_error_line()}")

    async def write_file(
        self,
        path: str,
        content: str,
        *,
        mode: int = 0o644,
        owner: str = "root",
        group: str = "root",
        backup_dir: str | None = None,
    ) -> str | None:
        """Upload to a private temp path, back up the current file, then install with owner and mode.

        Returns the backup path on the host, or None when there was nothing to back up.
        """
        await self.connect()
        assert self._conn is not None
        temp = f"/tmp/.roce-wizard-{secrets.token_hex(8)}"
        try:
            async with self._conn.start_sftp_client() as sftp:
                async with sftp.open(temp, "w") as handle:
                    await handle.write(content)
                await sftp.chmod(temp, 0o600)
        except (asyncssh.Error, OSError) as exc:
            self._conn = None
            raise ConnectionLost(self.name, f"upload of {path} failed: {exc}") from None
        backup: str | None = None
        try:
            if backup_dir and (await self.run(["test", "-e", path], sudo=True)).ok:
                backup = posixpath.join(backup_dir, path.lstrip("/"))
                await self._must(["mkdir", "-p", "--", posixpath.dirname(backup)], f"backup of {path}")
                await self._must(["cp", "-a", "--", path, backup], f"backup of {path}")
            await self._must(
                ["install", "-D", "-o", owner, "-g", group, "-m", f"{mode:04o}", "--", temp, path], f"install {path}"
            )
        finally:
            with contextlib.suppress(Exception):
                await self.run(["rm", "-f", "--", temp])
        return backup

    async def _must(self, argv: list[str], what: str) -> None:
        result = await self.run(argv, sudo=True)
        if not result.ok:
            raise ConnectionLost(self.name, f"{what} failed: {result.first_error_line()}")


# known_hosts parsed once per file content, not once per connection: given a path, asyncssh re-reads and re-parses
# the whole file on every connect, and 1,000 hosts against a 1,000-line file was a million key parses (issue 15).
_KNOWN_HOSTS: dict[str, tuple[tuple[int, int], asyncssh.SSHKnownHosts]] = {}


async def _end_remote(process: asyncssh.SSHClientProcess[str], grace_s: float = 2.0) -> None:
    """The wizard stops (SIGINT, SIGTERM, quit): end the remote command, not just our side of it.

    Closing the channel alone leaves a command without a pty running on OpenSSH. The RFC 4254 6.9 "signal" request
    makes sshd (7.9 and later; earlier ones ignore it) killpg() the session's process group with SIGTERM. The exit
    status is awaited briefly so the command is gone before the connection closes; then the channel is closed."""
    try:
        process.terminate()
        await asyncio.wait_for(asyncio.shield(process.wait_closed()), grace_s)
    except (TimeoutError, asyncssh.Error, OSError, asyncio.CancelledError):
        pass  # a dead connection or a second interrupt: nothing more to wait for
    finally:
        process.close()


def _parsed_known_hosts(path: Path) -> asyncssh.SSHKnownHosts | str:
    try:
        stat = path.stat()
    except FileNotFoundError:
        return asyncssh.import_known_hosts("")
    except OSError:
        return str(path)  # asyncssh reports it as before
    stamp = (stat.st_mtime_ns, stat.st_size)  # a key recorded by accept_new_host_keys changes both
    cached = _KNOWN_HOSTS.get(str(path))
    if cached is None or cached[0] != stamp:
        try:
            cached = (stamp, asyncssh.read_known_hosts(str(path)))
        except (OSError, ValueError):
            return str(path)
        _KNOWN_HOSTS[str(path)] = cached
    return cached[1]


# What a failed connect means, in the operator's terms (asyncio's own text is "Connect call failed (addr, port)").
_CONNECT_ERRNO = {
    errno.ECONNREFUSED: "connection refused: nothing listens on that port, or a firewall rejects it (is sshd running?)",
    errno.EHOSTUNREACH: "no route to host: it is down, unplugged, or the address is wrong",
    errno.ENETUNREACH: "network unreachable from this machine (check its routes to that address)",
    errno.ECONNRESET: "connection reset while logging in (sshd's MaxStartups, or a firewall)",
}


def _connect_failure(exc: BaseException) -> str:
    if isinstance(exc, socket.gaierror):
        return f"cannot resolve the name ({exc.strerror or exc})"
    known = _CONNECT_ERRNO.get(getattr(exc, "errno", None) or -1)
    if known:
        return known
    return getattr(exc, "strerror", None) or getattr(exc, "reason", None) or str(exc) or type(exc).__name__
