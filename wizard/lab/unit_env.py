"""The environment of a simulated systemd unit: EnvironmentFile=, Environment= and ${VAR} in command lines."""

from __future__ import annotations

import re
from typing import TYPE_CHECKING

from wizard.lab.vfs import FsError

if TYPE_CHECKING:
    from wizard.lab.host import SimHost
    from wizard.lab.services import Unit


def unit_environment(host: SimHost, unit: Unit) -> dict[str, str]:
    """Variables from EnvironmentFile= (a missing "-" file is skipped) and Environment=, later ones winning."""
    env: dict[str, str] = {}
    for path in unit.all("Service", "EnvironmentFile"):
        try:
            text = host.fs.read_text(path.lstrip("-"))
        except FsError:
            continue
        for raw in text.splitlines():
            key, sep, value = raw.strip().partition("=")
            if sep and not key.startswith(("#", ";")):
                env[key.strip()] = value.strip().strip('"')
    for assignment in unit.all("Service", "Environment"):
        for word in assignment.split():
            key, sep, value = word.strip('"').partition("=")
            if sep:
                env[key] = value
    return env


def expand(host: SimHost, unit: Unit, line: str) -> str:
    """${VAR} in an ExecStart= line, substituted from the unit's environment as systemd does (systemd.service(5),
    "Command lines": "${FOO}" is replaced by the variable's value; unset variables become empty)."""
    if "${" not in line:
        return line
    env = unit_environment(host, unit)
    return re.sub(r"\$\{([A-Za-z_][A-Za-z0-9_]*)\}", lambda m: env.get(m.group(1), ""), line)
