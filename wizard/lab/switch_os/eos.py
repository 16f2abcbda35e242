"""Arista EOS on a 7060X5-class leaf, configured by pasting CLI into a configuration session and committing it.

Ports are ``Ethernet<n>/1`` and LLDP sends that name as the port ID (subtype interface name) and the interface
description as the port description. Commands follow Arista AVD's eos_cli_config_gen templates (qos.j2,
ethernet-interfaces.j2, ethernet-interface-tx-queues.j2, priority-flow-control.j2), the CLI Arista itself renders:
``qos map dscp D to traffic-class T``, ``qos map traffic-class T to tx-queue Q``, per interface ``qos trust dscp``,
``priority-flow-control on``, ``priority-flow-control priority N no-drop``, ``priority-flow-control pause
watchdog``, ``tx-queue Q`` with ``random-detect ecn ...`` and ``priority strict``, ``dcbx mode ieee``; globally
``priority-flow-control pause watchdog default timeout|recovery-time|polling-interval S`` and ``... action drop``.

Defaults the model starts from (Arista EOS, as rendered by AVD and the EOS QoS chapter; the numbers are believed,
not quoted from a manual): a bridged port trusts CoS, so an untagged RoCE packet is traffic class 1; DSCP maps to
traffic class DSCP>>3 where DSCP is trusted; no priority is no-drop; no ECN; no DCBX TLVs until ``dcbx mode ieee``;
tx-queues are strict priority unless given ``no priority`` (the AVD tests pair ``no priority`` with bandwidth);
MTU 9214. A no-drop priority gets its headroom from the platform's buffer manager, nothing to configure.

A pasted line the CLI does not accept prints ``% Invalid input`` and the paste goes on with the next line; a
sub-command after a rejected ``interface`` line is then in global mode and rejected too. ``commit`` applies what
was accepted.
"""

from __future__ import annotations

import copy
import re
from dataclasses import dataclass, field

from wizard.lab.switch_os import LoadResult
from wizard.lab.switches import Switch

DESCR = "Arista Networks EOS version 4.32.2F running on an Arista Networks DCS-7060X5-64S"
MAX_MTU = 9214


def port_name(index: int) -> tuple[str, str]:
    return f"Ethernet{index}/1", ""


@dataclass
class Interface:
    trust: str = "cos"
    pfc: bool = False
    no_drop: set[int] = field(default_factory=set)
    watchdog: bool = False
    ecn_queues: set[int] = field(default_factory=set)
    not_strict: set[int] = field(default_factory=set)  # tx-queues given `no priority`
    dcbx: bool = False
    mtu: int = MAX_MTU
    descr: str | None = None


@dataclass
class State:
    dscp_tc: dict[int, int] = field(default_factory=lambda: {d: d >> 3 for d in range(64)})
    tc_queue: dict[int, int] = field(default_factory=lambda: {t: t for t in range(8)})
    watchdog_action: str = "errdisable"
    interfaces: dict[str, Interface] = field(default_factory=dict)


def initial(switch: Switch) -> State:
    return State(interfaces={name: Interface() for name in switch.ports})


class Rejected(Exception):
    pass


UNIT = r"(?:kbytes|bytes|mbytes)"
ECN_LINE = rf"random-detect ecn minimum-threshold \d+ {UNIT} maximum-threshold \d+ {UNIT}(?: max-mark-probability \d+)?"
GLOBAL = [
    r"qos map dscp (?P<d>[\d ]+) to traffic-class (?P<t>\d)",
    r"qos map traffic-class (?P<t>[\d ]+) to tx-queue (?P<q>\d)",
    r"priority-flow-control pause watchdog default (?:timeout|recovery-time|polling-interval) [\d.]+",
    r"priority-flow-control pause watchdog action (?P<a>drop|no-drop)",
    r"priority-flow-control all off",
]


def _global(state: State, line: str) -> None:
    for pattern in GLOBAL:
        m = re.fullmatch(pattern, line)
        if not m:
            continue
        groups = m.groupdict()
        if "d" in groups and groups["d"] is not None:
            for d in groups["d"].split():
                if not 0 <= int(d) <= 63:
                    raise Rejected(line)
                state.dscp_tc[int(d)] = int(groups["t"])
        elif "q" in groups and groups["q"] is not None:
            for t in groups["t"].split():
                state.tc_queue[int(t)] = int(groups["q"])
        elif groups.get("a"):
            state.watchdog_action = groups["a"]
        return
    raise Rejected(line)


def _interface(iface: Interface, line: str, queue: int | None) -> int | None:
    """One interface-mode line; returns the tx-queue a `tx-queue N` line entered (sub-mode), else ``queue``."""
    if queue is not None:
        if re.fullmatch(ECN_LINE, line):
            iface.ecn_queues.add(queue)
            return queue
        if line == "priority strict":
            iface.not_strict.discard(queue)
            return queue
        if line == "no priority":
            iface.not_strict.add(queue)
            return queue
        if re.fullmatch(r"bandwidth (?:guaranteed )?percent \d+", line):
            return queue
    if m := re.fullmatch(r"tx-queue (\d)", line):
        return int(m[1])
    if m := re.fullmatch(r"description (.+)", line):
        iface.descr = m[1]
    elif m := re.fullmatch(r"mtu (\d+)", line):
        if not 68 <= int(m[1]) <= MAX_MTU:
            raise Rejected(line)
        iface.mtu = int(m[1])
    elif m := re.fullmatch(r"qos trust (dscp|cos|untrusted)", line):
        iface.trust = m[1]
    elif line == "priority-flow-control on":
        iface.pfc = True
    elif line == "no priority-flow-control":
        iface.pfc = False
    elif m := re.fullmatch(r"priority-flow-control priority (\d) (no-drop|drop)", line):
        (iface.no_drop.add if m[2] == "no-drop" else iface.no_drop.discard)(int(m[1]))
    elif line == "priority-flow-control pause watchdog":
        iface.watchdog = True
    elif line == "dcbx mode ieee":
        iface.dcbx = True
    elif line in ("no shutdown", "switchport", "speed forced 400gfull"):
        pass
    else:
        raise Rejected(line)
    return None


def run(state: State, switch: Switch, text: str) -> LoadResult:
    """Paste into `configure session`, then `commit`: accepted lines apply, each rejected one is reported."""
    work = copy.deepcopy(state)
    errors: list[str] = []
    iface: Interface | None = None
    queue: int | None = None
    for number, raw in enumerate(text.splitlines(), start=1):
        line = raw.strip()
        if not line or line.startswith("!") or line in ("end", "configure", "configure terminal", "commit"):
            if line == "end":
                iface, queue = None, None
            continue
        if line.startswith("configure session"):
            continue
        try:
            if m := re.fullmatch(r"interface (\S+)", line):
                if m[1] not in work.interfaces:
                    iface = None
                    raise Rejected(line)
                iface, queue = work.interfaces[m[1]], None
                continue
            if iface is not None:  # interface (or tx-queue) mode first; a line it does not know leaves the mode
                try:
                    queue = _interface(iface, line, queue)
                    continue
                except Rejected:
                    pass
            iface, queue = None, None
            _global(work, line)
        except Rejected:
            errors.append(f"% Invalid input (line {number}: {line})")
    changed = work != state
    state.__dict__.update(work.__dict__)
    output = "\n".join(errors) if errors else ""
    return LoadResult(1 if errors else 0, output, changed)


def effective(state: State, switch: Switch) -> None:
    for name, sp in switch.ports.items():
        iface = state.interfaces.get(name, Interface())
        sp.lldp_id, sp.lldp_id_type = name, "ifname"
        sp.descr = iface.descr if iface.descr is not None else sp.descr
        sp.lldp_descr = sp.descr or name
        sp.mtu = iface.mtu
        sp.trust = "dscp" if iface.trust == "dscp" else "pcp"
        sp.dscp_prio = dict(state.dscp_tc)
        sp.pfc_priorities = set(iface.no_drop) if iface.pfc else set()
        sp.headroom = set(sp.pfc_priorities)  # the buffer manager reserves headroom for no-drop priorities
        sp.ecn_prios = {t for t in range(8) if state.tc_queue[t] in iface.ecn_queues}
        sp.strict_prios = {t for t in range(8) if state.tc_queue[t] not in iface.not_strict}
        sp.pfc_watchdog = iface.watchdog and bool(sp.pfc_priorities)
        sp.send_dcbx = iface.dcbx
        sp.app_dscp = {}
