"""The answers file: one validated model that both the TUI and headless mode run from."""

from __future__ import annotations

import hashlib
import ipaddress
import json
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator

from wizard import yamlio
from wizard.answer_sections import (
    DiscoverySection,
    GpuDirectSection,
    InferenceSection,
    NcclSection,
    NetworkSection,
    OfedSection,
    RoceSection,
    SafeApplySection,
)
from wizard.errors import AnswersError
from wizard.validators import HostAddress, Hostname, TcpPort

SUDO_PASSWORD_ENV = "ROCE_WIZARD_SUDO_PASSWORD"
_SECRET_WORDS = ("password", "passphrase", "secret", "token", "private_key")


class KeyProblem(ValueError):
    """A cross-field problem that knows which key it belongs to, so the message can name key and line."""

    def __init__(self, path: tuple[str | int, ...], message: str) -> None:
        self.path = path
        super().__init__(message)


class _Model(BaseModel):
    model_config = ConfigDict(extra="forbid", use_attribute_docstrings=True)


class ClusterSection(_Model):
    name: Hostname = "cluster"
    """Cluster name; names the state directory."""


class SshSection(_Model):
    user: str = Field(default="root", pattern=r"^[a-z_][a-z0-9_.-]{0,31}$")
    """Login user for hosts that do not set their own."""
    port: TcpPort = 22
    """SSH port for hosts that do not set their own."""
    identity_file: str | None = None
    """Private key file (path only; never the key). Default: ~/.ssh/config, the agent and the usual key files."""
    known_hosts: str | None = None
    """known_hosts file to verify host keys against. Default: ~/.ssh/known_hosts."""
    accept_new_host_keys: bool = False
    """Accept and record the key of a host not yet in known_hosts. A changed key is always refused."""
    connect_timeout_s: float = Field(default=10.0, gt=0, le=300)
    """Give up connecting after this many seconds."""
    keepalive_interval_s: float = Field(default=5.0, gt=0, le=300)
    """Keepalive probes so a dead connection fails within a few intervals instead of hanging."""
    command_timeout_s: float = Field(default=900.0, gt=0, le=86400)
    """Default limit for one remote command."""
    max_parallel_hosts: int = Field(default=64, ge=1, le=4096)
    """How many hosts are worked on at once."""
    sudo: Literal["nopasswd", "password"] = "nopasswd"
    """password: read it from $ROCE_WIZARD_SUDO_PASSWORD or prompt once; never stored or logged."""


class HostEntry(_Model):
    name: Hostname
    """Host name, used in state, logs and generated configuration."""
    address: HostAddress
    """Management address (or DNS name) that SSH connects to."""
    port: TcpPort | None = None
    """SSH port; default ssh.port."""
    user: str | None = Field(default=None, pattern=r"^[a-z_][a-z0-9_.-]{0,31}$")
    """Login user; default ssh.user."""
    identity_file: str | None = None
    """Private key file for this host (path only; never the key). Default: ssh.identity_file."""
    host_id: int | None = Field(default=None, ge=1, le=65534)
    """Host part of this host's address in every rail subnet. Default: position in the list + 1."""


class Answers(_Model):
    version: Literal[1]
    """Answers file format version."""
    cluster: ClusterSection = Field(default_factory=ClusterSection)
    ssh: SshSection = Field(default_factory=SshSection)
    hosts: list[HostEntry] = Field(min_length=1)
    """The hosts to bring up."""
    discovery: DiscoverySection = Field(default_factory=DiscoverySection)
    ofed: OfedSection = Field(default_factory=OfedSection)
    network: NetworkSection = Field(default_factory=NetworkSection)
    safe_apply: SafeApplySection = Field(default_factory=SafeApplySection)
    roce: RoceSection = Field(default_factory=RoceSection)
    gpudirect: GpuDirectSection = Field(default_factory=GpuDirectSection)
    nccl: NcclSection = Field(default_factory=NcclSection)
    inference: InferenceSection = Field(default_factory=InferenceSection)

    def host_id(self, name: str) -> int:
        """The host's number inside rail subnets."""
        for index, host in enumerate(self.hosts):
            if host.name == name:
                return host.host_id if host.host_id is not None else index + 1
        raise KeyError(name)

    @model_validator(mode="after")
    def _cross_checks(self) -> Answers:
        _unique(self.hosts, "name", "hosts")
        endpoints = [(h.address, h.port or self.ssh.port) for h in self.hosts]
        for index, endpoint in enumerate(endpoints):
            if endpoint in endpoints[:index]:
                first = endpoints.index(endpoint)
                raise KeyProblem(
                    ("hosts", index, "address"),
                    f"duplicate address {endpoint[0]!r} port {endpoint[1]} (also in entry {first})",
                )
        _unique([h for h in self.hosts if h.host_id is not None], "host_id", "hosts")
        ids = [self.host_id(h.name) for h in self.hosts]
        if len(set(ids)) != len(ids):
            raise KeyProblem(("hosts",), "two hosts get the same host_id (set host_id explicitly on each host)")
        subnets = [("network.rails", i, r.subnet) for i, r in enumerate(self.network.rails)]
        subnets += [("network.bonds", i, b.subnet) for i, b in enumerate(self.network.bonds)]
        _no_overlaps(subnets)
        _hosts_fit(subnets, max(ids))
        _management_outside_rails(self.hosts, subnets)
        allowed = self.network.allow_management_changes
        names = {h.name for h in self.hosts}
        for index, name in enumerate(allowed if isinstance(allowed, list) else []):
            if name not in names:
                raise KeyProblem(("network", "allow_management_changes", index), f"{name!r} is not one of the hosts")
        return self

    def digest(self) -> str:
        """Stable hash of the answers' content: state remembers which answers produced it."""
        canonical = json.dumps(self.model_dump(mode="json"), sort_keys=True)
        return hashlib.sha256(canonical.encode()).hexdigest()


def _unique(items: list[Any], attr: str, where: str) -> None:
    seen: dict[Any, int] = {}
    for index, item in enumerate(items):
        value = getattr(item, attr)
        if value in seen:
            raise KeyProblem((where, index, attr), f"duplicate {attr} {value!r} (also in entry {seen[value]})")
        seen[value] = index


def _no_overlaps(subnets: list[tuple[str, int, str]]) -> None:
    nets = [(where, i, ipaddress.ip_network(s)) for where, i, s in subnets]
    for a, (wa, ia, na) in enumerate(nets):
        for wb, ib, nb in nets[a + 1 :]:
            if na.version == nb.version and na.overlaps(nb):
                raise KeyProblem((*_split(wb), ib, "subnet"), f"{nb} overlaps {wa}[{ia}].subnet {na}")


def _hosts_fit(subnets: list[tuple[str, int, str]], highest_id: int) -> None:
    for where, index, subnet in subnets:
        net = ipaddress.ip_network(subnet)
        if highest_id > net.num_addresses - 2:
            raise KeyProblem((*_split(where), index, "subnet"), f"{net} has no room for host id {highest_id}")


def _management_outside_rails(hosts: list[HostEntry], subnets: list[tuple[str, int, str]]) -> None:
    for host_index, host in enumerate(hosts):
        try:
            address = ipaddress.ip_address(host.address)
        except ValueError:
            continue
        for where, index, subnet in subnets:
            if address in ipaddress.ip_network(subnet):
                raise KeyProblem(
                    ("hosts", host_index, "address"),
                    f"management address {address} of {host.name} lies inside {where}[{index}].subnet "
                    f"{subnet}; rail subnets must not overlap the management network",
                )


def _split(dotted: str) -> tuple[str, ...]:
    return tuple(dotted.split("."))


def load_answers(path: Path) -> Answers:
    """Read and validate an answers file; raises :class:`AnswersError` naming every bad key and its line."""
    source = str(path)
    try:
        text = yamlio.read_text(path)
    except OSError as exc:
        raise AnswersError([f"cannot read file ({exc.strerror or exc})"], source) from None
    return parse_answers(text, source)


def parse_answers(text: str, source: str = "answers") -> Answers:
    """Validate answers given as YAML text."""
    try:
        data, lines = yamlio.load_with_lines(text)
    except yamlio.YamlSyntaxError as exc:
        raise AnswersError([str(exc)], source) from None
    if not isinstance(data, dict):
        raise AnswersError(["the file must be a mapping with version, cluster, hosts, ... at the top level"], source)
    try:
        return Answers.model_validate(data)
    except ValidationError as exc:
        raise AnswersError([_describe(err, lines) for err in exc.errors()], source) from None


def _describe(error: Any, lines: dict[yamlio.KeyPath, int]) -> str:
    loc = tuple(error["loc"])
    cause = (error.get("ctx") or {}).get("error")
    if isinstance(cause, KeyProblem):
        loc = loc + cause.path
    path = _key_path(loc)
    line = yamlio.line_of(lines, loc)
    where = f"{path or '(top level)'}" + (f" (line {line})" if line else "")
    message = error["msg"].removeprefix("Value error, ")
    if error["type"] == "extra_forbidden":
        key = str(loc[-1]).lower()
        if any(word in key for word in _SECRET_WORDS):
            message = (
                "secrets do not belong in the answers file; use an SSH agent or key file, and "
                f"${SUDO_PASSWORD_ENV} or the prompt for sudo"
            )
        else:
            message = "unknown key"
    elif error["type"] == "missing":
        message = "required key is missing"
    return f"{where}: {message}"


def _key_path(loc: tuple[Any, ...]) -> str:
    parts: list[str] = []
    for item in loc:
        if isinstance(item, int):
            parts.append(f"[{item}]")
        else:
            parts.append(("." if parts else "") + str(item))
    return "".join(parts)


def answers_schema() -> dict[str, Any]:
    """JSON Schema of the answers file."""
    return Answers.model_json_schema()
