"""What the roce stage reads on a host (QoS, ECN, RDMA-CM, lldpad, persistence) and pure helpers to parse it."""

from __future__ import annotations

import ipaddress
import re
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

from steps.discovery.facts import NicPort
from steps.roce.ib_sl import IbLane

QOS_UNIT = "roce-wizard-qos.service"
UNIT_PATH = f"/etc/systemd/system/{QOS_UNIT}"
SCRIPT_PATH = "/usr/local/sbin/roce-wizard-qos.sh"
# Re-application after a driver reload: a udev rule on mlx5 netdev "add" starts the template unit per port.
TEMPLATE_UNIT = "roce-wizard-qos@.service"
TEMPLATE_PATH = f"/etc/systemd/system/{TEMPLATE_UNIT}"
UDEV_RULE_PATH = "/etc/udev/rules.d/90-roce-wizard-qos.rules"
CONFIGFS_CM = "/sys/kernel/config/rdma_cm"
ROCE_V2 = "RoCE v2"
ROCE_V1 = "IB/RoCE v1"

# Symbolic DSCP names iproute2's `dcb app show` prints (from /etc/iproute2/rt_dsfield) instead of numbers.
Target = tuple[NicPort, str, str | None]  # (physical port, RDMA device carrying it, RoCE LAG bond or None)
DevInfo = dict[str, tuple[str | None, int | None]]  # device -> (link layer, RoCE v2 IPv4 GID index)

DSCP_NAMES: dict[str, int] = {f"CS{i}": i * 8 for i in range(8)} | {
    "AF11": 10, "AF12": 12, "AF13": 14, "AF21": 18, "AF22": 20, "AF23": 22, "AF31": 26, "AF32": 28,
    "AF33": 30, "AF41": 34, "AF42": 36, "AF43": 38, "VA": 44, "EF": 46, "default": 0, "LE": 1,
}  # fmt: skip


class _Model(BaseModel):
    model_config = ConfigDict(extra="forbid")


class RocePort(_Model):
    """One physical Ethernet port that carries RoCE, with the QoS and ECN state read from it."""

    netdev: str
    pci: str
    rdma_device: str  # its own RDMA device, or the RoCE LAG device of its bond
    lag_bond: str | None = None  # the bond whose LAG device carries this port (QoS still goes on the port)
    mtu: int | None = None
    gid_index: int | None = None  # RoCE v2 IPv4 GID index of the RDMA device
    trust: str | None = None
    pfc: list[int] | None = None  # 8 entries, 1 = PFC on for that priority
    cable_len: int | None = None  # metres the lossless headroom is sized for (mlnx_qos "Cable len", DCB PFC delay)
    dscp2prio: dict[int, int] = Field(default_factory=dict)
    qos_error: str | None = None
    qos_warnings: list[str] = Field(default_factory=list)
    ecn: dict[str, int] | None = None  # path under /sys/class/net/IF/ecn -> value; None: no ecn tree


class SkippedPort(_Model):
    name: str
    reason: str


class RdmaCm(_Model):
    """RDMA-CM defaults of one RDMA device port (configfs; lost on reboot and driver reload)."""

    device: str
    mode: str | None = None
    tos: int | None = None
    error: str | None = None


class UnitState(_Model):
    active: str = "inactive"  # systemctl is-active
    enabled: str = "not-found"  # systemctl is-enabled; not-found when the unit file does not exist


class RoceFacts(_Model):
    """Everything the roce plan and checks need about one host."""

    qos_tool: Literal["mlnx_qos", "dcb", "none"] = "none"
    cma_tool: bool = False  # cma_roce_mode/cma_roce_tos (mlnx-tools) installed
    ports: list[RocePort] = Field(default_factory=list)
    skipped: list[SkippedPort] = Field(default_factory=list)
    rdma_cm: list[RdmaCm] = Field(default_factory=list)
    lldpad: UnitState = Field(default_factory=UnitState)
    lldpad_socket: UnitState = Field(default_factory=UnitState)
    lldpad_running: bool = False  # a process named lldpad exists (it may run outside systemd)
    unit: UnitState = Field(default_factory=UnitState)
    unit_text: str | None = None
    script_text: str | None = None
    template_text: str | None = None  # TEMPLATE_PATH
    udev_rule_text: str | None = None  # UDEV_RULE_PATH
    openibd: bool = False  # openibd.service exists (DOCA-OFED / MLNX_OFED)
    ib_lanes: list[IbLane] = Field(default_factory=list)
    """InfiniBand hosts with fabric.ib_sl: the VL that SL reaches on each port (steps/roce/ib_sl.py)."""

    def port(self, netdev: str) -> RocePort | None:
        return next((p for p in self.ports if p.netdev == netdev), None)

    def cm(self, device: str) -> RdmaCm | None:
        return next((c for c in self.rdma_cm if c.device == device), None)


def roce_targets(
    ports: list[NicPort],
    lag_devices: dict[str, str],
    link_layers: dict[str, str],
    ssh_interface: str | None,
    allow_management: bool,
) -> tuple[list[Target], list[SkippedPort]]:
    """The physical ports QoS goes on, as (port, rdma device, LAG bond), and the ports skipped with why.

    ``lag_devices`` maps a bond netdev to the RDMA device on it (RoCE LAG). QoS is a per-physical-port property:
    the bonding driver has no DCB ops, so with RoCE LAG each slave is configured, never the bond.
    """
    targets: list[Target] = []
    skipped: list[SkippedPort] = []
    for port in sorted(ports, key=lambda p: p.pci):
        name = port.netdev or port.pci
        device = port.rdma_device
        bond = None
        if device is None and port.master and port.master in lag_devices:
            device, bond = lag_devices[port.master], port.master
        if device is None:
            why = f"slave of {port.master} without RoCE LAG" if port.master else "no RDMA device"
            skipped.append(SkippedPort(name=name, reason=f"{why}: no RDMA traffic can use this port"))
            continue
        layer = link_layers.get(device, "Ethernet")
        if layer != "Ethernet":
            skipped.append(SkippedPort(name=name, reason=f"{device} is {layer}: PFC/DSCP QoS is RoCE-only"))
            continue
        if port.netdev is None:
            skipped.append(SkippedPort(name=name, reason=f"{device} has no network interface"))
            continue
        if ssh_interface in (port.netdev, bond) and not allow_management:
            skipped.append(
                SkippedPort(
                    name=name,
                    reason="carries the SSH session (this host is not in network.allow_management_changes)",
                )
            )
            continue
        targets.append((port, device, bond))
    return targets, skipped


def parse_grep_values(text: str) -> dict[str, str]:
    """``grep -sH . FILE...`` -> {path: first line}; files that do not exist are simply absent."""
    values: dict[str, str] = {}
    for line in text.splitlines():
        path, sep, value = line.partition(":")
        if sep and path.startswith("/") and path not in values:
            values[path] = value.strip()
    return values


def devinfo_ports(devinfo: object) -> DevInfo:
    """Parsed ``ibv_devinfo -v`` -> {device: (link layer, lowest RoCE v2 GID index holding an IPv4 address)}.

    That GID is the one NCCL (>= 2.21) and perftest pick by themselves; it must be discovered, never assumed.
    """
    out: DevInfo = {}
    for dev in getattr(devinfo, "devices", []):
        for port in dev.ports[:1]:
            v2 = [g.index for g in port.gids if g.gid_type == ROCE_V2 and _is_ipv4_gid(g.gid)]
            out[dev.hca_id] = (port.link_layer, min(v2) if v2 else None)
    return out


def _is_ipv4_gid(gid: str) -> bool:
    try:
        return ipaddress.IPv6Address(gid).ipv4_mapped is not None
    except ValueError:
        return False


def parse_dcb_pfc(text: str) -> list[int] | None:
    """iproute2 ``dcb pfc show dev IF prio-pfc`` (``prio-pfc 0:off 1:off 2:off 3:on ...``) -> 8 flags."""
    match = re.search(r"prio-pfc((?:\s+\d:(?:on|off))+)", text)
    if match is None:
        return None
    flags = [0] * 8
    for prio, state in re.findall(r"(\d):(on|off)", match.group(1)):
        if int(prio) < 8:
            flags[int(prio)] = 1 if state == "on" else 0
    return flags


def parse_dcb_pfc_delay(text: str) -> int | None:
    """iproute2 ``dcb pfc show dev IF prio-pfc delay``: the ``delay`` value, which mlx5 reports as the cable length
    in metres its PFC headroom is sized for (en_dcbnl.c mlx5e_dcbnl_ieee_getpfc: pfc->delay = dcbx.cable_len)."""
    match = re.search(r"\bdelay\s+(\d+)", text)
    return int(match.group(1)) if match else None


def parse_dcb_app_dscp(text: str) -> dict[int, int]:
    """iproute2 ``dcb app show dev IF dscp-prio`` (``dscp-prio AF31:3 48:6``) -> {dscp: priority}."""
    mapping: dict[int, int] = {}
    match = re.search(r"dscp-prio((?:\s+[\w]+:\d)+)", text)
    if match is None:
        return mapping
    for key, prio in re.findall(r"([\w]+):(\d)", match.group(1)):
        dscp = int(key) if key.isdigit() else DSCP_NAMES.get(key)
        if dscp is not None:
            mapping[dscp] = int(prio)
    return mapping


def parse_cma_value(text: str) -> str | None:
    """The value ``cma_roce_mode``/``cma_roce_tos`` print last (``RoCE v2``, ``106``); None on their errors."""
    lines = [line.strip() for line in text.splitlines() if line.strip()]
    if not lines:
        return None
    last = lines[-1]
    if re.fullmatch(r"(?:IB/)?RoCE v[12]|\d{1,3}", last):
        return last
    return None


def parse_systemctl_show(text: str) -> dict[str, UnitState]:
    """``systemctl show --property=Id,ActiveState,UnitFileState UNIT...`` -> {unit: state}.

    A unit without a unit file shows an empty UnitFileState (LoadState=not-found): it maps to "not-found".
    """
    states: dict[str, UnitState] = {}
    current: str | None = None
    for line in text.splitlines():
        key, sep, value = line.strip().partition("=")
        if not sep:
            continue
        if key == "Id":
            current = value
            states[current] = UnitState()
        elif current is not None and key == "ActiveState":
            states[current].active = value or "inactive"
        elif current is not None and key == "UnitFileState":
            states[current].enabled = value or "not-found"
    return states


def pfc_vector(priority: int) -> list[int]:
    """PFC on exactly one priority."""
    return [1 if i == priority else 0 for i in range(8)]


def default_dscp2prio() -> dict[int, int]:
    """The adapter's default DSCP map: DSCP d -> priority d >> 3 (DSCP 24-31 -> 3)."""
    return {d: d >> 3 for d in range(64)}
