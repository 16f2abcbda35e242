"""Arista EOS configuration for one leaf or spine: DSCP trust and map, PFC no-drop, ECN on the RoCE tx-queue, MTU.

The configuration is first built as AVD structured configuration (the `eos_cli_config_gen` input of Arista's AVD),
written next to the CLI for sites that run AVD, then rendered to the CLI the way AVD's templates render those keys.
Interface lines AVD's ethernet_interfaces schema has no key for are added to the CLI only:
`priority-flow-control pause watchdog` (the port joins the watchdog the global lines configure), `dcbx mode ieee`
(the port sends the PFC TLV the hosts check) and `priority strict` on the CNP tx-queue (AVD models it in qos_profiles
only).
The tests validate the structured configuration with pyavd's own schema and compare pyavd's rendering with the CLI.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import yaml

from wizard.switchcfg.model import ECN_MAX_BYTES, ECN_MIN_BYTES, SwitchPortUse, SwitchQos

EXT = "eos"
STRUCTURED_EXT = "avd.yml"
MTU = 9214  # the largest interface MTU EOS accepts
ECN_MAX_MARK_PERCENT = 5  # as SONiC's AZURE_LOSSLESS WRED profile; AVD's schema requires max-mark-probability
SOURCES = (
    "Arista AVD eos_cli_config_gen schema and templates (Arista's own EOS config generator): qos.j2 (`qos map dscp"
    " ... to traffic-class`, `qos map traffic-class ... to tx-queue`), ethernet-interfaces.j2 (`qos trust dscp`,"
    " `priority-flow-control on`, `priority-flow-control priority N no-drop`), ethernet-interface-tx-queues.j2"
    " (`random-detect ecn minimum-threshold X kbytes maximum-threshold Y kbytes max-mark-probability P`, `priority"
    " strict`), priority-flow-control.j2 (`priority-flow-control pause watchdog default timeout|recovery-time|"
    "polling-interval`, `... action drop`): https://github.com/aristanetworks/avd",
)
CLI_ONLY = ("   priority-flow-control pause watchdog", "   dcbx mode ieee")
STRICT = "      priority strict"  # under `tx-queue <CNP priority>`: CNPs never wait behind data


def cli_only(qos: SwitchQos) -> tuple[str, ...]:
    """The interface lines of the CLI that the structured configuration cannot hold."""
    return (*CLI_ONLY, f"   tx-queue {qos.cnp_priority}", STRICT)


def structured(
    switch: str, uses: list[SwitchPortUse], qos: SwitchQos, fabric: Sequence[str] = (), role: str = "leaf"
) -> dict[str, Any]:
    """AVD structured configuration (eos_cli_config_gen keys) for the switch's RoCE QoS."""
    if qos.host_mtu > MTU:
        raise ValueError(f"{switch}: the hosts' MTU {qos.host_mtu} exceeds the EOS maximum {MTU}")
    p, cnp = qos.priority, qos.cnp_priority
    config: dict[str, Any] = {
        "qos": {
            "map": {
                "dscp": [f"{qos.dscp} to traffic-class {p}", f"{qos.cnp_dscp} to traffic-class {cnp}"],
                "traffic_class": [f"{p} to tx-queue {p}", f"{cnp} to tx-queue {cnp}"],
            }
        }
    }
    wd = qos.watchdog
    if wd.enabled:
        timeout, recovery = wd.detection_ms / 1000, wd.restoration_ms / 1000
        config["priority_flow_control"] = {
            "watchdog": {
                "action": "drop",
                "timeout": timeout,
                "recovery_time": recovery,
                "polling_interval": min(timeout, recovery) / 2,
            }
        }
    interfaces = []
    blocks = [(u.port, u.serves()) for u in uses] + [(f, "uplink" if role == "leaf" else "to a leaf") for f in fabric]
    for port, descr in blocks:
        queues: list[dict[str, Any]] = []
        if qos.ecn:
            threshold = {"units": "kbytes", "min": ECN_MIN_BYTES // 1000, "max": ECN_MAX_BYTES // 1000,
                         "max_probability": ECN_MAX_MARK_PERCENT}  # fmt: skip
            queues.append({"id": p, "random_detect": {"ecn": {"threshold": threshold}}})
        interfaces.append(
            {
                "name": port,
                "description": descr,
                "mtu": MTU,
                "qos": {"trust": "dscp"},
                "priority_flow_control": {"enabled": True, "priorities": [{"priority": p, "no_drop": True}]},
                "tx_queues": queues,
            }
        )
    config["ethernet_interfaces"] = interfaces
    return config


def render_structured(
    switch: str, uses: list[SwitchPortUse], qos: SwitchQos, fabric: Sequence[str] = (), role: str = "leaf"
) -> str:
    """The structured configuration as YAML, for an AVD inventory's custom structured configuration."""
    head = (
        f"# roce-wizard switch-config: AVD structured configuration (eos_cli_config_gen) for {switch} ({role})\n"
        f"# From the answers: {qos.summary()}\n"
        "# The CLI beside it adds per interface what AVD has no key for: "
        f"{'; '.join(s.strip() for s in cli_only(qos))}.\n"
    )
    return head + yaml.safe_dump(structured(switch, uses, qos, fabric, role), sort_keys=False)


def render(
    switch: str, uses: list[SwitchPortUse], qos: SwitchQos, fabric: Sequence[str] = (), role: str = "leaf"
) -> str:
    """EOS CLI for `configure session` (or copy to running-config): global maps and the PFC watchdog, then one
    block per port that carries RoCE: the host ports LLDP found and the ``fabric`` ports (uplinks or spine ports)."""
    config = structured(switch, uses, qos, fabric, role)
    lines = [
        f"! roce-wizard switch-config: Arista EOS for {switch} ({role})",
        f"! From the answers: {qos.summary()}",
        "! Apply in a configuration session (configure session roce; paste; show session-config diffs; commit).",
        *(f"! Source: {s}" for s in SOURCES),
        "! 7280R/7500R (Jericho) platforms name the unicast queue `uc-tx-queue N` instead of `tx-queue N`.",
        "!",
    ]
    qmap = config["qos"]["map"]
    lines += [f"qos map dscp {m}" for m in qmap["dscp"]] + [f"qos map traffic-class {m}" for m in qmap["traffic_class"]]
    wd = config.get("priority_flow_control", {}).get("watchdog")
    if wd:
        lines += [
            f"priority-flow-control pause watchdog default timeout {wd['timeout']:g}",
            f"priority-flow-control pause watchdog default recovery-time {wd['recovery_time']:g}",
            f"priority-flow-control pause watchdog default polling-interval {wd['polling_interval']:g}",
            f"priority-flow-control pause watchdog action {wd['action']}",
        ]
    lines.append("!")
    for intf in config["ethernet_interfaces"]:
        lines += [f"interface {intf['name']}", f"   description {intf['description']}", f"   mtu {intf['mtu']}"]
        lines.append(f"   qos trust {intf['qos']['trust']}")
        lines.append("   priority-flow-control on")
        pfc = intf["priority_flow_control"]["priorities"]
        lines += [f"   priority-flow-control priority {x['priority']} no-drop" for x in pfc]
        if wd:
            lines.append(CLI_ONLY[0])
        lines.append(CLI_ONLY[1])
        for q in intf["tx_queues"]:
            t = q["random_detect"]["ecn"]["threshold"]
            lines += [
                f"   tx-queue {q['id']}",
                f"      random-detect ecn minimum-threshold {t['min']} {t['units']} maximum-threshold {t['max']}"
                f" {t['units']} max-mark-probability {t['max_probability']}",
            ]
        lines += [f"   tx-queue {qos.cnp_priority}", STRICT]
        lines.append("!")
    lines += ["end", ""]
    return "\n".join(lines)
