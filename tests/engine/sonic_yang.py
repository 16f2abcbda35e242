"""CONFIG_DB tables as YANG instance data for yanglint, by the rules of sonic-buildimage's own translator
(src/sonic-yang-mgmt/sonic_yang_ext.py), with values in the strict JSON encoding libyang 2.1 wants (RFC 7951:
integers up to 32 bits as numbers, 64-bit ones as strings, booleans as true/false). The models are fixtures:
tests/fixtures/sonic-yang (SOURCES.md)."""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path
from typing import Any

MODELS = Path(__file__).resolve().parents[1] / "fixtures" / "sonic-yang"
YANGLINT = shutil.which("yanglint")

# table -> (module, key leaves in the order of CONFIG_DB's "a|b" key); a map table -> (module, (inner key, value))
TABLES: dict[str, tuple[str, tuple[str, ...]]] = {
    "PORT": ("sonic-port", ("name",)),
    "PORT_QOS_MAP": ("sonic-port-qos-map", ("ifname",)),
    "WRED_PROFILE": ("sonic-wred-profile", ("name",)),
    "QUEUE": ("sonic-queue", ("ifname", "qindex")),
    "SCHEDULER": ("sonic-scheduler", ("name",)),
    "BUFFER_POOL": ("sonic-buffer-pool", ("name",)),
    "BUFFER_PROFILE": ("sonic-buffer-profile", ("name",)),
    "BUFFER_PG": ("sonic-buffer-pg", ("port", "pg_num")),
    "BUFFER_QUEUE": ("sonic-buffer-queue", ("port", "qindex")),
    "PFC_WD": ("sonic-pfcwd", ("ifname",)),
}
MAPS: dict[str, tuple[str, tuple[str, str]]] = {
    "DSCP_TO_TC_MAP": ("sonic-dscp-tc-map", ("dscp", "tc")),
    "TC_TO_QUEUE_MAP": ("sonic-tc-queue-map", ("tc", "qindex")),
    "TC_TO_PRIORITY_GROUP_MAP": ("sonic-tc-priority-group-map", ("tc", "pg")),
    "MAP_PFC_PRIORITY_TO_QUEUE": ("sonic-pfc-priority-queue-map", ("pfc_priority", "qindex")),
    "PFC_PRIORITY_TO_PRIORITY_GROUP_MAP": ("sonic-pfc-priority-priority-group-map", ("pfc_priority", "pg")),
    "CABLE_LENGTH": ("sonic-cable-length", ("port", "length")),
}
NUMBERS = {"speed", "mtu", "index", "weight", "priority", "dynamic_th", "detection_time", "restoration_time",
           "POLL_INTERVAL", "tc"}  # fmt: skip  # (u)int8..32 leaves of these tables
BOOLEANS = {"wred_green_enable", "wred_yellow_enable", "wred_red_enable"}


def _value(leaf: str, value: str) -> Any:
    if leaf in NUMBERS:
        return int(value)
    if leaf in BOOLEANS:
        return value == "true"
    return value


def instance(db: dict[str, dict[str, Any]]) -> dict[str, Any]:
    """The YANG instance document of the tables above (others are left out)."""
    out: dict[str, Any] = {}

    def table(module: str, name: str) -> dict[str, Any]:
        return out.setdefault(f"{module}:{module}", {}).setdefault(f"{module}:{name}", {})

    for name, entries in db.items():
        if name == "DEVICE_METADATA":
            table("sonic-device_metadata", name).update(entries)
        elif name in TABLES:
            module, keys = TABLES[name]
            rows = []
            for key, fields in entries.items():
                parts = [p.strip() for p in key.split("|")]
                assert len(parts) == len(keys), (name, key)
                rows.append({**dict(zip(keys, parts, strict=True)), **{k: _value(k, v) for k, v in fields.items()}})
            table(module, name)[f"{name}_LIST"] = rows
        elif name in MAPS:
            module, (inner, outer) = MAPS[name]
            table(module, name)[f"{name}_LIST"] = [
                {"name": key, name: [{inner: _value(inner, k), outer: _value(outer, v)} for k, v in pairs.items()]}
                for key, pairs in entries.items()
            ]
    return out


def yanglint(db: dict[str, dict[str, Any]], workdir: Path) -> subprocess.CompletedProcess[str]:
    """Validate the tables with libyang's yanglint against the sonic-yang-models (exit 0: valid)."""
    data = workdir / "config_db.yang.json"
    data.write_text(json.dumps(instance(db), indent=1))
    models = sorted(str(p) for p in MODELS.glob("sonic-*.yang"))
    return subprocess.run(
        [YANGLINT or "yanglint", "-i", "-p", str(MODELS), "-t", "config", *models, str(data)],
        capture_output=True,
        text=True,
        timeout=120,
    )


def errors(done: subprocess.CompletedProcess[str]) -> list[str]:
    return [line for line in done.stderr.splitlines() if line.startswith("libyang err")]
