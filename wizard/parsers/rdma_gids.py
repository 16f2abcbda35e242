"""Parsers for RoCE GID tables (show_gids, sysfs) and the RDMA-CM default RoCE mode (cma_roce_mode)."""

from __future__ import annotations

import ipaddress
import re
from typing import Literal

from wizard.parsers._text import command_arg, prompt_command, require_lines
from wizard.parsers.common import Parsed, ParseError

GidVersion = Literal["v1", "v2"]


class GidEntry(Parsed):
    """One populated GID; ``device``/``port``/``gid`` are None only when the paste did not show them."""

    device: str | None
    port: int | None
    index: int
    gid: str | None
    ipv4: str | None = None
    version: GidVersion | None = None
    netdev: str | None = None


class GidTable(Parsed):
    """Populated GIDs of one or more RDMA ports, in printed order."""

    entries: list[GidEntry]

    def roce_v2_ipv4(self, device: str, port: int = 1) -> list[GidEntry]:
        """Return the RoCE v2 GIDs of ``device`` port ``port`` that carry an IPv4 address, by index."""
        found = [
            e
            for e in self.entries
            if e.device == device and e.port == port and e.version == "v2" and e.ipv4 is not None
        ]
        return sorted(found, key=lambda e: e.index)

    def for_port(self, device: str, port: int = 1) -> list[GidEntry]:
        """Return every GID of ``device`` port ``port``, by index."""
        return sorted((e for e in self.entries if e.device == device and e.port == port), key=lambda e: e.index)


_ZERO_GID = re.compile(r"^[0:]+$")


def is_gid(value: str) -> bool:
    """Tell whether ``value`` is a GID (an IPv6-formatted 128-bit value, full or compressed)."""
    try:
        ipaddress.IPv6Address(value)
    except ValueError:
        return False
    return True


def gid_ipv4(gid: str) -> str | None:
    """Return the IPv4 address of an IPv4-mapped GID (`::ffff:a.b.c.d`), else None."""
    try:
        mapped = ipaddress.IPv6Address(gid).ipv4_mapped
    except ValueError:
        return None
    return str(mapped) if mapped is not None else None


def gid_version(gid_type: str | None) -> GidVersion | None:
    """Map a sysfs/show_gids GID type ('IB/RoCE v1', 'RoCE v2', 'v2') to 'v1'/'v2'."""
    if not gid_type:
        return None
    match = re.search(r"v([12])\b", gid_type, re.IGNORECASE)
    return "v1" if match and match.group(1) == "1" else ("v2" if match else None)


# --------------------------------------------------------------------------------------------- show_gids

_SHOW_GIDS_HEADER = re.compile(r"^\s*DEV\s+PORT\s+INDEX\s+GID\b")
_IPV4 = re.compile(r"^\d{1,3}(?:\.\d{1,3}){3}$")


def _show_gids_row(words: list[str]) -> GidEntry | None:
    if len(words) < 4 or not words[1].isdigit() or not words[2].isdigit() or not is_gid(words[3]):
        return None
    rest = words[4:]
    ipv4 = rest.pop(0) if rest and _IPV4.match(rest[0]) else None
    version = gid_version(rest.pop(0)) if rest and re.fullmatch(r"[vV][12]", rest[0]) else None
    return GidEntry(
        device=words[0],
        port=int(words[1]),
        index=int(words[2]),
        gid=words[3],
        ipv4=ipv4 or gid_ipv4(words[3]),
        version=version,
        netdev=rest[0] if rest else None,
    )


def parse_show_gids(text: str) -> GidTable:
    """Parse MLNX_OFED/DOCA `show_gids` (tab or space columns, empty IPv4/DEV cells, n_gids_found line)."""
    lines = require_lines(text, "show_gids")
    header = any(_SHOW_GIDS_HEADER.match(line) for line in lines)
    entries = [row for row in (_show_gids_row(line.split()) for line in lines) if row is not None]
    if not header and not entries:
        raise ParseError("no 'DEV PORT INDEX GID' header or GID row: not show_gids output")
    return GidTable(entries=entries)


# --------------------------------------------------------------------------------------------- sysfs GIDs

# `grep -sH . /sys/class/infiniband/*/ports/*/{gids,gid_attrs/types,gid_attrs/ndevs}/*` -> PATH:VALUE
_SYSFS_LINE = re.compile(
    r"^\s*(?:\S*?/)?(?:(?P<dev>[^/\s]+)/ports/(?P<port>\d+)/)?"
    r"(?P<kind>gids|gid_attrs/types|gid_attrs/ndevs)/(?P<index>\d+):\s?(?P<value>.*?)\s*$"
)
# An author's loop: `index=0 gid=fe80:... type=IB/RoCE v1 netdev=bond1` (dev=/port= when printed).
_LOOP_KV = re.compile(r"\b(index|gid|type|netdev|ndev|dev|device|port)=(\S+(?: v[12]\b)?)")
# An author's loop: `0: IB/RoCE v1` (types), `3: 0000:...:0b01` (gids) or `3: ens1f0np0` (ndevs).
_LOOP_INDEXED = re.compile(r"^\s*(\d+):\s+(\S.*?)\s*$")
_TYPE_VALUE = re.compile(r"^(?:IB/)?RoCE v[12]$|^IB$", re.IGNORECASE)

_Key = tuple[str | None, int | None, int]


def _merge(table: dict[_Key, dict[str, str]], key: _Key, field: str, value: str) -> None:
    table.setdefault(key, {})[field] = value


_ZERO_VALUE = ":" + ":".join(["0000"] * 8)


def _zero_sysfs_key(line: str) -> _Key | None:
    """The key of a `.../DEV/ports/N/gids/I:0000:...:0000` line of `grep -sH`, None for any other form. Eight ports'
    tables are 2,000 lines a host, nearly all empty slots; the general pattern below took a tenth of the wizard's
    CPU reading a thousand hosts' facts."""
    parts = line[: -len(_ZERO_VALUE)].strip().split("/")
    if len(parts) < 2 or parts[-2] != "gids" or not parts[-1].isdigit():
        return None
    index = int(parts[-1])
    if len(parts) >= 5 and parts[-4] == "ports" and parts[-3].isdigit():
        return (parts[-5] or None, int(parts[-3]), index)
    return (None, None, index)


def parse_sysfs_gids(text: str) -> GidTable:
    """Join sysfs `gids/N`, `gid_attrs/types/N` and `gid_attrs/ndevs/N` values by (device, port, index).

    The primary input is `grep -sH .` over the three sysfs trees; the loop formats pasted by hand
    (`index=N gid=... type=... netdev=...` and `N: value`) are read as well. All-zero GIDs are dropped.
    """
    lines = require_lines(text, "sysfs GID")
    table: dict[_Key, dict[str, str]] = {}
    zeros: set[_Key] = set()
    fields = {"gids": "gid", "gid_attrs/types": "type", "gid_attrs/ndevs": "netdev"}
    for line in lines:
        if line.endswith(_ZERO_VALUE) and (key := _zero_sysfs_key(line)) is not None:
            zeros.add(key)  # most of a table is empty slots: told apart without the general pattern
        elif match := _SYSFS_LINE.match(line):
            port = match.group("port")
            key = (match.group("dev"), int(port) if port else None, int(match.group("index")))
            _merge(table, key, fields[match.group("kind")], match.group("value"))
        elif "index=" in line and (pairs := dict(_LOOP_KV.findall(line))).get("index", "").isdigit():
            device = pairs.get("dev") or pairs.get("device")
            port = pairs.get("port")
            key = (device, int(port) if port and port.isdigit() else None, int(pairs["index"]))
            for field, name in (("gid", "gid"), ("type", "type"), ("netdev", "netdev"), ("ndev", "netdev")):
                if field in pairs:
                    _merge(table, key, name, pairs[field])
        elif (match := _LOOP_INDEXED.match(line)) and prompt_command(line) is None:
            index, value = int(match.group(1)), match.group(2)
            field = "gid" if is_gid(value) else "type" if _TYPE_VALUE.match(value) else "netdev"
            _merge(table, (None, None, index), field, value)
    entries = []
    for (device, port, index), values in table.items():
        gid = values.get("gid")
        if (device, port, index) in zeros or (gid is not None and _ZERO_GID.match(gid)):
            continue
        if gid is None and "type" not in values:
            continue  # a lone ndev line says nothing about a GID
        entries.append(
            GidEntry(
                device=device,
                port=port,
                index=index,
                gid=gid,
                ipv4=gid_ipv4(gid) if gid else None,
                version=gid_version(values.get("type")),
                netdev=values.get("netdev") or None,
            )
        )
    if not entries and not zeros and not any("gid" in values or "type" in values for values in table.values()):
        raise ParseError("no sysfs GID line (PATH/gids/N:VALUE) or GID loop line: not a sysfs GID listing")
    return GidTable(entries=entries)


# --------------------------------------------------------------------------------------------- cma_roce_mode


class CmaRoceModeEntry(Parsed):
    """One printed mode, with the device/port of the command typed before it when the paste shows it."""

    device: str | None = None
    port: int | None = None
    mode: str


class CmaRoceMode(Parsed):
    """RDMA-CM default RoCE mode; ``mode`` is the last one printed, ``entries`` all of them."""

    mode: str
    entries: list[CmaRoceModeEntry]

    @property
    def version(self) -> GidVersion | None:
        """Return 'v1' or 'v2' for ``mode``."""
        return gid_version(self.mode)


_MODE_LINE = re.compile(r"^\s*((?:IB/)?RoCE\s+[vV][12])\s*$")
_CMA_ERRORS = (
    "You must be root",
    "Failed to",
    "is not loaded",
    "does not exist",
    "does not support configfs",
)


def parse_cma_roce_mode(text: str) -> CmaRoceMode:
    """Parse mlnx-tools `cma_roce_mode` output ('RoCE v2' / 'IB/RoCE v1'), one or several queries."""
    entries: list[CmaRoceModeEntry] = []
    device: str | None = None
    port: int | None = None
    for line in require_lines(text, "cma_roce_mode"):
        command = prompt_command(line)
        if command is None and "cma_roce_mode" in line:
            command = line  # a command pasted without its prompt
        if command is not None:
            if "cma_roce_mode" in command:
                # The tool's own defaults apply when -d/-p are left out: mlx5_0, port 1.
                device = command_arg(command, "cma_roce_mode", ("-d",)) or "mlx5_0"
                port_arg = command_arg(command, "cma_roce_mode", ("-p",)) or "1"
                port = int(port_arg) if port_arg.isdigit() else None
            continue
        if match := _MODE_LINE.match(line):
            mode = re.sub(r"\s+", " ", match.group(1))
            entries.append(CmaRoceModeEntry(device=device, port=port, mode=mode))
            device, port = None, None
        elif any(marker in line for marker in _CMA_ERRORS):
            raise ParseError(f"cma_roce_mode failed: {line.strip()}")
    if not entries:
        raise ParseError("no 'RoCE v2' / 'IB/RoCE v1' line: not cma_roce_mode output")
    return CmaRoceMode(mode=entries[-1].mode, entries=entries)
