"""SONiC on an NVIDIA Spectrum-4 switch (SN5600), configured through CONFIG_DB (`sudo config load FILE -y`).

Ports are ``Ethernet0, Ethernet8, ...`` (eight lanes each) with the aliases ``etp1, etp2, ...`` the SN5600's
port_config.ini gives them (sonic-buildimage device/mellanox/x86_64-nvidia_sn5600-r0). lldpmgrd configures lldpd
with ``lldpcli configure ports <name> lldp portidsubtype local <alias>`` (dockers/docker-lldp/lldpmgrd), so a
neighbour sees the alias as the port ID and the PORT table's description as the port description. SONiC's LLDP
sends no DCBX TLVs.

`config load` is ``sonic-cfggen -j FILE --write-to-db``: the JSON is merged into CONFIG_DB key by key, field by
field, without any check that a port exists; orchagent acts only on keys that name real ports, so an entry for
``etp5`` or ``swp5`` is stored and does nothing.

What makes a priority lossless on a port (sonic-swss orchagent/qosorch, buffermgrd): PORT_QOS_MAP maps DSCP to a
traffic class and lists the priority in ``pfc_enable``, and BUFFER_PG holds a lossless profile for the priority
group. The simulated switch runs the dynamic buffer model, the default of Mellanox images (DEVICE_METADATA
buffer_model ``dynamic``, platform/mellanox/rules.mk): a BUFFER_PG entry whose profile is ``NULL`` asks buffermgrd
to size the headroom; the traditional model rejects ``NULL``. ECN marking: QUEUE's
``wred_profile`` naming a WRED_PROFILE with ``ecn`` other than ``ecn_none``. Strict priority: QUEUE's
``scheduler`` naming a SCHEDULER of ``type`` STRICT. PFC watchdog: a PFC_WD entry for the port.

Defaults without a QoS file (see initial): the AZURE maps and buffers of the templates on every port, which make
priorities 3 and 4 lossless but put RoCE's DSCP 26 in lossy traffic class 1.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from typing import Any

from wizard.lab.switch_os import LoadResult
from wizard.lab.switches import Switch

DESCR = (
    "SONiC Software Version: SONiC.202311.0 - HwSku: Mellanox-SN5600-V256 - Distribution: Debian 12.6 - "
    "Kernel: 6.1.0-11-2-amd64"
)
PORT_MTU = "9100"
ECN_MARKING = ("ecn_all", "ecn_green", "ecn_yellow", "ecn_red", "ecn_green_yellow", "ecn_green_red", "ecn_yellow_red")


def port_name(index: int) -> tuple[str, str]:
    return f"Ethernet{(index - 1) * 8}", f"etp{index}"


@dataclass
class State:
    db: dict[str, dict[str, dict[str, Any]]] = field(default_factory=dict)


def initial(switch: Switch) -> State:
    """CONFIG_DB after first boot: the SKU's ports, and the QoS and buffer templates applied to every port (with no
    DEVICE_NEIGHBOR, PORT_ACTIVE is every port: files/build_templates/qos_config.j2, the Mellanox
    buffers_defaults_objects.j2)."""
    ports = {
        name: {
            "alias": sp.alias,
            "index": str(sp.index),
            "lanes": _lanes(sp.index),
            "speed": "400000",
            "mtu": PORT_MTU,
            "admin_status": "up",
            "description": sp.descr,
        }  # fmt: skip
        for name, sp in switch.ports.items()
    }
    meta = {"hostname": switch.name, "hwsku": "Mellanox-SN5600-V256", "platform": "x86_64-nvidia_sn5600-r0",
            "buffer_model": "dynamic", "type": "LeafRouter", "default_pfcwd_status": "disable"}  # fmt: skip
    db: dict[str, dict[str, dict[str, Any]]] = {"DEVICE_METADATA": {"localhost": meta}, "PORT": ports}
    db["DSCP_TO_TC_MAP"] = {"AZURE": AZURE_DSCP_TO_TC}
    db["TC_TO_PRIORITY_GROUP_MAP"] = {"AZURE": {str(t): str(t if t in (3, 4, 7) else 0) for t in range(8)}}
    db["TC_TO_QUEUE_MAP"] = {"AZURE": {str(t): str(t) for t in range(8)}}
    # qos_config.j2 writes both PFC maps on Mellanox (pfc_to_pg_map_supported_asics = ['mellanox', 'barefoot'])
    db["MAP_PFC_PRIORITY_TO_QUEUE"] = {"AZURE": {str(t): str(t) for t in range(8)}}
    db["PFC_PRIORITY_TO_PRIORITY_GROUP_MAP"] = {"AZURE": {"3": "3", "4": "4"}}
    # The Mellanox buffers_defaults_objects.j2 pools of the dynamic model (buffermgrd sizes them, but the egress
    # lossless pool); every BUFFER_PROFILE names one (sonic-buffer-profile.yang: pool is a leafref)
    db["BUFFER_POOL"] = {
        "ingress_lossless_pool": {"type": "ingress", "mode": "dynamic"},
        "ingress_lossy_pool": {"type": "ingress", "mode": "dynamic"},
        "egress_lossless_pool": {"type": "egress", "mode": "dynamic", "size": "60817392"},
        "egress_lossy_pool": {"type": "egress", "mode": "dynamic"},
    }
    db["WRED_PROFILE"] = {"AZURE_LOSSLESS": {"ecn": "ecn_all", "green_min_threshold": "1048576",
                                             "green_max_threshold": "2097152", "green_drop_probability": "5",
                                             "wred_green_enable": "true"}}  # fmt: skip
    db["SCHEDULER"] = {"scheduler.0": {"type": "DWRR", "weight": "14"}, "scheduler.1": {"type": "DWRR", "weight": "15"}}
    db["BUFFER_PROFILE"] = {
        "ingress_lossless_profile": {"pool": "ingress_lossless_pool", "size": "0", "dynamic_th": "7"},
        "ingress_lossy_profile": {"pool": "ingress_lossy_pool", "size": "0", "dynamic_th": "3"},
        "egress_lossless_profile": {"pool": "egress_lossless_pool", "size": "0", "dynamic_th": "7"},
        "q_lossy_profile": {"pool": "egress_lossy_pool", "size": "0", "dynamic_th": "3"},
    }
    qos, queues, pgs, bqueues = {}, {}, {}, {}
    for name in ports:
        qos[name] = {"dscp_to_tc_map": "AZURE", "tc_to_queue_map": "AZURE", "tc_to_pg_map": "AZURE",
                     "pfc_to_queue_map": "AZURE", "pfc_to_pg_map": "AZURE", "pfc_enable": "3,4",
                     "pfcwd_sw_enable": "3,4"}  # fmt: skip
        for q in ("0", "1", "2", "5", "6"):
            queues[f"{name}|{q}"] = {"scheduler": "scheduler.0"}
        for q in ("3", "4"):
            queues[f"{name}|{q}"] = {"scheduler": "scheduler.1", "wred_profile": "AZURE_LOSSLESS"}
        pgs[f"{name}|0"] = {"profile": "ingress_lossy_profile"}
        pgs[f"{name}|3-4"] = {"profile": "NULL"}
        bqueues[f"{name}|3-4"] = {"profile": "egress_lossless_profile"}
        bqueues[f"{name}|0-2"] = bqueues[f"{name}|5-6"] = {"profile": "q_lossy_profile"}
    db.update(PORT_QOS_MAP=qos, QUEUE=queues, BUFFER_PG=pgs, BUFFER_QUEUE=bqueues)
    return State(db)


# files/build_templates/qos_config.j2, DSCP_TO_TC_MAP "AZURE": RoCE's DSCP 26 lands in lossy TC 1
AZURE_DSCP_TO_TC = {str(d): "1" for d in range(64)} | {"3": "3", "4": "4", "5": "2", "8": "0", "46": "5", "48": "6"}


def _lanes(index: int) -> str:
    return ",".join(str((index - 1) * 8 + i) for i in range(8))


def show_alias(switch: Switch) -> str:
    """``show interfaces alias`` (sonic-utilities show/interfaces: tabulate, headers Name and Alias)."""
    rows = sorted(((n, sp.alias) for n, sp in switch.ports.items()), key=lambda r: int(r[0][8:]))
    width = max(len("Name"), *(len(n) for n, _ in rows))
    awidth = max(len("Alias"), *(len(a) for _, a in rows))
    lines = [f"{'Name':<{width}}  {'Alias':<{awidth}}", f"{'-' * width}  {'-' * awidth}"]
    lines += [f"{n:<{width}}  {a:<{awidth}}" for n, a in rows]
    return "\n".join(lines) + "\n"


def run(state: State, switch: Switch, text: str) -> LoadResult:
    """`sudo config load FILE -y`: merge the JSON into CONFIG_DB (then the operator's `config save -y`)."""
    command = "Running command: /usr/local/bin/sonic-cfggen -j /tmp/roce-wizard.json --write-to-db"
    try:
        doc = json.loads(text)
    except json.JSONDecodeError as exc:
        return LoadResult(1, f"{command}\njson.decoder.JSONDecodeError: {exc}", False)
    if not isinstance(doc, dict) or not all(isinstance(t, dict) for t in doc.values()):
        return LoadResult(1, f"{command}\nError: the file is not a CONFIG_DB object (table -> key -> fields)", False)
    for table, entries in doc.items():
        for key, fields in entries.items():
            if not isinstance(fields, dict):
                return LoadResult(1, f"{command}\nError: {table}|{key}: fields must be an object", False)
            state.db.setdefault(table, {}).setdefault(key, {}).update(fields)
    return LoadResult(0, command, True)


def _ref(value: Any, table: str) -> str:
    """A reference as CONFIG_DB holds it: "NAME" (202205 and later) or "[TABLE|NAME]" (older releases)."""
    text = str(value)
    m = re.fullmatch(rf"\[{table}\|(.+)\]", text)
    return m[1] if m else text


def _entries(db: dict[str, dict[str, dict[str, Any]]], table: str, port: str) -> dict[str, dict[str, Any]]:
    """``PORT|a-b`` / ``PORT|a`` keys of a per-port table, by the range after the port name."""
    return {k.split("|", 1)[1]: v for k, v in db.get(table, {}).items() if k.split("|", 1)[0] == port and "|" in k}


def _covers(spec: str, n: int) -> bool:
    m = re.fullmatch(r"(\d+)(?:-(\d+))?", spec)
    return bool(m) and int(m[1]) <= n <= int(m[2] or m[1])


def _lossless_profile(db: dict[str, dict[str, dict[str, Any]]], profile: str) -> bool:
    if profile == "NULL":  # the dynamic model sizes the headroom itself; the traditional model rejects it
        return db["DEVICE_METADATA"]["localhost"].get("buffer_model") == "dynamic"
    fields = db.get("BUFFER_PROFILE", {}).get(profile)
    return bool(fields) and ("xoff" in fields or "headroom_type" in fields or "lossless" in profile)


def _bound(db: dict[str, dict[str, dict[str, Any]]], qmap: dict[str, Any], field: str, table: str) -> dict[str, Any]:
    """The map a PORT_QOS_MAP field names ({} when unset or naming no entry)."""
    return db.get(table, {}).get(_ref(qmap.get(field, ""), table), {})


def effective(state: State, switch: Switch) -> None:
    db = state.db
    for name, sp in switch.ports.items():
        port = db.get("PORT", {}).get(name, {})
        sp.lldp_id, sp.lldp_id_type = port.get("alias") or name, "local"
        sp.descr = port.get("description", sp.descr)
        sp.lldp_descr = sp.descr or name
        sp.mtu = int(port.get("mtu", PORT_MTU))
        qmap = db.get("PORT_QOS_MAP", {}).get(name, {})
        dscp_map = _bound(db, qmap, "dscp_to_tc_map", "DSCP_TO_TC_MAP")
        if "dscp_to_tc_map" in qmap:
            sp.trust = "dscp"
            sp.dscp_prio = {d: int(dscp_map.get(str(d), 0)) for d in range(64)}
        sp.pfc_priorities = {int(p) for p in str(qmap.get("pfc_enable", "")).split(",") if p.strip().isdigit()}
        tc_pg = _bound(db, qmap, "tc_to_pg_map", "TC_TO_PRIORITY_GROUP_MAP")
        pgs = _entries(db, "BUFFER_PG", name)
        sp.headroom = {
            p
            for p in sp.pfc_priorities
            for spec, f in pgs.items()
            if _covers(spec, int(tc_pg.get(str(p), p)))
            and _lossless_profile(db, _ref(f.get("profile", ""), "BUFFER_PROFILE"))
        }
        tc_q = _bound(db, qmap, "tc_to_queue_map", "TC_TO_QUEUE_MAP")
        queues = _entries(db, "QUEUE", name)
        for prio in range(8):
            q = int(tc_q.get(str(prio), prio))
            for spec, f in queues.items():
                if not _covers(spec, q):
                    continue
                wred = db.get("WRED_PROFILE", {}).get(_ref(f.get("wred_profile", ""), "WRED_PROFILE"), {})
                if wred.get("ecn") in ECN_MARKING:
                    sp.ecn_prios.add(prio)
                sched = db.get("SCHEDULER", {}).get(_ref(f.get("scheduler", ""), "SCHEDULER"), {})
                if str(sched.get("type", "")).upper() == "STRICT":
                    sp.strict_prios.add(prio)
        wd = db.get("PFC_WD", {}).get(name, {})
        sp.pfc_watchdog = bool(sp.pfc_priorities) and wd.get("action") in ("drop", "forward", "alert")
