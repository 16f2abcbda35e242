"""Hosts from an Ansible inventory (INI or YAML) or the Host blocks of an ssh_config, for the answers file."""

from __future__ import annotations

import ast
import fnmatch
import re
import shlex
from dataclasses import dataclass, field
from typing import Any, Literal

import yaml

from wizard.answers import ranges as host_ranges
from wizard.errors import UsageError

Format = Literal["ini", "yaml", "ssh_config"]
# Connection variables the answers keep, by answers key; the older ansible_ssh_* spellings are still read.
CONNECTION_VARS = {
    "address": ("ansible_host", "ansible_ssh_host"),
    "user": ("ansible_user", "ansible_ssh_user"),
    "port": ("ansible_port", "ansible_ssh_port"),
    "identity_file": ("ansible_ssh_private_key_file", "ansible_private_key_file"),
}
SECRET_VARS = (
    "ansible_password",
    "ansible_ssh_pass",
    "ansible_ssh_password",
    "ansible_become_password",
    "ansible_become_pass",
    "ansible_sudo_pass",
    "ansible_sudo_password",
)


@dataclass
class Group:
    name: str
    hosts: list[str] = field(default_factory=list)
    children: list[str] = field(default_factory=list)
    vars: dict[str, Any] = field(default_factory=dict)


@dataclass
class Inventory:
    """Groups and per-host variables in file order; ``notes`` say what was left out and why."""

    groups: dict[str, Group] = field(default_factory=dict)
    host_vars: dict[str, dict[str, Any]] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)

    def group(self, name: str) -> Group:
        return self.groups.setdefault(name, Group(name))

    def add_host(self, group: str, name: str, variables: dict[str, Any]) -> None:
        members = self.group(group).hosts
        if name not in members:
            members.append(name)
        self.host_vars.setdefault(name, {}).update(variables)


def detect_format(text: str, filename: str = "") -> Format:
    """ssh_config when the first keyword is Host or Match, YAML for .yml/.yaml or a YAML mapping, INI otherwise."""
    lower = filename.lower()
    if lower.endswith((".yml", ".yaml")):
        return "yaml"
    for line in text.splitlines():
        stripped = line.strip()
        if not stripped or stripped.startswith(("#", ";")):
            continue
        if stripped.split(None, 1)[0].split("=")[0].lower() in ("host", "match", "include"):
            return "ssh_config"
        if stripped.startswith("["):
            return "ini"
        break
    try:
        data = yaml.safe_load(text)
    except yaml.YAMLError:
        return "ini"
    return "yaml" if isinstance(data, dict) else "ini"


def _names(pattern: str, where: str) -> list[str]:
    """An inventory host pattern with Ansible's ranges: gpu[01:16], db-[a:f], web[1:9:2]."""
    try:
        return host_ranges.expand(pattern, sep=":", stride=True)
    except ValueError as exc:
        raise UsageError(f"{where}: {exc}") from None


def _literal(value: str) -> Any:
    """A host-line value, read as Ansible does (a Python literal when it is one, else the string)."""
    try:
        return ast.literal_eval(value)
    except (ValueError, SyntaxError):
        return value


def parse_ini(text: str, source: str = "inventory") -> Inventory:
    """An Ansible INI inventory: [group], [group:vars], [group:children], hosts outside a section are ungrouped."""
    inv = Inventory()
    inv.group("all")
    section, kind = "ungrouped", "hosts"
    for number, raw in enumerate(text.splitlines(), 1):
        line = raw.strip()
        where = f"{source} line {number}"
        if not line or line.startswith(("#", ";")):
            continue
        if line.startswith("[") and line.endswith("]"):
            section, _, kind = line[1:-1].strip().partition(":")
            kind = kind or "hosts"
            if kind not in ("hosts", "vars", "children"):
                raise UsageError(f"{where}: [{line[1:-1]}] is not a group, group:vars or group:children section")
            inv.group(section)
            continue
        if kind == "vars":
            key, sep, value = line.partition("=")
            if not sep:
                raise UsageError(f"{where}: a [{section}:vars] line must be key=value, got {line!r}")
            inv.group(section).vars[key.strip()] = value.strip()  # :vars values are strings
        elif kind == "children":
            child = line.split()[0]
            inv.group(child)
            if child not in inv.group(section).children:
                inv.group(section).children.append(child)
        else:
            _host_line(inv, section, line, where)
    return inv


def _host_line(inv: Inventory, group: str, line: str, where: str) -> None:
    try:
        tokens = shlex.split(line, comments=True)
    except ValueError as exc:
        raise UsageError(f"{where}: {exc}") from None
    if not tokens:
        return
    pattern, variables = tokens[0], {}
    for token in tokens[1:]:
        key, sep, value = token.partition("=")
        if not sep:
            raise UsageError(f"{where}: host variable {token!r} is not key=value")
        variables[key] = _literal(value)
    # host:port, as in badwolf.example.com:5309 (a colon inside brackets belongs to a range).
    head, sep, port = pattern.rpartition(":")
    if sep and port.isdigit() and "]" not in port and head.count("[") == head.count("]"):
        pattern = head
        variables.setdefault("ansible_port", int(port))
    for name in _names(pattern, where):
        inv.add_host(group, name, variables)


def parse_yaml(text: str, source: str = "inventory") -> Inventory:
    """An Ansible YAML inventory: groups with hosts (mapping of name -> vars), vars and children, nested."""
    try:
        data = yaml.safe_load(text)
    except yaml.YAMLError as exc:
        raise UsageError(f"{source}: invalid YAML ({str(exc).splitlines()[0]})") from None
    if not isinstance(data, dict):
        raise UsageError(f"{source}: a YAML inventory is a mapping of groups (all: {{hosts: ..., children: ...}})")
    inv = Inventory()
    inv.group("all")
    for name, body in data.items():
        _yaml_group(inv, str(name), body, source)
    return inv


def _yaml_group(inv: Inventory, name: str, body: Any, source: str) -> None:
    group = inv.group(name)
    if body is None:
        return
    if not isinstance(body, dict):
        raise UsageError(f"{source}: group {name} must be a mapping with hosts, vars or children")
    for pattern, variables in (body.get("hosts") or {}).items():
        for host in _names(str(pattern), f"{source}: group {name}"):
            inv.add_host(name, host, dict(variables or {}))
    group.vars.update(body.get("vars") or {})
    for child, child_body in (body.get("children") or {}).items():
        if str(child) not in group.children:
            group.children.append(str(child))
        _yaml_group(inv, str(child), child_body, source)


def parse_ssh_config(text: str, source: str = "ssh_config") -> Inventory:
    """Concrete Host aliases of an ssh_config with HostName, User, Port and IdentityFile, first value winning as in
    ssh itself (so a trailing `Host *` block gives defaults). Wildcard patterns are not hosts; Match blocks and
    Include lines are left out with a note."""
    blocks: list[tuple[list[str], dict[str, str]]] = []
    current: dict[str, str] | None = None
    for number, raw in enumerate(text.splitlines(), 1):
        line = raw.strip()
        if not line or line.startswith("#"):
            continue
        match = re.match(r"([A-Za-z]+)\s*(?:=\s*|\s+)(.*)", line)
        key, value = (match.group(1).lower(), match.group(2).strip().strip('"')) if match else (line.lower(), "")
        if key == "host":
            current = {}
            blocks.append((value.split(), current))
        elif key == "match":
            current = None
            note = f"{source} line {number}: Match blocks are not read (only Host blocks); check those hosts by hand"
            blocks.append(([], {"#note": note}))
        elif key == "include":
            blocks.append(([], {"#note": f"{source} line {number}: Include {value} is not followed"}))
        elif current is not None and key in ("hostname", "user", "port", "identityfile"):
            current.setdefault(key, value)
    inv = Inventory()
    inv.group("all")
    inv.notes = [b[1]["#note"] for b in blocks if "#note" in b[1]]
    aliases = [p for patterns, _ in blocks for p in patterns if not any(c in p for c in "*?!")]
    for alias in dict.fromkeys(aliases):
        found: dict[str, str] = {}
        for patterns, options in blocks:
            if _ssh_matches(alias, patterns):
                for k, v in options.items():
                    found.setdefault(k, v)
        variables: dict[str, Any] = {"ansible_host": found.get("hostname", alias).replace("%h", alias)}
        if "user" in found:
            variables["ansible_user"] = found["user"]
        if "port" in found:
            variables["ansible_port"] = int(found["port"]) if found["port"].isdigit() else found["port"]
        if "identityfile" in found:
            variables["ansible_ssh_private_key_file"] = found["identityfile"]
        inv.add_host("ungrouped", alias, variables)
    return inv


def _ssh_matches(alias: str, patterns: list[str]) -> bool:
    matched = False
    for pattern in patterns:
        if pattern.startswith("!"):
            if fnmatch.fnmatchcase(alias, pattern[1:]):
                return False
        elif fnmatch.fnmatchcase(alias, pattern):
            matched = True
    return matched


def parse_inventory(text: str, fmt: Format, source: str = "inventory") -> Inventory:
    """Dispatch to the parser of ``fmt``."""
    parser = {"ini": parse_ini, "yaml": parse_yaml, "ssh_config": parse_ssh_config}[fmt]
    return parser(text, source)
