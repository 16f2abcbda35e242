"""Bastions (jump hosts): one shared SSH connection per bastion; every host's SSH connection is a channel inside it."""

from __future__ import annotations

import asyncio
import getpass
import os
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import asyncssh

from wizard.answers.sections import JumpHost, split_jump
from wizard.errors import WizardError
from wizard.executors.base import AuthenticationFailed, ExecutorError, HostKeyRejected, HostUnreachable

# sshd's session process on the bastion holds one socket per tunnelled channel, and its soft open-file limit is
# usually 1,024: past about a thousand hosts one connection would run out, so each carries at most this many hosts.
HOSTS_PER_CONNECTION = 256
MAX_HOPS = 8  # a longer ProxyJump chain in ~/.ssh/config is taken for a loop


@dataclass(frozen=True, slots=True)
class Hop:
    """One bastion as it is dialled: address, port, user and keys already resolved."""

    address: str
    port: int
    username: str
    identity_files: tuple[str, ...] = ()

    @property
    def label(self) -> str:
        return f"[{self.address}]:{self.port}" if ":" in self.address else f"{self.address}:{self.port}"


@dataclass(slots=True)
class JumpSettings:
    """What every bastion connection shares with the hosts' connections (ssh.* of the answers)."""

    known_hosts: str | None = None
    accept_new_host_keys: bool = False
    connect_timeout_s: float = 10.0
    keepalive_interval_s: float = 5.0


class _Refused(Exception):
    """A bastion could not be used; each waiting host turns it into its own one-line error."""

    def __init__(self, kind: type[ExecutorError], why: str) -> None:
        super().__init__(why)
        self.kind = kind
        self.why = why


class Jump:
    """The shared connection to one bastion (``via`` the previous one of a chain), dialled on first use and again
    after it dropped. Concurrent hosts wait for one dial; a failure is given to every host that asks within
    connect_timeout_s, so a thousand hosts behind a dead bastion fail within one timeout, not one after another."""

    def __init__(self, hop: Hop, settings: JumpSettings, via: Jump | None = None) -> None:
        self.hop = hop
        self.settings = settings
        self.via = via
        self._conn: asyncssh.SSHClientConnection | None = None
        self._pending: asyncio.Future[asyncssh.SSHClientConnection] | None = None
        self._failed: tuple[float, _Refused] | None = None
        self.lost_reason: str | None = None  # why the last bastion connection ended (keepalive, reset)
        self.dials = 0  # connections opened to the bastion (tests and figures)

    def describe(self) -> str:
        return self.hop.label if self.via is None else f"{self.hop.label} (via {self.via.describe()})"

    def depth(self) -> int:
        """How many bastions this one is reached through."""
        return 0 if self.via is None else 1 + self.via.depth()

    def is_open(self) -> bool:
        return self._conn is not None and not self._conn.is_closed()

    def failure(self, host: str, why: str) -> str:
        """The one-line detail of a host that could not be reached through this bastion."""
        return f"cannot reach {host} through bastion {self.describe()}: {why}"

    async def connect(self, host: str) -> asyncssh.SSHClientConnection:
        """The live bastion connection, dialled if needed; raises a one-line error naming ``host`` and the bastion."""
        try:
            return await self._get()
        except _Refused as refused:
            raise refused.kind(host, self.failure(host, refused.why)) from None

    async def _get(self) -> asyncssh.SSHClientConnection:
        if self._conn is not None and not self._conn.is_closed():
            return self._conn
        if self._failed and time.monotonic() - self._failed[0] < self.settings.connect_timeout_s:
            raise self._failed[1]
        if self._pending is None:
            self._pending = asyncio.ensure_future(self._open())
            self._pending.add_done_callback(self._settled)
        return await asyncio.shield(self._pending)

    def _settled(self, future: asyncio.Future[asyncssh.SSHClientConnection]) -> None:
        self._pending = None
        error = None if future.cancelled() else future.exception()  # retrieved even when no host waits any more
        if isinstance(error, _Refused):
            self._failed = (time.monotonic(), error)

    async def _open(self) -> asyncssh.SSHClientConnection:
        tunnel = None
        if self.via is not None:
            try:
                tunnel = await self.via._get()
            except _Refused as refused:
                raise _Refused(refused.kind, f"{self.via.hop.label}: {refused.why}") from None
        known = Path(os.path.expanduser(self.settings.known_hosts or "~/.ssh/known_hosts"))
        try:
            conn = await self._dial(known, tunnel)
        except asyncssh.HostKeyNotVerifiable as exc:
            hint = "check it, then add it with ssh-keyscan, or set ssh.accept_new_host_keys: true to record new hosts"
            if not self.settings.accept_new_host_keys:
                why = f"its host key is not verified against {known} ({exc}); {hint}"
                raise _Refused(HostKeyRejected, why) from None
            if has_recorded_key(known, self.hop.address, self.hop.port):
                raise _Refused(HostKeyRejected, f"its host key changed (not the one in {known}); {hint}") from None
            await self._record_key(known, tunnel)
            conn = await self._dial(known, tunnel)
        self._conn, self._failed, self.lost_reason = conn, None, None
        self.dials += 1
        return conn

    async def _dial(self, known: Path, tunnel: asyncssh.SSHClientConnection | None) -> asyncssh.SSHClientConnection:
        hop, s = self.hop, self.settings
        options: dict[str, Any] = {
            "port": hop.port,
            "username": hop.username,
            "known_hosts": str(known) if known.exists() else asyncssh.import_known_hosts(""),
            "connect_timeout": s.connect_timeout_s,
            "keepalive_interval": s.keepalive_interval_s,
            "keepalive_count_max": 3,
            "tunnel": tunnel,
            "config": None,  # resolved already (Hop); the hosts' own ~/.ssh/config entries must not apply here
        }
        if hop.identity_files:
            options["client_keys"] = [os.path.expanduser(p) for p in hop.identity_files]
        jump = self

        class Watch(asyncssh.SSHClient):
            def connection_lost(self, exc: Exception | None) -> None:
                jump.lost_reason = str(exc) if exc is not None else "closed"

        try:
            conn, _client = await asyncssh.create_connection(Watch, hop.address, **options)
            return conn
        except asyncssh.HostKeyNotVerifiable:
            raise
        except asyncssh.PermissionDenied:
            why = f"the bastion refused user {hop.username!r} (check its key: jump_host.identity_file, the agent)"
            raise _Refused(AuthenticationFailed, why) from None
        except TimeoutError:
            raise _Refused(HostUnreachable, f"no SSH answer from the bastion within {s.connect_timeout_s:g}s") from None
        except (OSError, asyncssh.Error) as exc:
            from wizard.executors.ssh import _connect_failure

            raise _Refused(HostUnreachable, f"the bastion does not answer: {_connect_failure(exc)}") from None
        except asyncssh.KeyImportError as exc:
            raise _Refused(AuthenticationFailed, f"cannot load its identity file: {exc}") from None

    async def _record_key(self, known: Path, tunnel: asyncssh.SSHClientConnection | None) -> None:
        hop = self.hop
        try:
            key = await asyncio.wait_for(
                asyncssh.get_server_host_key(hop.address, hop.port, tunnel=tunnel, config=None),
                self.settings.connect_timeout_s,
            )
        except (TimeoutError, OSError, asyncssh.Error) as exc:
            raise _Refused(HostUnreachable, f"cannot fetch its host key: {exc}") from None
        if key is None:
            raise _Refused(HostKeyRejected, "it offered no host key")
        known.parent.mkdir(parents=True, exist_ok=True)
        pattern = hop.address if hop.port == 22 else f"[{hop.address}]:{hop.port}"
        with known.open("a", encoding="utf-8") as handle:
            handle.write(f"{pattern} {key.export_public_key('openssh').decode().strip()}\n")

    async def close(self) -> None:
        """Close this bastion connection (not the ones before it in a chain); the next use dials again."""
        conn, self._conn = self._conn, None
        if conn is not None:
            conn.close()
            await conn.wait_closed()


def has_recorded_key(known: Path, address: str, port: int) -> bool:
    if not known.exists():
        return False
    keys = asyncssh.read_known_hosts(str(known)).match(address, "", port)
    return bool(keys[0] or keys[1])


class Jumps:
    """Builds the bastions of a run from the answers and ~/.ssh/config; hosts with the same bastion share its
    connection (one per HOSTS_PER_CONNECTION hosts)."""

    def __init__(
        self,
        settings: JumpSettings,
        default_user: str,
        default_identity: str | None,
        config_path: Path | None = None,
    ) -> None:
        self.settings = settings
        self.default_user = default_user
        self.default_identity = default_identity
        self.config_path = config_path or Path("~", ".ssh", "config").expanduser()
        try:
            text = self.config_path.read_text(encoding="utf-8", errors="replace").lower()
        except OSError:
            text = None
        self._config_readable = text is not None
        # Reading the config costs about 0.1 ms per line and host: without a ProxyJump (or an Include that may hold
        # one) no host needs it read for its bastion.
        self._may_jump = text is not None and ("proxyjump" in text or "include" in text)
        self._configs: dict[tuple[str, int | None, str | None], Any] = {}
        self._jumps: dict[tuple[tuple[Hop, ...], int], Jump] = {}
        self._hosts: dict[tuple[Hop, ...], int] = {}

    def for_host(self, spec: JumpHost | str | None, address: str, port: int, user: str) -> Jump | None:
        """The bastion of one host: ``spec`` from the answers (``"none"``: connect directly), else the ProxyJump
        ~/.ssh/config gives its address, else None."""
        if spec == "none":
            return None
        if isinstance(spec, JumpHost):
            last = self._hop(spec.address, spec.port, spec.user, spec.identity_file)
            chain = [*self._upstream(spec.address, {last}), last]
        elif self._may_jump:
            chain = self._proxy_jump(address, port, user, set())
        else:
            chain = []
        if not chain:
            return None
        key = tuple(chain)
        count = self._hosts.get(key, 0)
        self._hosts[key] = count + 1
        return self._jump(key, count // HOSTS_PER_CONNECTION)

    def _jump(self, chain: tuple[Hop, ...], shard: int) -> Jump:
        found = self._jumps.get((chain, shard))
        if found is None:
            via = self._jump(chain[:-1], 0) if len(chain) > 1 else None  # hops before the last carry one channel each
            found = self._jumps[(chain, shard)] = Jump(chain[-1], self.settings, via)
        return found

    def _proxy_jump(self, host: str, port: int | None, user: str | None, seen: set[Hop]) -> list[Hop]:
        config = self._config(host, port, user)
        value = config.get("ProxyJump") if config is not None else None
        if not value:
            return []
        hops: list[Hop] = []
        for part in str(value).split(","):
            try:
                hop_user, hop_host, hop_port = split_jump(part)
            except ValueError as exc:
                raise WizardError(f"{self.config_path}: ProxyJump for {host}: {exc}") from None
            hop = self._hop(hop_host, hop_port, hop_user, None)
            if hop in seen or len(seen) >= MAX_HOPS:
                raise WizardError(f"{self.config_path}: ProxyJump for {host} loops through {hop.label}")
            seen.add(hop)
            hops.append(hop)
        first = str(value).split(",")[0]
        return [*self._upstream(split_jump(first)[1], seen), *hops]

    def _upstream(self, alias: str, seen: set[Hop]) -> list[Hop]:
        """The bastions in front of a bastion: its own ProxyJump in ~/.ssh/config (as ``ssh -J`` follows it)."""
        return self._proxy_jump(alias, None, None, seen)

    def _hop(self, alias: str, port: int | None, user: str | None, identity: str | None) -> Hop:
        config = self._config(alias, port, user)
        get = config.get if config is not None else (lambda _key, default=None: default)
        files = [identity] if identity else list(get("IdentityFile", None) or [])
        if not files and self.default_identity:
            files = [self.default_identity]
        return Hop(
            address=str(get("Hostname", None) or alias),
            port=int(port or get("Port", None) or 22),
            username=str(user or get("User", None) or self.default_user),
            identity_files=tuple(files),
        )

    def _config(self, host: str, port: int | None, user: str | None) -> Any:
        if not self._config_readable:
            return None
        key = (host, port, user)
        if key not in self._configs:
            self._configs[key] = self._load(host, port, user)
        return self._configs[key]

    def _load(self, host: str, port: int | None, user: str | None) -> Any:
        from asyncssh.config import ConfigParseError, SSHClientConfig

        try:
            local = getpass.getuser()
        except (KeyError, OSError):
            local = "root"
        try:
            paths = [self.config_path]
            return SSHClientConfig.load(None, paths, False, False, False, local, user or (), host, port or ())
        except (ConfigParseError, OSError) as exc:
            raise WizardError(f"{self.config_path}: {exc}") from None
