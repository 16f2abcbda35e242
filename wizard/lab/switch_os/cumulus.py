"""NVIDIA Cumulus Linux 5.x on a Spectrum switch, configured with NVUE (`nv set ...`, then `nv config apply`).

Defaults, before any RoCE configuration (Cumulus Linux 5.x user guide, "Quality of Service"): the switch trusts
802.1p (``trust l2``; an untagged RoCE packet is switch priority 0), DSCP maps to switch priority DSCP>>3, switch
priority n -> traffic class n, no PFC, ECN off on the RoCE class, interface MTU 9216. LLDP runs (lldpd) but sends
no DCBX TLVs until ``nv set interface swpN lldp dcbx-pfc-tlv on`` / ``application-tlv`` ("LLDP", DCBX TLVs).

``nv set qos roce mode lossless`` ("RDMA over Converged Ethernet - RoCE", Default RoCE Configuration) is global:
trust both (PCP and DSCP), PFC and the lossless traffic pool on switch priority 3, ECN on traffic class 3, CNPs
(switch priority 6) in strict-priority traffic class 6.

`nv set` only stages a change; `nv config apply` makes it the running (and, with auto-save, the saved) config. A
script run with ``set -e`` stops at the first `nv set` NVUE rejects, so nothing of it is applied. The NVUE command
reference lists the valid paths; one the model does not know is rejected, like an invalid path on the switch.
"""

from __future__ import annotations

import copy
import re
import shlex
from collections.abc import Callable
from dataclasses import dataclass, field

from wizard.lab.switch_os import LoadResult
from wizard.lab.switches import Switch

DESCR = "Cumulus Linux version 5.9.1 running on Nvidia SN5600"
MAX_MTU = 9216
ROCE_PRIORITY, ROCE_TC, CNP_PRIORITY, CNP_TC = 3, 3, 6, 6


def port_name(index: int) -> tuple[str, str]:
    return f"swp{index}", ""


@dataclass
class Qos:
    """The NVUE QoS tree the model acts on (global default-global profiles, per-interface settings)."""

    trust: str = "l2"
    dscp_sp: dict[int, int] = field(default_factory=lambda: {d: d >> 3 for d in range(64)})
    sp_tc: dict[int, int] = field(default_factory=lambda: {p: p for p in range(8)})
    pfc: set[int] = field(default_factory=set)
    pools: dict[str, set[int]] = field(default_factory=dict)  # traffic pool -> switch priorities (lossless pools)
    ecn_tc: set[int] = field(default_factory=lambda: {0})  # default-global marks on egress queue 0 only
    strict_tc: set[int] = field(default_factory=set)
    watchdog: set[str] = field(default_factory=set)  # interfaces with the PFC watchdog
    mtu: dict[str, int] = field(default_factory=dict)
    descr: dict[str, str] = field(default_factory=dict)
    dcbx_pfc: set[str] = field(default_factory=set)
    app_tlv: set[str] = field(default_factory=set)
    explicit_dscp: set[int] = field(default_factory=set)  # DSCP values given a switch priority (the APP TLV's)
    roce: str = ""  # "", lossless, lossy


@dataclass
class State:
    running: Qos = field(default_factory=Qos)


def initial(switch: Switch) -> State:
    return State()


class NvError(Exception):
    pass


def _numbers(text: str, lo: int, hi: int) -> list[int]:
    """NVUE number lists: 3, 3,4, 0-7."""
    out: list[int] = []
    for part in text.split(","):
        m = re.fullmatch(r"(\d+)(?:-(\d+))?", part)
        if not m:
            raise NvError(f"'{text}' is not a valid value")
        a, b = int(m[1]), int(m[2] or m[1])
        if not (lo <= a <= b <= hi):
            raise NvError(f"'{text}' is out of range {lo}-{hi}")
        out += range(a, b + 1)
    return out


def _interfaces(switch: Switch, text: str) -> list[str]:
    """swp1, swp1-16, swp1,swp5: interfaces that exist on this switch."""
    names: list[str] = []
    for part in text.split(","):
        m = re.fullmatch(r"swp(\d+)(?:-(?:swp)?(\d+))?", part)
        if not m:
            raise NvError(f"'{part}' is not a valid interface")
        for n in range(int(m[1]), int(m[2] or m[1]) + 1):
            if f"swp{n}" not in switch.ports:
                raise NvError(f"interface swp{n} does not exist on {switch.name}")
            names.append(f"swp{n}")
    return names


def _roce(q: Qos, mode: str) -> None:
    q.roce = mode
    if mode == "lossless":
        q.trust = "both"
        q.explicit_dscp |= {26, 48}
        q.pfc = {ROCE_PRIORITY}
        q.pools["roce-lossless"] = {ROCE_PRIORITY}
        q.ecn_tc.add(ROCE_TC)
        q.sp_tc[ROCE_PRIORITY], q.sp_tc[CNP_PRIORITY] = ROCE_TC, CNP_TC
        q.strict_tc.add(CNP_TC)
    else:  # lossy RoCE: ECN only
        q.trust = "both"
        q.ecn_tc.add(ROCE_TC)


def _check_tcs(text: str) -> None:
    _numbers(text, 0, 7)


def _map_dscp(q: Qos, dscps: list[int], priority: int) -> None:
    q.dscp_sp.update(dict.fromkeys(dscps, priority))
    q.explicit_dscp.update(dscps)


def _on(value: str) -> bool:
    if value not in ("on", "off", "enable", "disable"):
        raise NvError(f"'{value}' is not a valid value (on, off)")
    return value in ("on", "enable")


def _setter(switch: Switch) -> list[tuple[str, Callable[[Qos, re.Match[str]], None]]]:
    """The `nv set` paths the model knows, each with what it changes (the rest of the reference is rejected)."""
    ifs = r"(?P<ifs>swp[\d,\-swp]+)"
    return [
        (r"qos roce", lambda q, m: _roce(q, "lossless")),
        (r"qos roce mode (?P<v>lossless|lossy)", lambda q, m: _roce(q, m["v"])),
        (r"qos mapping default-global trust (?P<v>l2|l3|port|both)", lambda q, m: setattr(q, "trust", m["v"])),
        (
            r"qos mapping default-global dscp (?P<d>[\d,\-]+) switch-priority (?P<p>\d+)",
            lambda q, m: _map_dscp(q, _numbers(m["d"], 0, 63), _numbers(m["p"], 0, 7)[0]),
        ),
        (r"qos mapping default-global pcp (?P<d>[\d,\-]+) switch-priority (?P<p>\d+)", lambda q, m: None),
        (
            r"qos pfc default-global switch-priority (?P<p>[\d,\-]+)",
            lambda q, m: q.pfc.update(_numbers(m["p"], 0, 7)),
        ),
        (r"qos pfc default-global (?:tx|rx) (?:enable|disable)", lambda q, m: None),
        (r"qos pfc default-global (?:cable-length|xoff-threshold|xon-threshold) \d+", lambda q, m: None),
        (
            r"qos egress-queue-mapping default-global switch-priority (?P<p>[\d,\-]+) traffic-class (?P<t>\d+)",
            lambda q, m: q.sp_tc.update({p: _numbers(m["t"], 0, 7)[0] for p in _numbers(m["p"], 0, 7)}),
        ),
        (
            r"qos congestion-control default-global traffic-class (?P<t>[\d,\-]+) "
            r"(?:min-threshold|max-threshold|probability) \d+",
            lambda q, m: _check_tcs(m["t"]),  # thresholds are accepted, not modelled: ECN on/off is
        ),
        (
            r"qos congestion-control default-global traffic-class (?P<t>[\d,\-]+) ecn (?P<v>enable|disable)",
            lambda q, m: (q.ecn_tc.update if m["v"] == "enable" else q.ecn_tc.difference_update)(
                _numbers(m["t"], 0, 7)
            ),
        ),
        (
            r"qos egress-scheduler default-global traffic-class (?P<t>[\d,\-]+) mode (?P<v>strict|dwrr)",
            lambda q, m: (q.strict_tc.update if m["v"] == "strict" else q.strict_tc.difference_update)(
                _numbers(m["t"], 0, 7)
            ),
        ),
        (r"qos egress-scheduler default-global traffic-class [\d,\-]+ bw-percent \d+", lambda q, m: None),
        (
            r"qos traffic-pool (?P<n>[\w\-]+) switch-priority (?P<p>[\d,\-]+)",
            lambda q, m: q.pools.setdefault(m["n"], set()).update(_numbers(m["p"], 0, 7)),
        ),
        (r"qos traffic-pool [\w\-]+ memory-percent \d+", lambda q, m: None),
        (r"qos pfc-watchdog (?:polling-interval|robustness) \d+", lambda q, m: None),
        (rf"interface {ifs} qos pfc-watchdog", lambda q, m: q.watchdog.update(_interfaces(switch, m["ifs"]))),
        (
            rf"interface {ifs} qos pfc-watchdog state (?P<v>enable|disable)",
            lambda q, m: (q.watchdog.update if m["v"] == "enable" else q.watchdog.difference_update)(
                _interfaces(switch, m["ifs"])
            ),
        ),
        (
            rf"interface {ifs} link mtu (?P<v>\d+)",
            lambda q, m: q.mtu.update({i: _mtu(m["v"]) for i in _interfaces(switch, m["ifs"])}),
        ),
        (
            rf"interface {ifs} description (?P<v>.+)",
            lambda q, m: q.descr.update({i: m["v"] for i in _interfaces(switch, m["ifs"])}),
        ),
        (
            rf"interface {ifs} lldp dcbx-pfc-tlv (?P<v>\w+)",
            lambda q, m: (q.dcbx_pfc.update if _on(m["v"]) else q.dcbx_pfc.difference_update)(
                _interfaces(switch, m["ifs"])
            ),
        ),
        (rf"interface {ifs} lldp (?:dcbx-ets-config-tlv|dcbx-ets-recomm-tlv) (?:on|off)", lambda q, m: None),
        (
            rf"interface {ifs} lldp application-tlv app (?:iscsi|roce|[\w\-]+)",
            lambda q, m: q.app_tlv.update(_interfaces(switch, m["ifs"])),
        ),
    ]


def _mtu(value: str) -> int:
    mtu = int(value)
    if not 552 <= mtu <= MAX_MTU:
        raise NvError(f"mtu {mtu} is out of range 552-{MAX_MTU}")
    return mtu


def _nv(switch: Switch, argv: list[str], pending: Qos, state: State) -> tuple[int, str, bool]:
    """One `nv` command: (exit status, output, whether it applied the pending config)."""
    if argv[:2] == ["config", "apply"]:
        changed = pending != state.running
        state.running = copy.deepcopy(pending)
        return 0, "applied" if changed else "Warning: The applied config is the same as the pending config.", changed
    if argv[:2] == ["config", "save"] or argv[:1] == ["show"]:
        return 0, "", False
    if argv[:1] != ["set"]:
        modelled = "`nv set`, `nv config apply|save`"
        return 1, f"Error: the simulated NVUE models {modelled} only, not `nv {' '.join(argv)}`", False
    path = " ".join(argv[1:])
    for pattern, action in _setter(switch):
        m = re.fullmatch(pattern, path)
        if m:
            try:
                action(pending, m)
            except NvError as exc:
                return 1, f"Error: Invalid config [{path}]: {exc}", False
            return 0, "", False
    return 1, f"Error: Invalid Command: nv set {path}", False


def run(state: State, switch: Switch, text: str) -> LoadResult:
    """Run the script as ``bash FILE`` on the switch: bash lines, `nv` commands, ``set -e`` honoured."""
    pending = copy.deepcopy(state.running)
    errexit, applied, status = False, False, 0
    out: list[str] = []
    for number, raw in enumerate(text.splitlines(), start=1):
        line = raw.strip()
        if not line or line.startswith("#"):
            continue
        try:
            argv = shlex.split(line, comments=True)
        except ValueError as exc:
            out.append(f"bash: line {number}: {exc}")
            return LoadResult(2, "\n".join(out), applied)
        if not argv:
            continue
        if argv[0] == "set" and any(a.startswith("-") and "e" in a for a in argv[1:]):
            errexit = True
            continue
        if argv[0] == "nv":
            status, message, did = _nv(switch, argv[1:], pending, state)
            applied = applied or did
        else:
            status, message = 127, f"bash: line {number}: {argv[0]}: command not found"
        if message:
            out.append(message)
        if status and errexit:
            return LoadResult(status, "\n".join(out), applied)
    return LoadResult(status, "\n".join(out), applied)


def effective(state: State, switch: Switch) -> None:
    q = state.running
    lossless_pools = set().union(*q.pools.values()) if q.pools else set()
    for name, sp in switch.ports.items():
        sp.lldp_id, sp.lldp_id_type = name, "ifname"
        sp.descr = q.descr.get(name, sp.descr)
        sp.lldp_descr = sp.descr or name
        sp.mtu = q.mtu.get(name, MAX_MTU)
        sp.trust = "dscp" if q.trust in ("l3", "both") else "pcp"
        sp.dscp_prio = dict(q.dscp_sp)
        sp.pfc_priorities = set(q.pfc)
        sp.headroom = q.pfc & lossless_pools
        sp.ecn_prios = {p for p in range(8) if q.sp_tc.get(p, p) in q.ecn_tc}
        sp.strict_prios = {p for p in range(8) if q.sp_tc.get(p, p) in q.strict_tc}
        sp.pfc_watchdog = name in q.watchdog and bool(q.pfc)
        # With RoCE on, the PFC, ETS and APP TLVs go out on every port whatever the per-port setting ("LLDP", DCBX
        # TLVs); the RoCE APP TLV entry is UDP port 4791 -> the RoCE switch priority (RoCE, Default RoCE Configuration).
        sp.send_dcbx = name in q.dcbx_pfc or bool(q.roce)
        sp.app_udp = {4791: min(q.pfc, default=ROCE_PRIORITY)} if q.roce or name in q.app_tlv else {}
