"""SONiC config_db JSON for one leaf: per-port DSCP/TC/PG maps, PFC, the WRED/ECN profile and MTU."""

from __future__ import annotations

import json
from typing import Any

from wizard.switchcfg.model import ECN_MAX_BYTES, ECN_MIN_BYTES, SwitchPortUse, SwitchQos

EXT = "json"
# SONiC's own default port MTU; its lossless headroom is calculated for 9100 whatever the port MTU (NVIDIA SONiC
# 202012 docs, "QoS and Buffers", BUFFER_PROFILE). The PORT.mtu leaf allows 68..9216 (sonic-port.yang).
MTU = 9100
MAP = "ROCE"  # one name for every map table: [a-zA-Z0-9][-a-zA-Z0-9_]{0,31} (sonic-dscp-tc-map.yang and siblings)
WRED = "ROCE_LOSSLESS"
# SONiC's default templates (files/build_templates/qos_config.j2) make priorities 3 AND 4 lossless
# (LOSSLESS_TC = ['3','4'], pfc_enable "3,4", BUFFER_PG "<port>|3-4") for Microsoft's two lossless classes. The
# hosts send RDMA on one priority only, so exactly that one is lossless here: a second no-drop class would reserve
# headroom nobody uses and could pause traffic the hosts treat as lossy.
DEFAULT_LOSSLESS = (3, 4)
SOURCES = (
    "sonic-buildimage src/sonic-yang-models/yang-models: sonic-port-qos-map.yang, sonic-dscp-tc-map.yang,"
    " sonic-tc-queue-map.yang, sonic-tc-priority-group-map.yang, sonic-pfc-priority-queue-map.yang,"
    " sonic-pfc-priority-priority-group-map.yang, sonic-wred-profile.yang, sonic-queue.yang, sonic-buffer-pg.yang,"
    " sonic-port.yang (https://github.com/sonic-net/sonic-buildimage)",
    "sonic-buildimage files/build_templates/qos_config.j2 and buffers_config.j2 (AZURE maps, AZURE_LOSSLESS WRED)",
    "NVIDIA SONiC 202012 User Manual, 'QoS and Buffers' (dynamic buffer model, lossless priority groups)",
)


def config(switch: str, uses: list[SwitchPortUse], qos: SwitchQos) -> dict[str, Any]:
    """The config_db fragment as a dict (every value a string, as CONFIG_DB stores it)."""
    if qos.host_mtu > MTU:
        raise ValueError(f"{switch}: the hosts' MTU {qos.host_mtu} exceeds SONiC's port MTU {MTU}")
    p = qos.priority
    dscp_to_tc = {str(d): str(d >> 3) for d in range(64)}  # the hosts' default dscp2prio map (DSCP>>3)
    dscp_to_tc[str(qos.dscp)] = str(p)
    dscp_to_tc[str(qos.cnp_dscp)] = str(qos.cnp_priority)
    identity = {str(i): str(i) for i in range(8)}
    db: dict[str, Any] = {
        "DSCP_TO_TC_MAP": {MAP: dscp_to_tc},
        "TC_TO_QUEUE_MAP": {MAP: identity},
        "TC_TO_PRIORITY_GROUP_MAP": {MAP: {str(tc): str(tc if tc == p else 0) for tc in range(8)}},
        "MAP_PFC_PRIORITY_TO_QUEUE": {MAP: identity},
        "PFC_PRIORITY_TO_PRIORITY_GROUP_MAP": {MAP: {str(p): str(p)}},
        "PORT": {u.port: {"mtu": str(MTU), "description": u.serves()} for u in uses},
        "PORT_QOS_MAP": {
            u.port: {
                "dscp_to_tc_map": MAP,
                "tc_to_queue_map": MAP,
                "tc_to_pg_map": MAP,
                "pfc_to_queue_map": MAP,
                "pfc_to_pg_map": MAP,
                "pfc_enable": str(p),
                "pfcwd_sw_enable": str(p),
            }
            for u in uses
        },
    }
    if qos.ecn:
        # Modelled on SONiC's AZURE_LOSSLESS profile (ecn_all, WRED on all colours); thresholds as NVIDIA's RoCE
        # profile. ECT packets above the thresholds are marked, not dropped.
        colours = ("green", "yellow", "red")
        profile: dict[str, str] = {"ecn": "ecn_all"}
        for colour in colours:
            profile[f"wred_{colour}_enable"] = "true"
            profile[f"{colour}_min_threshold"] = str(ECN_MIN_BYTES)
            profile[f"{colour}_max_threshold"] = str(ECN_MAX_BYTES)
            profile[f"{colour}_drop_probability"] = "5"
        db["WRED_PROFILE"] = {WRED: profile}
        db["QUEUE"] = {f"{u.port}|{p}": {"wred_profile": WRED} for u in uses}
    if p not in DEFAULT_LOSSLESS:
        # Dynamic buffer model (default since 202012): profile "NULL" asks buffermgrd to size the headroom from
        # speed, cable length and MTU. Priorities 3-4 already have such an entry from the default template.
        db["BUFFER_PG"] = {f"{u.port}|{p}": {"profile": "NULL"} for u in uses}
    return db


def render(switch: str, uses: list[SwitchPortUse], qos: SwitchQos) -> str:
    """JSON for `sudo config load FILE -y` (merged into CONFIG_DB), then `sudo config save -y`."""
    return json.dumps(config(switch, uses, qos), indent=2, sort_keys=True) + "\n"
