"""Parser for ``mlxconfig -d <dev> [-e] q`` / ``mstconfig -d <dev> q``: firmware configuration per device."""

from __future__ import annotations

import re

from wizard.parsers.common import Parsed, ParseError

_DEVICE_RE = re.compile(r"^Device #(\d+):")
_FIELD_RE = re.compile(r"^(Device type|Name|Description|Device):\s*(.*?)\s*$")
_ROW_RE = re.compile(r"^(\*?)\s*([A-Z][A-Z0-9_]*(?:\[\d+\])?)\s{2,}(\S.*?)\s*$")
_CODE_RE = re.compile(r"\((-?\d+)\)$")
_COLUMNS = ("Default", "Current", "Next Boot", "New")


class MlxconfigDevice(Parsed):
    """One device of an mlxconfig query: identity plus each parameter's value per column."""

    device_type: str | None = None
    name: str | None = None
    description: str | None = None
    device: str | None = None
    columns: list[str] = []  # e.g. ["Next Boot"] (plain q) or ["Default", "Current", "Next Boot"] (-e q)
    values: dict[str, list[str]] = {}
    changed: list[str] = []  # rows marked '*': next boot differs from default/current

    def value(self, param: str, column: str = "Current") -> str | None:
        """The value of ``param`` in ``column``; falls back to the last column (Next Boot) when absent."""
        row = self.values.get(param)
        if not row:
            return None
        if column in self.columns and self.columns.index(column) < len(row):
            return row[self.columns.index(column)]
        return row[-1]

    def next_boot(self, param: str) -> str | None:
        return self.value(param, "Next Boot")


class MlxconfigQuery(Parsed):
    devices: list[MlxconfigDevice]


def config_code(value: str | None) -> int | None:
    """The number behind a value: ``ETH(2)`` -> 2, ``True(1)`` -> 1, ``8`` -> 8; None when there is none."""
    if value is None:
        return None
    text = value.strip()
    match = _CODE_RE.search(text)
    if match:
        return int(match.group(1))
    return int(text) if re.fullmatch(r"-?\d+", text) else None


def config_name(value: str | None) -> str | None:
    """The symbolic part of a value: ``IB(1)`` -> IB; plain ``ETH`` (older mstconfig) stays ETH."""
    if value is None:
        return None
    return _CODE_RE.sub("", value.strip()) or None


def parse_mlxconfig_q(text: str) -> MlxconfigQuery:
    """Parse a query; a body pasted without the device header (grep output) still yields one device."""
    if not text.strip():
        raise ParseError("empty input: no mlxconfig output")
    devices: list[MlxconfigDevice] = []
    current: dict | None = None
    for raw in text.replace("\r\n", "\n").split("\n"):
        line = raw.rstrip()
        stripped = line.strip()
        if not stripped or set(stripped) <= {"-"}:
            continue
        if _DEVICE_RE.match(stripped):
            current = _new(devices)
            continue
        field = _FIELD_RE.match(stripped)
        if field and not line.startswith((" ", "\t", "*")):
            current = current or _new(devices)
            current[_FIELD_KEYS[field.group(1)]] = field.group(2) or None
            continue
        if stripped.startswith("Configurations:"):
            current = current or _new(devices)
            header = stripped[len("Configurations:") :]
            current["columns"] = [c for c in _COLUMNS if c in header]
            continue
        row = _ROW_RE.match(line) if line.startswith((" ", "\t", "*")) else None
        if row:
            current = current or _new(devices)
            # values never contain blanks; "RO" marks read-only parameters (mstflint mlxconfig.cpp)
            current["values"][row.group(2)] = [v for v in row.group(3).split() if v != "RO"]
            if row.group(1):
                current["changed"].append(row.group(2))
    parsed = [MlxconfigDevice(**d) for d in devices if d["values"] or d.get("device_type")]
    if not parsed:
        raise ParseError("no mlxconfig device or configuration rows (e.g. '        SRIOV_EN    True(1)') found")
    return MlxconfigQuery(devices=parsed)


_FIELD_KEYS = {"Device type": "device_type", "Name": "name", "Description": "description", "Device": "device"}


def _new(devices: list[dict]) -> dict:
    entry: dict = {"columns": [], "values": {}, "changed": []}
    devices.append(entry)
    return entry
