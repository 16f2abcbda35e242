"""An inventory's hosts and variables resolved into answers-file host entries (`roce-wizard import inventory` and the
Hosts page's import dialog)."""

from __future__ import annotations

import ipaddress
import re
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from wizard.answers.inventory import CONNECTION_VARS, SECRET_VARS, Inventory
from wizard.errors import UsageError


@dataclass
class Imported:
    """Host entries (answers keys) for the chosen group, and one-line warnings about what was not copied."""

    hosts: list[dict[str, Any]] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)


def members(inv: Inventory, group: str) -> list[str]:
    """Hosts of ``group`` and of its child groups, in file order; ``all`` is every host."""
    if group not in inv.groups:
        known = ", ".join(sorted(inv.groups)) or "none"
        raise UsageError(f"--group {group}: no such group in the inventory; groups: {known}")
    if group == "all":
        return list(inv.host_vars)
    wanted: set[str] = set()
    stack, seen = [group], set()
    while stack:
        name = stack.pop()
        if name in seen:
            continue
        seen.add(name)
        wanted.update(inv.groups[name].hosts)
        stack.extend(inv.groups[name].children)
    return [h for h in inv.host_vars if h in wanted]


def _depths(inv: Inventory) -> dict[str, int]:
    """all is 0, a top-level group 1, a child one more than its deepest parent (child group vars win)."""
    parents: dict[str, list[str]] = {name: [] for name in inv.groups}
    for group in inv.groups.values():
        for child in group.children:
            parents.setdefault(child, []).append(group.name)
    depths: dict[str, int] = {"all": 0}

    def depth(name: str, trail: frozenset[str]) -> int:
        if name not in depths:
            above = [depth(p, trail | {name}) for p in parents.get(name, []) if p not in trail and p != "all"]
            depths[name] = 1 + max(above, default=0)
        return depths[name]

    for name in inv.groups:
        depth(name, frozenset())
    return depths


def host_variables(inv: Inventory, host: str, depths: dict[str, int]) -> dict[str, Any]:
    """Variables of one host as Ansible merges them: all, then parent groups before child groups (same depth:
    alphabetical), then the host's own variables, each later one winning."""
    direct = {g.name for g in inv.groups.values() if host in g.hosts}
    containing = set(direct)
    changed = True
    while changed:
        before = len(containing)
        containing |= {g.name for g in inv.groups.values() if set(g.children) & containing}
        changed = len(containing) != before
    merged: dict[str, Any] = dict(inv.groups["all"].vars)
    for name in sorted(containing - {"all"}, key=lambda n: (depths.get(n, 1), n)):
        merged.update(inv.groups[name].vars)
    merged.update(inv.host_vars.get(host, {}))
    return merged


def import_hosts(inv: Inventory, group: str = "all") -> Imported:
    """Answers host entries for ``group``: name, address (ansible_host or the name), user, port, identity_file.
    Passwords are never copied; a warning names the variables that were skipped."""
    result = Imported(warnings=list(inv.notes))
    depths = _depths(inv)
    skipped: Counter[str] = Counter()
    for name in members(inv, group):
        variables = host_variables(inv, name, depths)
        entry: dict[str, Any] = {"name": name}
        for key, names in CONNECTION_VARS.items():
            value = next((variables[n] for n in names if variables.get(n) not in (None, "")), None)
            if value is not None:
                entry[key] = int(value) if key == "port" and str(value).isdigit() else str(value)
        entry.setdefault("address", name)
        skipped.update(k for k in variables if k in SECRET_VARS)
        result.hosts.append(entry)
    if skipped:
        listing = ", ".join(f"{k} ({n} host{'s' if n > 1 else ''})" for k, n in sorted(skipped.items()))
        result.warnings.append(
            f"skipped {listing}: passwords never go into the answers file (use keys or an agent; sudo password from "
            "$ROCE_WIZARD_SUDO_PASSWORD or the prompt)"
        )
    if not result.hosts:
        raise UsageError(f"group {group} has no hosts")
    return result


def answers_text(imported: Imported, example: str, cluster: str, source: str) -> str:
    """The reference example's answers with its hosts replaced by the imported ones (every other section keeps its
    values and comments: review them before running)."""
    hosts = imported.hosts
    users = Counter(h.get("user") for h in hosts)
    common = next(iter(users)) if len(users) == 1 else None
    lines = [f"hosts:                          # {len(hosts)} hosts imported from {source}"]
    for host in hosts:
        lines.append(f"  - name: {host['name']}")
        for key in ("address", "port", "user", "identity_file"):
            if key in host and not (key == "user" and common is not None):
                lines.append(f"    {key}: {_scalar(host[key])}")
    body = example.split("\nversion:", 1)[1]
    body = re.sub(r"(?ms)^hosts:.*?(?=^\S)", "\n".join(lines) + "\n\n", body, count=1)
    body = re.sub(r"(?m)^  name: \S+ *", lambda m: f"  name: {cluster} ".ljust(len(m.group(0))), body, count=1)
    body = _rails_sized(body, len(hosts))
    if common is not None:
        body = re.sub(r"(?m)^(ssh:\n  user: )\S+", lambda m: m.group(1) + _scalar(common), body, count=1)
    header = (
        f"# roce-wizard answers: hosts imported from {source}; every other section is the reference example's\n"
        "# (network.rails, discovery expectations, inference): review them for this cluster before running.\n"
        "# No secrets are stored here.\n"
    )
    return header + "version:" + body


def _rails_sized(body: str, count: int) -> str:
    """The example's rails are /24s (254 hosts); more hosts get rails from 172.16.0.0/12 just large enough."""
    if count <= 254:
        return body
    prefix = 32 - (count + 1).bit_length()
    base = ipaddress.ip_network("172.16.0.0/12")
    subnets = iter(base.subnets(new_prefix=prefix))
    return re.sub(
        r"(?m)^(    - subnet: )\S+( *)#?",
        lambda m: f"{m.group(1)}{next(subnets)}{m.group(2)}# sized for {count} hosts;",
        body,
    )


def _scalar(value: Any) -> str:
    import yaml

    return yaml.safe_dump(value, default_style=None).removesuffix("\n...\n").strip()


def cluster_name(group: str, path: Path) -> str:
    """The cluster name an imported inventory gets: its group, else the file's stem, as a DNS-safe label."""
    base = group if group != "all" else path.stem
    name = re.sub(r"[^A-Za-z0-9-]+", "-", base).strip("-")
    return name or "cluster"
