"""NVIDIA Cumulus Linux (NVUE) commands for one leaf: the RoCE lossless profile moved onto the answers' priority."""

from __future__ import annotations

from collections.abc import Sequence

from wizard.switchcfg.model import ECN_MAX_BYTES, ECN_MIN_BYTES, SwitchPortUse, SwitchQos

EXT = "nvue.sh"
# Cumulus Linux takes an interface MTU up to 9216 (the maximum NVIDIA's examples set on switch ports).
MTU = 9216
# What `nv set qos roce mode lossless` sets up (Cumulus Linux 5.15 user guide, "RDMA over Converged Ethernet -
# RoCE", Default RoCE Configuration): PFC and the lossless pool on switch priority 3, switch priority 3 -> traffic
# class 3 (RoCE, ECN-marked), switch priority 6 -> traffic class 6 (CNP, strict priority), the rest -> class 0.
PROFILE_PRIORITY = 3
PROFILE_SP_TO_TC = {sp: {3: 3, 6: 6}.get(sp, 0) for sp in range(8)}
ROCE_TC = 3
CNP_TC = 6
WATCHDOG_POLL_MS = 100  # Cumulus's default polling interval (Quality of Service, "PFC Watchdog")
SOURCES = (
    "NVIDIA Cumulus Linux 5.15 User Guide, 'RDMA over Converged Ethernet - RoCE' (Default RoCE Configuration;"
    " Change RoCE Configuration): https://docs.nvidia.com/networking-ethernet-software/cumulus-linux-515/"
    "Layer-1-and-Switch-Ports/Quality-of-Service/RDMA-over-Converged-Ethernet-RoCE/",
    "NVIDIA Cumulus Linux 5.19 User Guide, 'Quality of Service' (Trust DSCP; Explicit Congestion Notification):"
    " https://docs.nvidia.com/networking-ethernet-software/cumulus-linux-519/Layer-1-and-Switch-Ports/"
    "Quality-of-Service/",
)


def render(
    switch: str, uses: list[SwitchPortUse], qos: SwitchQos, fabric: Sequence[str] = (), role: str = "leaf"
) -> str:
    """A bash script of `nv set` commands ending in `nv config apply` (which shows the diff and asks). The QoS is
    global; the MTU and the PFC watchdog are set on every port that carries RoCE: the host ports LLDP found and
    the ``fabric`` ports (uplinks or spine ports)."""
    if qos.host_mtu > MTU:
        raise ValueError(f"{switch}: the hosts' MTU {qos.host_mtu} exceeds the Cumulus Linux maximum {MTU}")
    lines = [
        "#!/bin/bash",
        f"# roce-wizard switch-config: NVIDIA Cumulus Linux (NVUE) for {switch} ({role})",
        f"# From the answers: {qos.summary()}",
        "# Run it on the switch as a user allowed to configure NVUE; `nv config apply` shows the change and asks.",
        *(f"# Source: {s}" for s in SOURCES),
        "set -euo pipefail",
        "",
        "# RoCE lossless profile: trust PCP+DSCP, PFC and a lossless buffer pool, ECN on traffic class 3, CNPs in",
        "# strict-priority traffic class 6. It is global: spine-facing ports get the same lossless treatment.",
        "nv set qos roce mode lossless",
        "# The default DSCP map is DSCP>>3 (Quality of Service, Trust DSCP), the hosts' default map too; set the RoCE",
        "# DSCP explicitly so the file states what the hosts send.",
        "nv set qos mapping default-global trust both",
        f"nv set qos mapping default-global dscp {qos.dscp} switch-priority {qos.priority}",
    ]
    if qos.cable_m:
        lines += [
            f"# Lossless headroom for {qos.cable_m} m cables (roce.cable_length_m, as on the hosts):",
            "# what is still on the wire when a pause goes out must fit in the buffer.",
            f"nv set qos pfc default-global cable-length {qos.cable_m}",
        ]
    lines += _priority_moves(qos)
    lines += _ecn(qos)
    lines += _watchdog_global(qos)
    lines.append("")
    lines.append(f"# Host-facing ports found by LLDP ({len(uses)}); MTU {MTU} >= the hosts' {qos.host_mtu}")
    for use in uses:
        lines.append(f"# {use.port}: {use.serves()}")
        lines += _port(use.port, qos)
    if fabric:
        lines.append("")
        lines.append(
            f"# {'Uplinks' if role == 'leaf' else 'Ports toward the leaves'} ({len(fabric)}): RoCE between rails"
        )
        for port in fabric:
            lines += _port(port, qos)
    lines += ["", "nv config apply", "# nv config save   # only where auto-save is off: keeps it across reboots", ""]
    return "\n".join(lines)


def _port(port: str, qos: SwitchQos) -> list[str]:
    lines = [f"nv set interface {port} link mtu {MTU}"]
    if qos.watchdog.enabled:
        # the NVUE Command Reference's form (the user guide also shows a bare `qos pfc-watchdog`)
        lines.append(f"nv set interface {port} qos pfc-watchdog state enable")
    return lines


def _watchdog_global(qos: SwitchQos) -> list[str]:
    """The watchdog declares a storm after `robustness` polling intervals with the queue paused; Cumulus restores
    PFC by itself once a polling interval passes without pause frames (no restoration time to set)."""
    wd = qos.watchdog
    if not wd.enabled:
        return ["# switches.pfc_watchdog.enabled is false: no PFC watchdog (one hung NIC can pause the rail)."]
    robustness = max(1, -(-wd.detection_ms // WATCHDOG_POLL_MS))
    return [
        f"# PFC watchdog: a lossless queue paused for {wd.detection_ms} ms ({robustness} x {WATCHDOG_POLL_MS} ms) "
        "drops instead of pausing the rail (Quality of Service, PFC Watchdog).",
        f"nv set qos pfc-watchdog polling-interval {WATCHDOG_POLL_MS}",
        f"nv set qos pfc-watchdog robustness {robustness}",
    ]


def _priority_moves(qos: SwitchQos) -> list[str]:
    """Move PFC and the RoCE traffic class from switch priority 3 to the answers' priority (the guide's 'Change
    RoCE Configuration' recipe), and CNPs from switch priority 6 to theirs."""
    wanted = {sp: 0 for sp in range(8)}
    wanted[qos.cnp_priority] = CNP_TC
    wanted[qos.priority] = ROCE_TC  # the RoCE class wins if a site put CNPs on the lossless priority
    out: list[str] = []
    if qos.priority != PROFILE_PRIORITY:
        out += [
            f"# The answers' lossless priority is {qos.priority}, not the profile's {PROFILE_PRIORITY}: move PFC.",
            f"# Check afterwards that `nv show qos roce` lists switch priority {qos.priority} in the RoCE pool.",
            f"nv set qos pfc default-global switch-priority {qos.priority}",
            f"nv set qos traffic-pool roce-lossless switch-priority {qos.priority}",
        ]
    for sp in range(8):
        if wanted[sp] != PROFILE_SP_TO_TC[sp]:
            out.append(
                f"nv set qos egress-queue-mapping default-global switch-priority {sp} traffic-class {wanted[sp]}"
            )
    if qos.cnp_priority != 6:
        out.insert(0, f"# CNPs (DSCP {qos.cnp_dscp}) use priority {qos.cnp_priority}: strict-priority class {CNP_TC}.")
    return out


def _ecn(qos: SwitchQos) -> list[str]:
    if not qos.ecn:
        return [
            "# roce.ecn is false: the hosts run no DCQCN, so the switch marks no ECN on the RoCE class.",
            f"nv set qos congestion-control default-global traffic-class {ROCE_TC} ecn disable",
        ]
    return [
        f"# ECN (DCQCN's congestion point) on the RoCE class, {ECN_MIN_BYTES}-{ECN_MAX_BYTES} bytes like the profile.",
        f"nv set qos congestion-control default-global traffic-class {ROCE_TC} min-threshold {ECN_MIN_BYTES}",
        f"nv set qos congestion-control default-global traffic-class {ROCE_TC} max-threshold {ECN_MAX_BYTES}",
        f"nv set qos congestion-control default-global traffic-class {ROCE_TC} ecn enable",
    ]
