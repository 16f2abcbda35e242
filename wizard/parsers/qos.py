"""Parser for MLNX_OFED/DOCA `mlnx_qos -i IFACE`: trust mode, DSCP map, PFC, buffers and ETS."""

from __future__ import annotations

import re

from wizard.parsers._text import command_arg, prompt_command, require_lines, to_int
from wizard.parsers.common import Parsed, ParseError


class QosTc(Parsed):
    """One `tc: N ratelimit: ..., tsa: ...` block with the priorities listed under it."""

    tc: int
    ratelimit: str | None = None
    ratelimit_gbps: float | None = None
    tsa: str | None = None
    bw_percent: int | None = None
    priorities: list[int] = []


class MlnxQos(Parsed):
    """One mlnx_qos report; with a `set -x` trace of several runs, the last complete report."""

    interface: str | None = None
    dcbx_mode: str | None = None
    trust: str | None = None
    dscp2prio: dict[int, int] = {}
    default_priority: int | None = None
    receive_buffer: list[int] | None = None
    receive_buffer_total_size: int | None = None
    receive_buffer_max_size: int | None = None
    cable_len: int | None = None
    pfc_enabled: list[int] = []
    pfc_buffer: list[int] | None = None
    tcs: list[QosTc] = []
    priority_to_tc: dict[int, int] = {}
    tc_bandwidth: dict[int, int] = {}
    warnings: list[str] = []

    def pfc_priorities(self) -> list[int]:
        """Return the priorities with PFC enabled."""
        return [prio for prio, on in enumerate(self.pfc_enabled) if on]

    def priority_of_dscp(self, dscp: int) -> int | None:
        """Return the priority DSCP ``dscp`` maps to in trust-dscp mode."""
        return self.dscp2prio.get(dscp)


_TC_LINE = re.compile(r"^\s*tc:\s*(\d+)\s+ratelimit:\s*([^,]+?)\s*,\s*tsa:\s*(\w+)(?:,\s*bw:\s*(\d+)%)?")
_DSCP_LINE = re.compile(r"^\s*prio:\s*(\d)\s+dscp:\s*([\d,\s]*)$")
_DEFAULT_PRIO = re.compile(r"^\s*prio:\s*(\d)\s*$")
_TC_PRIORITY = re.compile(r"^\s*priority:\s*([\d\s]+)$")
_ROW = re.compile(r"^\s*(enabled|buffer)\s+([\d\s]+)$")
_BUFFER_SIZES = re.compile(r"^\s*Receive buffer size \(bytes\):\s*(.*)$")
_WARNING = re.compile(r"WARNING|not supported|Netlink error|Bad value|Invalid", re.IGNORECASE)


def _ints(text: str) -> list[int]:
    return [int(v) for v in re.split(r"[,\s]+", text.strip()) if v.isdigit()]


def _buffer_sizes(qos: MlnxQos, value: str) -> None:
    sizes = []
    for item in value.split(","):
        item = item.strip()
        if item.isdigit():
            sizes.append(int(item))
        elif item.startswith("total_size="):
            qos.receive_buffer_total_size = to_int(item.split("=", 1)[1])
        elif item.startswith("max_buffer_size="):
            qos.receive_buffer_max_size = to_int(item.split("=", 1)[1])
    qos.receive_buffer = sizes


def _ratelimit_gbps(value: str) -> float | None:
    match = re.match(r"^([\d.]+)\s*Gbps$", value)
    return float(match.group(1)) if match else None


class _Report:
    """Accumulates one mlnx_qos report while its lines are read."""

    def __init__(self, interface: str | None) -> None:
        self.qos = MlnxQos(interface=interface)
        self.section: str | None = None

    def feed(self, line: str) -> None:
        qos = self.qos
        if match := _TC_LINE.match(line):
            tc = QosTc(tc=int(match.group(1)), ratelimit=match.group(2), tsa=match.group(3))
            tc.ratelimit_gbps = _ratelimit_gbps(match.group(2))
            if match.group(4) is not None:
                tc.bw_percent = int(match.group(4))
                qos.tc_bandwidth[tc.tc] = tc.bw_percent
            qos.tcs.append(tc)
            self.section = "tc"
        elif (match := _TC_PRIORITY.match(line)) and self.section == "tc":
            for prio in _ints(match.group(1)):
                qos.tcs[-1].priorities.append(prio)
                qos.priority_to_tc[prio] = qos.tcs[-1].tc
        elif match := _ROW.match(line):
            values = _ints(match.group(2))[:8]
            if match.group(1) == "enabled":
                qos.pfc_enabled = values
            else:
                qos.pfc_buffer = values
        elif (match := _DSCP_LINE.match(line)) and self.section == "dscp":
            for dscp in _ints(match.group(2)):
                qos.dscp2prio[dscp] = int(match.group(1))
        elif (match := _DEFAULT_PRIO.match(line)) and self.section == "default":
            qos.default_priority = int(match.group(1))
        elif match := _BUFFER_SIZES.match(line):
            _buffer_sizes(qos, match.group(1))
        else:
            self._keyed(line)

    def _keyed(self, line: str) -> None:
        qos = self.qos
        key, _, value = line.strip().partition(":")
        value = value.strip()
        if key == "DCBX mode":
            qos.dcbx_mode = value
        elif key == "Priority trust state":
            qos.trust = value or None
        elif key == "dscp2prio mapping":
            self.section = "dscp"
        elif key == "default priority":
            self.section = "default"
        elif key == "Cable len" and value.isdigit():
            qos.cable_len = int(value)
        elif key == "PFC configuration":
            self.section = "pfc"
        elif _WARNING.search(line):
            qos.warnings.append(line.strip(" *"))


def parse_mlnx_qos(text: str) -> MlnxQos:
    """Parse `mlnx_qos -i IFACE` output of old (no buffers) and new MOFED/DOCA, raw or inside a trace."""
    reports: list[_Report] = []
    interface: str | None = None
    early_warnings: list[str] = []  # mlnx_qos prints lldpad/trust/buffer warnings before its report
    for line in require_lines(text, "mlnx_qos"):
        command = prompt_command(line)
        if command is not None:
            interface = command_arg(command, "mlnx_qos", ("-i", "--interface")) or interface
            continue
        starts_report = line.startswith("DCBX mode:") or (
            line.startswith("Priority trust state:")
            and (not reports or reports[-1].qos.trust is not None or reports[-1].qos.pfc_enabled)
        )
        if starts_report:
            reports.append(_Report(interface))
            reports[-1].qos.warnings, early_warnings = early_warnings, []
        if _WARNING.search(line) and (not reports or reports[-1].qos.pfc_enabled):
            early_warnings.append(line.strip(" *"))  # after a finished report: it heads the next run
        elif reports:
            reports[-1].feed(line)
    complete = [r.qos for r in reports if r.qos.pfc_enabled or r.qos.trust is not None]
    if not complete:
        raise ParseError("no 'Priority trust state:' or 'PFC configuration' block: not mlnx_qos output")
    qos = complete[-1]
    qos.dscp2prio = dict(sorted(qos.dscp2prio.items()))
    qos.priority_to_tc = dict(sorted(qos.priority_to_tc.items()))
    return qos
