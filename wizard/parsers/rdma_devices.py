"""Parsers for RDMA device inventories: ibv_devices, ibv_devinfo (plain, -v, -l) and ibstat."""

from __future__ import annotations

import re

from wizard.parsers._text import require_lines, to_int
from wizard.parsers.common import Parsed, ParseError

# --------------------------------------------------------------------------------------------- ibv_devices


class IbvDeviceGuid(Parsed):
    """One ibv_devices row."""

    device: str
    node_guid: str


class IbvDevices(Parsed):
    """Every device ibv_devices listed (possibly none)."""

    devices: list[IbvDeviceGuid]

    def names(self) -> list[str]:
        """Return the device names in printed order."""
        return [d.device for d in self.devices]


_IBV_DEVICES_HEADER = re.compile(r"^\s*device\s+node GUID\s*$")
_IBV_DEVICES_ROW = re.compile(r"^\s*(\S+)\s+([0-9a-fA-F]{16})\s*$")


def parse_ibv_devices(text: str) -> IbvDevices:
    """Parse rdma-core `ibv_devices` (header, dashes, `name  guid` rows; an elided `......` tail is fine)."""
    lines = require_lines(text, "ibv_devices")
    header = any(_IBV_DEVICES_HEADER.match(line) for line in lines)
    devices = [
        IbvDeviceGuid(device=m.group(1), node_guid=m.group(2).lower())
        for m in map(_IBV_DEVICES_ROW.match, lines)
        if m is not None
    ]
    if not header and not devices:
        raise ParseError("no 'device  node GUID' header or device row: not ibv_devices output")
    return IbvDevices(devices=devices)


# --------------------------------------------------------------------------------------------- ibv_devinfo


class IbvGid(Parsed):
    """A `GID[ n]:` line of `ibv_devinfo -v`; newer rdma-core appends the GID type."""

    index: int
    gid: str
    gid_type: str | None = None


class IbvPort(Parsed):
    """One port block of ibv_devinfo."""

    port: int
    state: str
    state_code: int | None = None
    max_mtu: int | None = None
    active_mtu: int | None = None
    sm_lid: int | None = None
    port_lid: int | None = None
    port_lmc: str | None = None
    link_layer: str | None = None
    active_width: str | None = None
    active_speed: str | None = None
    active_speed_gbps: float | None = None
    phys_state: str | None = None
    gid_tbl_len: int | None = None
    gids: list[IbvGid] = []
    extra: dict[str, str] = {}


class IbvDevice(Parsed):
    """One `hca_id:` block; with `ibv_devinfo -l` only the name is known."""

    hca_id: str
    transport: str | None = None
    fw_ver: str | None = None
    node_guid: str | None = None
    sys_image_guid: str | None = None
    vendor_id: str | None = None
    vendor_part_id: int | None = None
    hw_ver: str | None = None
    board_id: str | None = None
    phys_port_cnt: int | None = None
    ports: list[IbvPort] = []
    extra: dict[str, str] = {}

    def port(self, number: int = 1) -> IbvPort | None:
        """Return port ``number`` of this device, if printed."""
        return next((p for p in self.ports if p.port == number), None)


class IbvDevinfo(Parsed):
    """Every device block of ibv_devinfo (none for 'No IB devices found')."""

    devices: list[IbvDevice]

    def get(self, hca_id: str) -> IbvDevice | None:
        """Return the device named ``hca_id``."""
        return next((d for d in self.devices if d.hca_id == hca_id), None)


_HCA_ID = re.compile(r"^\s*hca_id:\s*(\S+)\s*$")
_DEVINFO_PORT = re.compile(r"^\s*port:\s*(\d+)\s*$")
_DEVINFO_GID = re.compile(r"^\s*GID\[\s*(\d+)\]:\s*(\S+?)(?:,\s*(.+?))?\s*$")
_DEVINFO_KEY = re.compile(r"^\s*([A-Za-z_][\w ]*?):\s*(.*?)\s*$")
_CODED = re.compile(r"^(.*?)\s*\((\d+)\)$")  # `PORT_ACTIVE (4)`, `4096 (5)`
_HCAS_FOUND = re.compile(r"^\s*(\d+)\s+HCAs? found:\s*$")
_DEVICE_FIELDS = {"transport", "fw_ver", "node_guid", "sys_image_guid", "vendor_id", "hw_ver", "board_id"}
_PORT_STR_FIELDS = {"port_lmc", "link_layer", "active_width", "active_speed", "phys_state"}
_SPEED = re.compile(r"^([\d.]+)\s*Gbps$")


def _coded(value: str) -> tuple[str, int | None]:
    match = _CODED.match(value)
    return (match.group(1), int(match.group(2))) if match else (value, None)


def _devinfo_port(number: int, values: dict[str, str], gids: list[IbvGid]) -> IbvPort:
    state, code = _coded(values.pop("state", "unknown"))
    port = IbvPort(port=number, state=state, state_code=code, gids=gids)
    for key in ("max_mtu", "active_mtu"):
        if key in values:
            setattr(port, key, to_int(_coded(values.pop(key))[0]))
    for key in ("sm_lid", "port_lid", "gid_tbl_len"):
        if key in values:
            setattr(port, key, to_int(values.pop(key)))
    for key in _PORT_STR_FIELDS & values.keys():
        setattr(port, key, _coded(values.pop(key))[0])  # `4X (2)` -> 4X, `LINK_UP (5)` -> LINK_UP
    if port.active_speed and (speed := _SPEED.match(port.active_speed)):
        port.active_speed_gbps = float(speed.group(1))
    port.extra = values
    return port


def _devinfo_device(hca_id: str, values: dict[str, str], ports: list[IbvPort]) -> IbvDevice:
    device = IbvDevice(hca_id=hca_id, ports=ports)
    for key in _DEVICE_FIELDS & values.keys():
        setattr(device, key, _coded(values.pop(key))[0])  # `InfiniBand (0)` -> InfiniBand
    device.vendor_part_id = to_int(values.pop("vendor_part_id", None))
    device.phys_port_cnt = to_int(values.pop("phys_port_cnt", None))
    device.extra = {k: v for k, v in values.items() if v}
    return device


def parse_ibv_devinfo(text: str) -> IbvDevinfo:
    """Parse `ibv_devinfo` in its plain, `-v`, `-d DEV` and `-l` forms (MTU `4096 (5)` reads 4096)."""
    lines = require_lines(text, "ibv_devinfo")
    devices: list[IbvDevice] = []
    hca: str | None = None
    dev_values: dict[str, str] = {}
    ports: list[IbvPort] = []
    port_no: int | None = None
    port_values: dict[str, str] = {}
    gids: list[IbvGid] = []
    listed: list[str] | None = None

    def close_port() -> None:
        nonlocal port_no, port_values, gids
        if port_no is not None:
            ports.append(_devinfo_port(port_no, port_values, gids))
        port_no, port_values, gids = None, {}, []

    def close_device() -> None:
        nonlocal hca, dev_values, ports
        close_port()
        if hca is not None:
            devices.append(_devinfo_device(hca, dev_values, ports))
        hca, dev_values, ports = None, {}, []

    for line in lines:
        if listed is not None and hca is None and re.match(r"^\s+\S+$", line):
            listed.append(line.strip())
        elif _HCAS_FOUND.match(line):
            listed = []
        elif match := _HCA_ID.match(line):
            close_device()
            hca = match.group(1)
        elif hca is None:
            continue
        elif match := _DEVINFO_PORT.match(line):
            close_port()
            port_no = int(match.group(1))
        elif match := _DEVINFO_GID.match(line):
            gids.append(IbvGid(index=int(match.group(1)), gid=match.group(2), gid_type=match.group(3)))
        elif match := _DEVINFO_KEY.match(line):
            target = port_values if port_no is not None else dev_values
            target.setdefault(match.group(1), match.group(2))
    close_device()
    if not devices and listed:
        devices = [IbvDevice(hca_id=name) for name in listed]
    if not devices and not any("No IB devices found" in line for line in lines) and listed is None:
        raise ParseError("no 'hca_id:' block or 'N HCAs found' list: not ibv_devinfo output")
    return IbvDevinfo(devices=devices)


# --------------------------------------------------------------------------------------------- ibstat


class IbstatPort(Parsed):
    """One `Port N:` block of ibstat."""

    port: int
    state: str | None = None
    physical_state: str | None = None
    rate: int | float | None = None
    base_lid: int | None = None
    lmc: int | None = None
    sm_lid: int | None = None
    capability_mask: str | None = None
    port_guid: str | None = None
    link_layer: str | None = None


class IbstatCa(Parsed):
    """One `CA 'name'` block; ``name`` is None for port blocks pasted without their CA header."""

    name: str | None
    ca_type: str | None = None
    number_of_ports: int | None = None
    firmware_version: str | None = None
    hardware_version: str | None = None
    node_guid: str | None = None
    system_image_guid: str | None = None
    ports: list[IbstatPort] = []


class Ibstat(Parsed):
    """Every CA block of ibstat."""

    cas: list[IbstatCa]

    def get(self, name: str) -> IbstatCa | None:
        """Return the CA named ``name``."""
        return next((ca for ca in self.cas if ca.name == name), None)


_IBSTAT_CA = re.compile(r"^\s*CA:?\s*'([^']+)'\s*$")
_IBSTAT_PORT = re.compile(r"^\s*Port\s+(\d+):\s*$")
_IBSTAT_KEY = re.compile(r"^\s*([A-Za-z][A-Za-z ]*?):\s*(.*?)\s*$")
_CA_KEYS = {
    "CA type": "ca_type",
    "Firmware version": "firmware_version",
    "Hardware version": "hardware_version",
    "Node GUID": "node_guid",
    "System image GUID": "system_image_guid",
}
_PORT_KEYS = {
    "State": "state",
    "Physical state": "physical_state",
    "Capability mask": "capability_mask",
    "Port GUID": "port_guid",
    "Link layer": "link_layer",
}
_PORT_INT_KEYS = {"Base lid": "base_lid", "LMC": "lmc", "SM lid": "sm_lid"}


def _rate(value: str) -> int | float | None:
    try:
        number = float(value)
    except ValueError:
        return None
    return int(number) if number.is_integer() else number


def parse_ibstat(text: str) -> Ibstat:
    """Parse infiniband-diags `ibstat` (whole CAs, or bare `Port N:` blocks as pasted)."""
    cas: list[IbstatCa] = []
    port: IbstatPort | None = None
    for line in require_lines(text, "ibstat"):
        if match := _IBSTAT_CA.match(line):
            cas.append(IbstatCa(name=match.group(1)))
            port = None
        elif match := _IBSTAT_PORT.match(line):
            if not cas:
                cas.append(IbstatCa(name=None))
            port = IbstatPort(port=int(match.group(1)))
            cas[-1].ports.append(port)
        elif (match := _IBSTAT_KEY.match(line)) and cas:
            key, value = match.groups()
            if port is not None and key in _PORT_KEYS:
                setattr(port, _PORT_KEYS[key], value)
            elif port is not None and key in _PORT_INT_KEYS:
                setattr(port, _PORT_INT_KEYS[key], to_int(value))
            elif port is not None and key == "Rate":
                port.rate = _rate(value)
            elif key in _CA_KEYS:
                setattr(cas[-1], _CA_KEYS[key], value)
            elif key == "Number of ports":
                cas[-1].number_of_ports = to_int(value)
    if not cas:
        raise ParseError("no \"CA 'name'\" or 'Port N:' block: not ibstat output")
    return Ibstat(cas=cas)
