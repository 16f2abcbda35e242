"""Parsers for ethtool: link settings (and `-a` pause settings), driver info (`-i`) and statistics (`-S`)."""

from __future__ import annotations

import re

from wizard.parsers._text import command_arg, prompt_command, require_lines
from wizard.parsers.common import Parsed, ParseError

_KEY = re.compile(r"^\s*([A-Za-z][\w ./()-]*?):\s*(.*?)\s*$")


def _flag(value: str | None) -> bool | None:
    """Read ethtool's yes/no/on/off (ignoring a reason in parentheses) as a bool."""
    word = (value or "").split(" ", 1)[0].lower()
    return {"yes": True, "on": True, "no": False, "off": False}.get(word)


def _words(value: str | None) -> list[str]:
    """Split a mode list; ethtool prints 'Not reported' for an empty one."""
    if not value or value.strip().lower() in ("not reported", "none reported"):
        return []
    return value.replace("[", " ").replace("]", " ").split()


# --------------------------------------------------------------------------------------------- ethtool IFACE


class EthtoolLink(Parsed):
    """`ethtool IFACE` link settings, plus the `ethtool -a` pause settings when that is what was given."""

    interface: str | None = None
    speed_mbps: int | None = None
    duplex: str | None = None
    port: str | None = None
    lanes: int | None = None
    auto_negotiation: bool | None = None
    link_detected: bool | None = None
    link_detected_reason: str | None = None
    supported_ports: list[str] = []
    supported_link_modes: list[str] = []
    advertised_link_modes: list[str] = []
    supported_fec_modes: list[str] = []
    advertised_fec_modes: list[str] = []
    supports_auto_negotiation: bool | None = None
    advertised_auto_negotiation: bool | None = None
    transceiver: str | None = None
    pause_autonegotiate: bool | None = None
    pause_rx: bool | None = None
    pause_tx: bool | None = None
    fields: dict[str, str] = {}
    warnings: list[str] = []


_SETTINGS_FOR = re.compile(r"^\s*Settings for (\S+?):?\s*$")
_PAUSE_FOR = re.compile(r"^\s*Pause parameters for (\S+?):?\s*$")
_SPEED = re.compile(r"^(\d+)\s*Mb/s$")
_LINK_DETECTED = re.compile(r"^(\w+)(?:\s*\((.*)\))?$")
_LIST_KEYS = {
    "Supported ports": "supported_ports",
    "Supported link modes": "supported_link_modes",
    "Advertised link modes": "advertised_link_modes",
    "Supported FEC modes": "supported_fec_modes",
    "Advertised FEC modes": "advertised_fec_modes",
}


def _read_fields(lines: list[str]) -> tuple[dict[str, str], list[str]]:
    """Collect `Key: value` pairs; lines without a colon continue the previous key (mode lists)."""
    fields: dict[str, str] = {}
    warnings: list[str] = []
    key: str | None = None
    for line in lines:
        if not line.strip() or prompt_command(line) is not None:
            continue
        if line.startswith(("Cannot ", "netlink error", "No data available")):
            warnings.append(line.strip())  # e.g. 'Cannot get wake-on-lan settings: Operation not permitted'
            continue
        match = _KEY.match(line)
        if match and not line.startswith(" " * 20):
            key = match.group(1)
            fields.setdefault(key, match.group(2))
        elif key is not None and line[:1].isspace():
            fields[key] = f"{fields[key]} {line.strip()}".strip()
    return fields, warnings


def parse_ethtool(text: str) -> EthtoolLink:
    """Parse `ethtool IFACE` (also `ethtool -a IFACE`); speed 'Unknown!' reads None."""
    lines = require_lines(text, "ethtool")
    link = EthtoolLink()
    body: list[str] = []
    for line in lines:
        if match := _SETTINGS_FOR.match(line) or _PAUSE_FOR.match(line):
            if link.interface is not None:
                break  # a second interface's output: keep the first
            link.interface = match.group(1)
        else:
            body.append(line)
    fields, link.warnings = _read_fields(body)
    if link.interface is None and "Link detected" not in fields and not {"Autonegotiate", "RX", "TX"} <= fields.keys():
        raise ParseError("no 'Settings for IFACE:' or 'Link detected:' line: not ethtool output")
    link.fields = fields
    if match := _SPEED.match(fields.get("Speed", "")):
        link.speed_mbps = int(match.group(1))
    duplex = fields.get("Duplex", "")
    link.duplex = duplex if duplex in ("Full", "Half") else None
    link.port = fields.get("Port")
    link.lanes = int(fields["Lanes"]) if fields.get("Lanes", "").isdigit() else None
    link.auto_negotiation = _flag(fields.get("Auto-negotiation"))
    link.supports_auto_negotiation = _flag(fields.get("Supports auto-negotiation"))
    link.advertised_auto_negotiation = _flag(fields.get("Advertised auto-negotiation"))
    link.transceiver = fields.get("Transceiver")
    for key, attr in _LIST_KEYS.items():
        setattr(link, attr, _words(fields.get(key)))
    if match := _LINK_DETECTED.match(fields.get("Link detected", "")):
        link.link_detected = _flag(match.group(1))
        link.link_detected_reason = match.group(2)
    link.pause_autonegotiate = _flag(fields.get("Autonegotiate"))
    link.pause_rx = _flag(fields.get("RX"))
    link.pause_tx = _flag(fields.get("TX"))
    return link


# --------------------------------------------------------------------------------------------- ethtool -i


class EthtoolDriver(Parsed):
    """`ethtool -i IFACE`: driver, versions and PCI address (the first output when several were pasted)."""

    interface: str | None = None
    driver: str
    version: str | None = None
    firmware_version: str | None = None
    psid: str | None = None
    expansion_rom_version: str | None = None
    bus_info: str | None = None
    supports_statistics: bool | None = None
    supports_test: bool | None = None
    supports_eeprom_access: bool | None = None
    supports_register_dump: bool | None = None
    supports_priv_flags: bool | None = None
    fields: dict[str, str] = {}


_FW_PSID = re.compile(r"^(\S+)\s+\((MT_\w+)\)$")  # `28.39.3560 (MT_0000000838)`


def parse_ethtool_i(text: str) -> EthtoolDriver:
    """Parse `ethtool -i IFACE`; mlx5 firmware `X (MT_PSID)` splits into firmware_version and psid."""
    lines = require_lines(text, "ethtool -i")
    fields: dict[str, str] = {}
    interface: str | None = None
    for line in lines:
        command = prompt_command(line)
        if command is not None:
            if fields:
                break  # the next pasted command starts another output
            interface = command_arg(command, "ethtool", ("-i", "--driver")) or interface
            continue
        match = re.match(r"^\s*([a-z][a-z-]*):\s?(.*?)\s*$", line)
        if match is None:
            continue
        key, value = match.groups()
        if key in fields:
            break  # a second output pasted without its command
        fields[key] = re.sub(r"\s+#.*$", "", value)  # an author's trailing '# comment'
    if "driver" not in fields:
        raise ParseError("no 'driver:' line: not ethtool -i output")
    firmware = fields.get("firmware-version") or None
    psid = None
    if firmware and (match := _FW_PSID.match(firmware)):
        firmware, psid = match.groups()
    return EthtoolDriver(
        interface=interface,
        driver=fields["driver"],
        version=fields.get("version") or None,
        firmware_version=firmware,
        psid=psid,
        expansion_rom_version=fields.get("expansion-rom-version") or None,
        bus_info=fields.get("bus-info") or None,
        supports_statistics=_flag(fields.get("supports-statistics")),
        supports_test=_flag(fields.get("supports-test")),
        supports_eeprom_access=_flag(fields.get("supports-eeprom-access")),
        supports_register_dump=_flag(fields.get("supports-register-dump")),
        supports_priv_flags=_flag(fields.get("supports-priv-flags")),
        fields=fields,
    )


# --------------------------------------------------------------------------------------------- ethtool -S


class EthtoolStats(Parsed):
    """`ethtool -S IFACE` counters (all of them, or what a `| grep` kept)."""

    interface: str | None = None
    counters: dict[str, int]

    def get(self, name: str) -> int | None:
        """Return counter ``name``, or None when the driver (or the grep) did not print it."""
        return self.counters.get(name)

    def prio(self, counter: str, prio: int) -> int | None:
        """Return the per-priority form of ``counter``: prio('rx_pause', 3) reads `rx_prio3_pause`."""
        direction, _, rest = counter.partition("_")
        return self.counters.get(f"{direction}_prio{prio}_{rest}")

    def matching(self, pattern: str) -> dict[str, int]:
        """Return the counters whose name matches the regular expression ``pattern``."""
        regex = re.compile(pattern)
        return {k: v for k, v in self.counters.items() if regex.search(k)}


_STAT = re.compile(r"^\s+([A-Za-z0-9_.\[\]-]+):\s*(-?\d+)\s*$")
# Without the `NIC statistics:` header (a `| grep` paste) only ethtool's own layout counts: five spaces
# and a lower-case name; ibv_devinfo's and mlnx_qos' indented `key: number` lines are no counters.
_BARE_STAT = re.compile(r"^ {5}[a-z0-9][\w.\[\]-]*:")


def parse_ethtool_S(text: str) -> EthtoolStats:
    """Parse `ethtool -S IFACE` (`NIC statistics:` then indented `name: value` lines)."""
    lines = require_lines(text, "ethtool -S")
    interface: str | None = None
    counters: dict[str, int] = {}
    header = False
    for line in lines:
        command = prompt_command(line)
        if command is not None:
            interface = command_arg(command, "ethtool", ("-S", "--statistics")) or interface
        elif line.strip() == "NIC statistics:":
            header = True
        elif (match := _STAT.match(line)) and (header or _BARE_STAT.match(line)):
            counters.setdefault(match.group(1), int(match.group(2)))
    if not counters and not header:
        raise ParseError("no 'NIC statistics:' header or indented 'name: value' counter: not ethtool -S output")
    return EthtoolStats(interface=interface, counters=counters)
