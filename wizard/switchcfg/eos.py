"""Arista EOS configuration for one leaf: DSCP trust and map, PFC no-drop, ECN on the RoCE tx-queue, MTU."""

from __future__ import annotations

from wizard.switchcfg.model import ECN_MAX_BYTES, ECN_MIN_BYTES, SwitchPortUse, SwitchQos

EXT = "eos"
MTU = 9214  # the largest interface MTU EOS accepts
SOURCES = (
    "Arista AVD eos_cli_config_gen templates (Arista's own EOS config generator): qos.j2 (`qos map dscp ... to"
    " traffic-class`, `qos map traffic-class ... to tx-queue`), ethernet-interfaces.j2 (`qos trust dscp`,"
    " `priority-flow-control on`, `priority-flow-control priority N no-drop`), ethernet-interface-tx-queues.j2"
    " (`random-detect ecn minimum-threshold X kbytes maximum-threshold Y kbytes`):"
    " https://github.com/aristanetworks/avd",
)


def render(switch: str, uses: list[SwitchPortUse], qos: SwitchQos) -> str:
    """EOS CLI for `configure session` (or copy to running-config): global maps, then one block per host port."""
    if qos.host_mtu > MTU:
        raise ValueError(f"{switch}: the hosts' MTU {qos.host_mtu} exceeds the EOS maximum {MTU}")
    p = qos.priority
    lines = [
        f"! roce-wizard switch-config: Arista EOS for {switch}",
        f"! From the answers: {qos.summary()}",
        "! Apply in a configuration session (configure session roce; paste; show session-config diffs; commit).",
        *(f"! Source: {s}" for s in SOURCES),
        "! 7280R/7500R (Jericho) platforms name the unicast queue `uc-tx-queue N` instead of `tx-queue N`.",
        "!",
        f"qos map dscp {qos.dscp} to traffic-class {p}",
        f"qos map dscp {qos.cnp_dscp} to traffic-class {qos.cnp_priority}",
        f"qos map traffic-class {p} to tx-queue {p}",
        "!",
    ]
    for use in uses:
        lines += [
            f"interface {use.port}",
            f"   description {use.serves()}",
            f"   mtu {MTU}",
            "   qos trust dscp",
            "   priority-flow-control on",
            f"   priority-flow-control priority {p} no-drop",
        ]
        if qos.ecn:
            lines += [
                f"   tx-queue {p}",
                f"      random-detect ecn minimum-threshold {ECN_MIN_BYTES // 1000} kbytes"
                f" maximum-threshold {ECN_MAX_BYTES // 1000} kbytes",
            ]
        lines.append("!")
    lines += ["end", ""]
    return "\n".join(lines)
