"""Parsers for LLDP neighbours: lldpd's `lldpctl -f json` and lldpad's `lldptool -t -n -i IF [-V PFC]`."""

from __future__ import annotations

import json
import re
from typing import Any

from wizard.parsers.common import Parsed, ParseError

# IEEE 802.1 organisationally specific TLVs of 802.1Qaz (IEEE 802.1Q-2018 Annex D.2.9-D.2.11): lldpd decodes
# none of them and lists them under "unknown-tlvs" (src/daemon/protocols/lldp.c, "Unknown Dot1 TLV") when built
# with custom TLV support (the default); lldpcli prints their payload as comma-separated hex bytes.
DOT1_OUI = "00,80,C2"
PFC_SUBTYPE = 11  # Priority-based Flow Control Configuration TLV
APP_SUBTYPE = 12  # Application Priority TLV
DSCP_SELECTOR = 5  # APP TLV selector 5: protocol id is a DSCP value (802.1Q-2018 Table D-9)


class UnknownTlv(Parsed):
    """An organisationally specific TLV lldpd does not decode, as lldpctl shows it."""

    oui: str
    subtype: int
    value: str = ""  # "08,08": payload bytes after OUI and subtype

    def payload(self) -> bytes:
        return bytes(int(b, 16) for b in self.value.split(",") if b.strip())


class LldpNeighbor(Parsed):
    """The LLDP neighbour seen on one host port: switch, switch port and the DCB/MTU facts it advertises."""

    local_port: str
    chassis_name: str | None = None
    chassis_id: str | None = None
    chassis_id_type: str | None = None
    port_id: str | None = None
    port_id_type: str | None = None
    port_descr: str | None = None
    mgmt_ip: str | None = None
    ttl: int | None = None
    mtu: int | None = None  # 802.3 Maximum Frame Size TLV (MFS; counts the Ethernet header)
    vlan_id: int | None = None
    pfc_enabled: list[int] | None = None  # None: the neighbour sends no PFC TLV
    pfc_willing: bool | None = None
    pfc_capable: int | None = None
    app_dscp: dict[int, int] = {}  # DSCP -> priority from the APP TLV
    dcbx: str | None = None  # "ieee" or "cee": the DCBX flavour the PFC facts came from
    unknown_tlvs: list[UnknownTlv] = []

    @property
    def switch_port(self) -> str:
        """`switch/port` for tables: the chassis name (or id) and the port id."""
        return f"{self.chassis_name or self.chassis_id or '?'}/{self.port_id or '?'}"


class LldpNeighbors(Parsed):
    """Every neighbour lldpd knows, in its order (one port may list several)."""

    neighbors: list[LldpNeighbor] = []

    def by_port(self) -> dict[str, LldpNeighbor]:
        """Local port -> its first neighbour."""
        result: dict[str, LldpNeighbor] = {}
        for n in self.neighbors:
            result.setdefault(n.local_port, n)
        return result


def parse_lldpctl_json(text: str) -> LldpNeighbors:
    """Parse `lldpctl -f json` (= `lldpcli -f json show neighbors [details]`) of lldpd 0.9+."""
    if not text.strip():
        raise ParseError("empty input: no lldpctl -f json output")
    start = text.find("{")
    if start < 0:
        raise ParseError("no JSON object: not lldpctl -f json output")
    try:
        data, _ = json.JSONDecoder().raw_decode(text[start:].replace("\r\n", "\n"))
    except json.JSONDecodeError as exc:
        raise ParseError(f"lldpctl JSON does not parse (truncated?): {exc.msg} at char {exc.pos}") from None
    if not isinstance(data, dict) or "lldp" not in data:
        raise ParseError('no "lldp" key: not lldpctl -f json output')
    lldp = data["lldp"]
    if isinstance(lldp, list):
        raise ParseError("lldpctl -f json0 output: run lldpctl -f json")
    interfaces = (lldp or {}).get("interface", []) if isinstance(lldp, dict) else []
    return LldpNeighbors(neighbors=[_neighbor(name, body) for name, body in _interfaces(interfaces)])


def _interfaces(value: Any) -> list[tuple[str, dict[str, Any]]]:
    """One interface is an object keyed by its name; several are a list of such objects (json_writer.c)."""
    items = value if isinstance(value, list) else [value]
    result = []
    for item in items:
        if not isinstance(item, dict):
            continue
        if isinstance(item.get("name"), str):  # an older writer kept the name inside
            result.append((item["name"], item))
            continue
        result += [(name, body) for name, body in item.items() if isinstance(body, dict)]
    return result


def _neighbor(local: str, body: dict[str, Any]) -> LldpNeighbor:
    n = LldpNeighbor(local_port=local)
    chassis = body.get("chassis") or {}
    if isinstance(chassis, dict) and "id" not in chassis and len(chassis) == 1:
        n.chassis_name, chassis = next(iter(chassis.items()))
    elif isinstance(chassis, dict) and isinstance(chassis.get("name"), str):
        n.chassis_name = chassis["name"]
    chassis = chassis if isinstance(chassis, dict) else {}
    n.chassis_id_type, n.chassis_id = _typed(chassis.get("id"))
    n.mgmt_ip = _first_ip(chassis.get("mgmt-ip"))
    port = body.get("port") or {}
    n.port_id_type, n.port_id = _typed(port.get("id"))
    n.port_descr = _text(port.get("descr"))
    n.ttl = _int(port.get("ttl") or chassis.get("ttl"))
    n.mtu = _int(port.get("mfs"))
    vlan = body.get("vlan")
    vlan = vlan[0] if isinstance(vlan, list) and vlan else vlan
    n.vlan_id = _int(vlan.get("vlan-id")) if isinstance(vlan, dict) else None
    tlvs = (body.get("unknown-tlvs") or {}).get("unknown-tlv", [])
    for tlv in tlvs if isinstance(tlvs, list) else [tlvs]:
        if isinstance(tlv, dict) and _int(tlv.get("subtype")) is not None:
            n.unknown_tlvs.append(
                UnknownTlv(oui=str(tlv.get("oui", "")).upper(), subtype=int(tlv["subtype"]), value=tlv.get("value", ""))
            )
    _decode_dcb(n)
    return n


def _decode_dcb(n: LldpNeighbor) -> None:
    """PFC and APP from the raw 802.1Qaz TLVs (byte layouts of IEEE 802.1Q-2018 D.2.10 and D.2.11)."""
    for tlv in n.unknown_tlvs:
        if tlv.oui != DOT1_OUI:
            continue
        data = tlv.payload()
        if tlv.subtype == PFC_SUBTYPE and len(data) >= 2:
            n.dcbx, n.pfc_willing, n.pfc_capable = "ieee", bool(data[0] & 0x80), data[0] & 0x0F
            n.pfc_enabled = [p for p in range(8) if data[1] >> p & 1]
        elif tlv.subtype == APP_SUBTYPE:
            for at in range(1, len(data) - 2, 3):  # one reserved byte, then 3-byte entries
                if data[at] & 0x07 == DSCP_SELECTOR:
                    n.app_dscp[data[at + 1] << 8 | data[at + 2]] = data[at] >> 5


def _typed(value: Any) -> tuple[str | None, str | None]:
    if isinstance(value, dict):
        return value.get("type"), _text(value.get("value"))
    return None, _text(value)


def _text(value: Any) -> str | None:
    if isinstance(value, list):
        value = value[0] if value else None
    return value.strip() or None if isinstance(value, str) else None


def _first_ip(value: Any) -> str | None:
    values = [v for v in (value if isinstance(value, list) else [value]) if isinstance(v, str) and v]
    return next((v for v in values if "." in v), values[0] if values else None)


def _int(value: Any) -> int | None:
    try:
        return int(str(value).strip())
    except (TypeError, ValueError):
        return None


# -- lldpad: lldptool -t -n -i IF [-V PFC] -------------------------------------------------------------------
class LldptoolNeighbor(Parsed):
    """The TLVs lldptool printed for one port's neighbour (or, without -n, what the port sends)."""

    tlvs: list[str] = []
    chassis_id: str | None = None
    port_id: str | None = None
    port_descr: str | None = None
    system_name: str | None = None
    mgmt_ip: str | None = None
    ttl: int | None = None
    mtu: int | None = None
    pfc_enabled: list[int] | None = None
    pfc_willing: bool | None = None
    pfc_capable: int | None = None
    app_dscp: dict[int, int] = {}
    dcbx: str | None = None

    def neighbor(self, local_port: str) -> LldpNeighbor:
        """The same facts in the shape discovery keeps for lldpctl."""
        return LldpNeighbor(
            local_port=local_port,
            chassis_name=self.system_name,
            chassis_id=self.chassis_id,
            port_id=self.port_id,
            port_descr=self.port_descr,
            mgmt_ip=self.mgmt_ip,
            ttl=self.ttl,
            mtu=self.mtu,
            pfc_enabled=self.pfc_enabled,
            pfc_willing=self.pfc_willing,
            pfc_capable=self.pfc_capable,
            app_dscp=dict(self.app_dscp),
            dcbx=self.dcbx,
        )


_TLV_HEADER = re.compile(r"^\S.*\bTLV\b")
_VALUE = re.compile(r"^(?:MAC|IPv4|IPv6|Ifname|Local|Port comp|Chassis comp|Network address|Agent circuit ID):\s*(.+)$")


def parse_lldptool(text: str) -> LldptoolNeighbor:
    """Parse lldpad's TLV listing (lldp_8021qaz_clif.c prints IEEE PFC/APP; the CEE DCBX TLV has its own form)."""
    lines = [ln.rstrip() for ln in text.replace("\r\n", "\n").split("\n")]
    blocks: list[tuple[str, list[str]]] = []
    for line in lines:
        if not line.strip():
            continue
        if _TLV_HEADER.match(line) and not line.lstrip().startswith(("#", "$")) and "@" not in line.split()[0]:
            blocks.append((line.strip(), []))
        elif blocks and line[:1] in (" ", "\t"):
            blocks[-1][1].append(line.strip())
    if not blocks:
        raise ParseError("no TLV header line (e.g. 'IEEE 8021QAZ PFC TLV'): not lldptool -t output")
    result = LldptoolNeighbor(tlvs=[name for name, _ in blocks])
    for name, body in blocks:
        first = body[0] if body else ""
        value = _VALUE.match(first)
        if name == "Chassis ID TLV":
            result.chassis_id = value.group(1) if value else first or None
        elif name == "Port ID TLV":
            result.port_id = value.group(1) if value else first or None
        elif name == "Port Description TLV":
            result.port_descr = first or None
        elif name == "System Name TLV":
            result.system_name = first or None
        elif name == "Management Address TLV" and value:
            result.mgmt_ip = value.group(1)
        elif name == "Time to Live TLV":
            result.ttl = _int(first)
        elif name == "Maximum Frame Size TLV":
            result.mtu = _int(first)
        elif name == "IEEE 8021QAZ PFC TLV":
            _ieee_pfc(result, body)
        elif name == "IEEE 8021QAZ APP TLV":
            _ieee_app(result, body)
        elif name == "CEE DCBX TLV" and result.dcbx is None:
            _cee_pfc(result, body)
    return result


def _ieee_pfc(result: LldptoolNeighbor, body: list[str]) -> None:
    fields = dict(line.split(":", 1) for line in body if ":" in line)
    fields = {k.strip(): v.strip() for k, v in fields.items()}
    result.dcbx = "ieee"
    result.pfc_willing = fields.get("Willing") == "yes" if "Willing" in fields else None
    result.pfc_capable = _int(fields.get("PFC capable traffic classes"))
    enabled = fields.get("PFC enabled", "")
    result.pfc_enabled = [int(p) for p in enabled.split() if p.isdigit()]


def _ieee_app(result: LldptoolNeighbor, body: list[str]) -> None:
    priority = selector = None
    for line in body:
        key, _, value = (part.strip() for part in line.partition(":"))
        if key == "Priority":
            priority = _int(value)
        elif key == "Sel":
            selector = _int(value)
        elif key and priority is not None and selector == DSCP_SELECTOR and _int(value) is not None:
            result.app_dscp[int(value)] = priority  # lldpad prints the DSCP value under "Reserved Port"


def _cee_pfc(result: LldptoolNeighbor, body: list[str]) -> None:
    """The PFC sub-TLV of a CEE DCBX TLV: 'Enabled, Not Willing, No Error' then the priorities."""
    try:
        at = body.index("Priority Flow Control TLV:")
    except ValueError:
        return
    state = body[at + 1] if at + 1 < len(body) else ""
    result.dcbx = "cee"
    result.pfc_willing = "Not Willing" not in state and "Willing" in state
    for line in body[at + 2 : at + 4]:
        key, _, value = line.partition(":")
        if key == "PFC enabled priorities":
            result.pfc_enabled = [int(p) for p in re.split(r"[,\s]+", value) if p.isdigit()]
        elif key == "Number of TC's supported":
            result.pfc_capable = _int(value)
    if "Enabled" not in state.split(",")[0]:
        result.pfc_enabled = []
