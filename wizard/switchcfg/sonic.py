"""SONiC config_db JSON for one leaf: per-port DSCP/TC/PG maps, PFC, the WRED/ECN profile and MTU."""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from typing import Any

from wizard.switchcfg.model import ECN_MAX_BYTES, ECN_MIN_BYTES, SwitchPortUse, SwitchQos

EXT = "json"
# SONiC's own default port MTU; its lossless headroom is calculated for 9100 whatever the port MTU (NVIDIA SONiC
# 202012 docs, "QoS and Buffers", BUFFER_PROFILE). The PORT.mtu leaf allows 68..9216 (sonic-port.yang).
MTU = 9100
MAP = "ROCE"  # one name for every map table: [a-zA-Z0-9][-a-zA-Z0-9_]{0,31} (sonic-dscp-tc-map.yang and siblings)
WRED = "ROCE_LOSSLESS"
CNP_SCHEDULER = "ROCE_CNP_STRICT"
TRADITIONAL_CABLE = "5m"  # the SN5600 SKUs' default cable length (buffers_defaults_t1.j2 default_cable)
# SONiC's default templates (files/build_templates/qos_config.j2) make priorities 3 AND 4 lossless
# (LOSSLESS_TC = ['3','4'], pfc_enable "3,4", BUFFER_PG "<port>|3-4") for Microsoft's two lossless classes, and put
# DSCP 26 in lossy TC 1. The hosts send RDMA on one priority only, so exactly that one is lossless here: a second
# no-drop class would reserve headroom nobody uses and could pause traffic the hosts treat as lossy.
SOURCES = (
    "sonic-buildimage src/sonic-yang-models/yang-models: sonic-port-qos-map.yang, sonic-dscp-tc-map.yang,"
    " sonic-tc-queue-map.yang, sonic-tc-priority-group-map.yang, sonic-pfc-priority-queue-map.yang,"
    " sonic-pfc-priority-priority-group-map.yang, sonic-wred-profile.yang, sonic-queue.yang, sonic-buffer-pg.yang,"
    " sonic-port.yang (https://github.com/sonic-net/sonic-buildimage)",
    "sonic-buildimage files/build_templates/qos_config.j2 and buffers_config.j2 (AZURE maps, AZURE_LOSSLESS WRED)",
    "NVIDIA SONiC 202012 User Manual, 'QoS and Buffers' (dynamic buffer model, lossless priority groups)",
    "sonic-utilities pfcwd/main.py (PFC_WD fields and defaults) and sonic-pfcwd.yang; sonic-scheduler.yang (STRICT)",
    "sonic-buildimage dockers/docker-lldp/lldpmgrd (LLDP port ID = the port's alias, hence the port map)",
)


def config(
    switch: str, uses: list[SwitchPortUse], qos: SwitchQos, fabric: Sequence[str] = (), role: str = "leaf"
) -> dict[str, Any]:
    """The config_db fragment as a dict (every value a string, as CONFIG_DB stores it). ``uses`` are the
    host-facing ports, ``fabric`` the ports toward the spines (a leaf) or the leaves (a spine): all carry RoCE.
    Port names must be SONiC's own (Ethernet0...), never the LLDP port ID (the alias)."""
    if qos.host_mtu > MTU:
        raise ValueError(f"{switch}: the hosts' MTU {qos.host_mtu} exceeds SONiC's port MTU {MTU}")
    p, cnp = qos.priority, qos.cnp_priority
    ports = {u.port: u.serves() for u in uses} | {f: ("uplink" if role == "leaf" else "to a leaf") for f in fabric}
    for name in ports:
        if not re.fullmatch(r"Ethernet\d+", name):
            raise ValueError(f"{switch}: {name!r} is not a SONiC port name (EthernetN): map LLDP aliases first")
    dscp_to_tc = {str(d): str(d >> 3) for d in range(64)}  # the hosts' default dscp2prio map (DSCP>>3)
    dscp_to_tc[str(qos.dscp)] = str(p)
    dscp_to_tc[str(qos.cnp_dscp)] = str(cnp)
    identity = {str(i): str(i) for i in range(8)}
    db: dict[str, Any] = {
        "DSCP_TO_TC_MAP": {MAP: dscp_to_tc},
        "TC_TO_QUEUE_MAP": {MAP: identity},
        "TC_TO_PRIORITY_GROUP_MAP": {MAP: {str(tc): str(tc if tc == p else 0) for tc in range(8)}},
        "MAP_PFC_PRIORITY_TO_QUEUE": {MAP: identity},
        "PFC_PRIORITY_TO_PRIORITY_GROUP_MAP": {MAP: {str(p): str(p)}},
        "PORT": {name: {"mtu": str(MTU), "description": descr} for name, descr in ports.items()},
        "PORT_QOS_MAP": {
            name: {
                "dscp_to_tc_map": MAP,
                "tc_to_queue_map": MAP,
                "tc_to_pg_map": MAP,
                "pfc_to_queue_map": MAP,
                "pfc_to_pg_map": MAP,
                "pfc_enable": str(p),
                "pfcwd_sw_enable": str(p),
            }
            for name in ports
        },
        # CNPs must not wait behind data: their queue is served strict priority (NVIDIA's RoCE profile puts them
        # in a strict class on Cumulus the same way).
        "SCHEDULER": {CNP_SCHEDULER: {"type": "STRICT"}},
        "QUEUE": {f"{name}|{cnp}": {"scheduler": CNP_SCHEDULER} for name in ports},
        # Lossless buffers written, not assumed (the template's "3-4" entries cover only the ports it saw):
        # dynamic model: "NULL" = buffermgrd sizes the headroom from speed, cable length and MTU; traditional:
        # the profile buffermgrd itself generates for a 400G port on the SKU's default 5 m cable.
        "BUFFER_PG": {f"{name}|{p}": {"profile": _pg_profile(qos)} for name in ports},
        "BUFFER_QUEUE": {f"{name}|{p}": {"profile": "egress_lossless_profile"} for name in ports},
    }
    if qos.buffer_model == "traditional" or qos.cable_m:
        # both buffer models size the lossless headroom from the port's cable length (buffermgrd)
        db["CABLE_LENGTH"] = {"AZURE": dict.fromkeys(ports, _cable(qos))}
    if qos.ecn:
        # Modelled on SONiC's AZURE_LOSSLESS profile (ecn_all, WRED on all colours); thresholds as NVIDIA's RoCE
        # profile. ECT packets above the thresholds are marked, not dropped.
        profile: dict[str, str] = {"ecn": "ecn_all"}
        for colour in ("green", "yellow", "red"):
            profile[f"wred_{colour}_enable"] = "true"
            profile[f"{colour}_min_threshold"] = str(ECN_MIN_BYTES)
            profile[f"{colour}_max_threshold"] = str(ECN_MAX_BYTES)
            profile[f"{colour}_drop_probability"] = "5"
        db["WRED_PROFILE"] = {WRED: profile}
        for name in ports:
            db["QUEUE"][f"{name}|{p}"] = {"wred_profile": WRED}
    wd = qos.watchdog
    if wd.enabled:
        # PFC_WD (sonic-pfcwd.yang): per port action / detection_time / restoration_time; the poll interval must
        # not exceed either time (pfcwd/main.py checks it), 200 ms is its default.
        poll = min(200, wd.detection_ms, wd.restoration_ms)
        db["PFC_WD"] = {"GLOBAL": {"POLL_INTERVAL": str(poll)}} | {
            name: {
                "action": wd.action,
                "detection_time": str(wd.detection_ms),
                "restoration_time": str(wd.restoration_ms),
            }  # fmt: skip
            for name in ports
        }
    return db


def _cable(qos: SwitchQos) -> str:
    return f"{qos.cable_m}m" if qos.cable_m else TRADITIONAL_CABLE


def _pg_profile(qos: SwitchQos) -> str:
    return "NULL" if qos.buffer_model == "dynamic" else f"pg_lossless_400000_{_cable(qos)}_profile"


def render(
    switch: str, uses: list[SwitchPortUse], qos: SwitchQos, fabric: Sequence[str] = (), role: str = "leaf"
) -> str:
    """JSON for `sudo config load FILE -y` (merged into CONFIG_DB), then `sudo config save -y`."""
    return json.dumps(config(switch, uses, qos, fabric, role), indent=2, sort_keys=True) + "\n"
