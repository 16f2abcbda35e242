"""The answers file: one validated model that both the TUI and headless mode run from."""

from __future__ import annotations

import hashlib
import ipaddress
import json
from pathlib import Path
from typing import Any, Literal

import yaml
from pydantic import BaseModel, ConfigDict, Field, ValidationError, ValidationInfo, model_validator

from wizard.answers import ranges as host_ranges
from wizard.answers import yamlio
from wizard.answers.fabric import FabricSection
from wizard.answers.numbering import (
    HostPaths,
    gateway_ids,
    hosts_fit,
    management_outside_rails,
    no_gateway_ids,
    number_hosts,
)
from wizard.answers.ranges import KeyProblem
from wizard.answers.sections import (
    DiscoverySection,
    GpuDirectSection,
    InferenceSection,
    JumpHost,
    NcclSection,
    NetworkSection,
    OfedSection,
    RoceSection,
    SafeApplySection,
)
from wizard.answers.switches import SwitchesSection
from wizard.answers.validation import ValidationSection
from wizard.answers.validators import HostAddress, Hostname, TcpPort
from wizard.errors import AnswersError

SUDO_PASSWORD_ENV = "ROCE_WIZARD_SUDO_PASSWORD"
_SECRET_WORDS = ("password", "passphrase", "secret", "token", "private_key")


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
    jump_host: JumpHost | None = None
    """Bastion every host is reached through: `[user@]address[:port]` or a mapping (address, port, user,
    identity_file). One SSH connection to it carries the hosts' connections as tunnelled channels (a new one per
    256 hosts), with keepalives, and is reopened when it drops. Default: none, or the ProxyJump that ~/.ssh/config
    gives a host's address (chains `a,b` too)."""


class HostEntry(_Model):
    """One host. An entry may name many: `name: gpu[001-256]` with `address: 10.0.[0-1].[1-128]` (the same number of
    addresses, expanded in the same order, leftmost range slowest) or `address_start: 10.0.0.11` (consecutive
    addresses), and `host_id_start` instead of host_id; port, user and identity_file are shared by every host of the
    range. Ranges are expanded before validation (wizard.answers.ranges), so a loaded HostEntry is always one host."""

    name: Hostname
    """Host name, used in state, logs and generated configuration. A range such as gpu[001-256] or r[1-2]n[01-16]
    names one host per value (zero padding kept)."""
    address: HostAddress
    """Management address (or DNS name) that SSH connects to. With a name range: a pattern giving as many addresses
    (10.0.[0-1].[1-128]), or address_start instead (consecutive addresses from it)."""
    port: TcpPort | None = None
    """SSH port; default ssh.port."""
    user: str | None = Field(default=None, pattern=r"^[a-z_][a-z0-9_.-]{0,31}$")
    """Login user; default ssh.user."""
    identity_file: str | None = None
    """Private key file for this host (path only; never the key). Default: ssh.identity_file."""
    jump_host: Literal["none"] | JumpHost | None = Field(default=None, union_mode="left_to_right")
    """Bastion for this host, as ssh.jump_host; `none` connects directly even where ssh.jump_host or ~/.ssh/config
    name one. Default: ssh.jump_host."""
    host_id: int | None = Field(default=None, ge=1, le=65534)
    """Host part of this host's address in every rail and bond subnet (rail address = subnet + host_id). Default:
    the next number counting from 1 in list order, skipping any number that is a rail gateway's host part, so no
    host ever gets a gateway's address; subnet address and broadcast are never reached (host ids run from 1 to the
    subnet's size minus 2, and a subnet too small for the hosts is refused with the numbers). Explicit values are
    used as given and refused when one is a rail gateway's host part. A range takes host_id_start instead."""


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
    switches: SwitchesSection = Field(default_factory=SwitchesSection)
    """The leaf and spine switches, for `switch-config` (the wizard never logs into a switch)."""
    fabric: FabricSection = Field(default_factory=FabricSection)
    """The RDMA link layer (RoCE or InfiniBand) and node groups."""
    validation: ValidationSection = Field(default_factory=ValidationSection)
    """Pass marks of the bandwidth tests (bwtest, verify) and of `bwtest --compare`."""

    def expect_speed_gbps(self, host: str) -> int | None:
        """The link rate the host's RDMA ports must run at: its node group's, else discovery's."""
        group = self.fabric.group_of(host)
        if group is not None and group.expect_link_speed_gbps is not None:
            return group.expect_link_speed_gbps
        return self.discovery.expect_link_speed_gbps

    def host_id(self, name: str) -> int:
        """The host's number inside rail subnets."""
        return self.host_ids()[name]

    def host_ids(self) -> dict[str, int]:
        """Every host's number inside rail subnets (see HostEntry.host_id), in host order."""
        # Keyed by identity: stages ask once per host, and recounting 1,000 hosts each time adds up. Answers are
        # replaced, not edited in place, so a new host list or network section is a new object. Kept in __dict__
        # outside the fields, which model equality and dumps ignore.
        key = (id(self.hosts), len(self.hosts), id(self.network))
        cached = self.__dict__.get("_host_ids")
        if cached is None or cached[0] != key:
            cached = self.__dict__["_host_ids"] = (key, number_hosts(self.hosts, gateway_ids(self.network.rails)))
        return cached[1]

    @model_validator(mode="before")
    @classmethod
    def _expand_ranges(cls, data: Any, info: ValidationInfo) -> Any:
        if not isinstance(data, dict) or not isinstance(data.get("hosts"), list):
            return data
        entries = data["hosts"]
        if not any(host_ranges.is_range_entry(e) for e in entries):
            return data
        ssh = data.get("ssh")
        port = ssh.get("port", 22) if isinstance(ssh, dict) else 22
        hosts, sources = host_ranges.expand_hosts(entries, port)
        _shared_keys_valid(hosts, sources, entries)
        if isinstance(info.context, dict):
            info.context["host_ranges"] = (entries, sources)
        return {**data, "hosts": hosts}

    @model_validator(mode="after")
    def _cross_checks(self, info: ValidationInfo) -> Answers:
        ranges = info.context.get("host_ranges") if isinstance(info.context, dict) else None
        at = HostPaths(*ranges) if ranges else HostPaths()
        _unique(self.hosts, "name", "hosts")
        endpoints: dict[tuple[str, int], int] = {}
        for index, host in enumerate(self.hosts):
            endpoint = (host.address, host.port or self.ssh.port)
            if endpoint in endpoints:
                raise KeyProblem(
                    at(index, "address"),
                    f"duplicate address {endpoint[0]!r} port {endpoint[1]} (also in entry {endpoints[endpoint]})",
                )
            endpoints[endpoint] = index
        _unique([h for h in self.hosts if h.host_id is not None], "host_id", "hosts")
        ids = list(self.host_ids().values())
        if len(set(ids)) != len(ids):
            raise KeyProblem(("hosts",), "two hosts get the same host_id (set host_id explicitly on each host)")
        no_gateway_ids(self.hosts, self.network.rails, at)
        subnets = [("network.rails", i, r.subnet) for i, r in enumerate(self.network.rails)]
        subnets += [("network.bonds", i, b.subnet) for i, b in enumerate(self.network.bonds)]
        _no_overlaps(subnets)
        hosts_fit(self.hosts, self.host_ids(), self.network.rails, subnets, at)
        management_outside_rails(self.hosts, subnets, at)
        allowed = self.network.allow_management_changes
        names = {h.name for h in self.hosts}
        for index, name in enumerate(allowed if isinstance(allowed, list) else []):
            if name not in names:
                raise KeyProblem(("network", "allow_management_changes", index), f"{name!r} is not one of the hosts")
        for gi, group in enumerate(self.fabric.groups):
            for hi, name in enumerate(group.hosts):
                if name not in names:
                    raise KeyProblem(("fabric", "groups", gi, "hosts", hi), f"{name!r} is not one of the hosts")
        if ranges:
            host_ranges.remember(ranges[0], [h.model_dump(mode="json", exclude_none=True) for h in self.hosts])
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


def _shared_keys_valid(hosts: list[Any], sources: list[int], entries: list[Any]) -> None:
    """A range's shared keys (port, user, ...) are checked once, against its entry, not once per expanded host."""
    seen: set[int] = set()
    for host, src in zip(hosts, sources, strict=True):
        if src in seen or not host_ranges.is_range_entry(entries[src]):
            continue
        seen.add(src)
        try:
            HostEntry.model_validate(host)
        except ValidationError as exc:
            error = exc.errors()[0]
            message = _unknown_key(error["loc"][-1]) if error["type"] == "extra_forbidden" else error["msg"]
            raise KeyProblem(("hosts", src, *error["loc"]), message) from None


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
        _no_aliases(text)
        data, lines = yamlio.load_with_lines(text)
    except yamlio.YamlSyntaxError as exc:
        raise AnswersError([str(exc)], source) from None
    if not isinstance(data, dict):
        raise AnswersError(["the file must be a mapping with version, cluster, hosts, ... at the top level"], source)
    try:
        # The context lets errors about an expanded host name its range entry, and a save keep the ranges.
        return Answers.model_validate(data, context={})
    except ValidationError as exc:
        raise AnswersError([_describe(err, lines) for err in exc.errors()], source) from None


def _no_aliases(text: str) -> None:
    """Refuse YAML aliases (*name): a self-referencing one makes an endless structure and a fan of them a huge one."""
    try:
        for event in yaml.parse(text, Loader=yaml.SafeLoader):
            if isinstance(event, yaml.AliasEvent):
                line = event.start_mark.line + 1 if event.start_mark else "?"
                raise yamlio.YamlSyntaxError(
                    f"line {line}: YAML alias *{event.anchor} is not accepted in an answers file (write the value out)"
                )
    except yaml.YAMLError:
        return  # the full load below reports the syntax error with its line


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
        message = _unknown_key(loc[-1])
    elif error["type"] == "missing":
        message = "required key is missing"
    return f"{where}: {message}"


def _unknown_key(key: Any) -> str:
    if any(word in str(key).lower() for word in _SECRET_WORDS):
        return (
            "secrets do not belong in the answers file; use an SSH agent or key file, and "
            f"${SUDO_PASSWORD_ENV} or the prompt for sudo"
        )
    return "unknown key"


def _key_path(loc: tuple[Any, ...]) -> str:
    parts: list[str] = []
    for item in loc:
        if isinstance(item, int):
            parts.append(f"[{item}]")
        else:
            text = str(item)
            # A key with a newline or control character would break the one-line message (or forge another line).
            parts.append(("." if parts else "") + (text if text.isprintable() and text else repr(text)))
    return "".join(parts)


def answers_schema() -> dict[str, Any]:
    """JSON Schema of the answers file."""
    return Answers.model_json_schema()
