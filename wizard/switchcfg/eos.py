"""Arista EOS configuration for one leaf: DSCP trust and map, PFC no-drop, ECN on the RoCE tx-queue, MTU."""

from __future__ import annotations

from collections.abc import Sequence

from wizard.switchcfg.model import ECN_MAX_BYTES, ECN_MIN_BYTES, SwitchPortUse, SwitchQos

EXT = "eos"
MTU = 9214  # the largest interface MTU EOS accepts
SOURCES = (
    "Arista AVD eos_cli_config_gen templates (Arista's own EOS config generator): qos.j2 (`qos map dscp ... to"
    " traffic-class`, `qos map traffic-class ... to tx-queue`), ethernet-interfaces.j2 (`qos trust dscp`,"
    " `priority-flow-control on`, `priority-flow-control priority N no-drop`), ethernet-interface-tx-queues.j2"
    " (`random-detect ecn minimum-threshold X kbytes maximum-threshold Y kbytes`, `priority strict`),"
    " priority-flow-control.j2 (`priority-flow-control pause watchdog default timeout|recovery-time|"
    "polling-interval`, `... action drop`): https://github.com/aristanetworks/avd",
)


def render(
    switch: str, uses: list[SwitchPortUse], qos: SwitchQos, fabric: Sequence[str] = (), role: str = "leaf"
) -> str:
    """EOS CLI for `configure session` (or copy to running-config): global maps and the PFC watchdog, then one
    block per port that carries RoCE: the host ports LLDP found and the ``fabric`` ports (uplinks or spine ports)."""
    if qos.host_mtu > MTU:
        raise ValueError(f"{switch}: the hosts' MTU {qos.host_mtu} exceeds the EOS maximum {MTU}")
    p, cnp = qos.priority, qos.cnp_priority
    lines = [
        f"! roce-wizard switch-config: Arista EOS for {switch} ({role})",
        f"! From the answers: {qos.summary()}",
        "! Apply in a configuration session (configure session roce; paste; show session-config diffs; commit).",
        *(f"! Source: {s}" for s in SOURCES),
        "! 7280R/7500R (Jericho) platforms name the unicast queue `uc-tx-queue N` instead of `tx-queue N`.",
        "!",
        f"qos map dscp {qos.dscp} to traffic-class {p}",
        f"qos map dscp {qos.cnp_dscp} to traffic-class {cnp}",
        f"qos map traffic-class {p} to tx-queue {p}",
        f"qos map traffic-class {cnp} to tx-queue {cnp}",
    ]
    wd = qos.watchdog
    if wd.enabled:
        timeout, recovery = wd.detection_ms / 1000, wd.restoration_ms / 1000
        lines += [
            f"priority-flow-control pause watchdog default timeout {timeout:g}",
            f"priority-flow-control pause watchdog default recovery-time {recovery:g}",
            f"priority-flow-control pause watchdog default polling-interval {min(timeout, recovery) / 2:g}",
            "priority-flow-control pause watchdog action drop",
        ]
    lines.append("!")
    blocks = [(u.port, u.serves()) for u in uses] + [(f, "uplink" if role == "leaf" else "to a leaf") for f in fabric]
    for port, descr in blocks:
        lines += [
            f"interface {port}",
            f"   description {descr}",
            f"   mtu {MTU}",
            "   qos trust dscp",
            "   priority-flow-control on",
            f"   priority-flow-control priority {p} no-drop",
        ]
        if wd.enabled:
            lines.append("   priority-flow-control pause watchdog")
        lines.append("   dcbx mode ieee")  # the PFC TLV lets the hosts check this port's PFC over LLDP
        if qos.ecn:
            lines += [
                f"   tx-queue {p}",
                f"      random-detect ecn minimum-threshold {ECN_MIN_BYTES // 1000} kbytes"
                f" maximum-threshold {ECN_MAX_BYTES // 1000} kbytes",
            ]
        lines += [f"   tx-queue {cnp}", "      priority strict"]  # CNPs never wait behind data
        lines.append("!")
    lines += ["end", ""]
    return "\n".join(lines)
