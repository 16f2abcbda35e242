"""Parsers for RDMA port-to-netdev tools: `rdma link` and ibdev2netdev (device inventories re-exported)."""

from __future__ import annotations

import re

from wizard.parsers._text import require_lines, split_pairs
from wizard.parsers.common import Parsed, ParseError

# Device inventories, GID tables and cma_roce_mode live in sibling modules; re-exported so the
# registry (TOOLS) finds every RDMA parser here.
from wizard.parsers.rdma_devices import (
    Ibstat,
    IbstatCa,
    IbstatPort,
    IbvDevice,
    IbvDeviceGuid,
    IbvDevices,
    IbvDevinfo,
    IbvGid,
    IbvPort,
    parse_ibstat,
    parse_ibv_devices,
    parse_ibv_devinfo,
)
from wizard.parsers.rdma_gids import (
    CmaRoceMode,
    CmaRoceModeEntry,
    GidEntry,
    GidTable,
    parse_cma_roce_mode,
    parse_show_gids,
    parse_sysfs_gids,
)

__all__ = [
    "CmaRoceMode",
    "CmaRoceModeEntry",
    "GidEntry",
    "GidTable",
    "Ibdev2Netdev",
    "Ibdev2NetdevEntry",
    "Ibstat",
    "IbstatCa",
    "IbstatPort",
    "IbvDevice",
    "IbvDeviceGuid",
    "IbvDevices",
    "IbvDevinfo",
    "IbvGid",
    "IbvPort",
    "RdmaLink",
    "RdmaLinks",
    "parse_cma_roce_mode",
    "parse_ibdev2netdev",
    "parse_ibstat",
    "parse_ibv_devices",
    "parse_ibv_devinfo",
    "parse_rdma_link",
    "parse_show_gids",
    "parse_sysfs_gids",
]


# --------------------------------------------------------------------------------------------- rdma link


class RdmaLink(Parsed):
    """One `rdma link` line: an RDMA device port, its states and the netdev the kernel paired it with."""

    device: str
    port: int
    state: str
    physical_state: str | None = None
    netdev: str | None = None
    attributes: dict[str, str] = {}


class RdmaLinks(Parsed):
    """Every port `rdma link show` listed, in its order."""

    links: list[RdmaLink]

    def get(self, device: str, port: int = 1) -> RdmaLink | None:
        """Return the link of ``device`` port ``port``, if listed."""
        return next((ln for ln in self.links if ln.device == device and ln.port == port), None)


# `link mlx5_0/1 state ...`; iproute2 4.x printed `link mlx5_0/1: state ...` and `1/1: mlx5_0/1: state ...`.
_RDMA_LINK = re.compile(r"^\s*(?:link\s+|\d+/\d+:\s+)(\S+?)/(\d+):?(?:\s+(.*))?$")


def parse_rdma_link(text: str) -> RdmaLinks:
    """Parse iproute2 `rdma link [show]` (`link mlx5_0/1 state ACTIVE physical_state LINK_UP netdev X`)."""
    links = []
    for line in require_lines(text, "rdma link"):
        match = _RDMA_LINK.match(line)
        if match is None:
            continue
        pairs = split_pairs((match.group(3) or "").split())
        state = pairs.pop("state", None)
        if state is None:
            continue
        links.append(
            RdmaLink(
                device=match.group(1),
                port=int(match.group(2)),
                state=state,
                physical_state=pairs.pop("physical_state", None),
                netdev=pairs.pop("netdev", None),
                attributes=pairs,
            )
        )
    if not links:
        raise ParseError("no 'link DEV/PORT state ...' line: not rdma link output")
    return RdmaLinks(links=links)


# --------------------------------------------------------------------------------------------- ibdev2netdev


class Ibdev2NetdevEntry(Parsed):
    """One ibdev2netdev line; the PCI address, part and firmware only appear with `-v`."""

    device: str
    port: int
    netdev: str | None
    state: str | None = None
    pci: str | None = None
    description: str | None = None
    hca_type: str | None = None
    part_number: str | None = None
    fw_ver: str | None = None
    port_state: str | None = None


class Ibdev2Netdev(Parsed):
    """Every device-port to netdev mapping, in printed order (a paste of two hosts keeps both)."""

    entries: list[Ibdev2NetdevEntry]

    def netdev_of(self, device: str, port: int = 1) -> str | None:
        """Return the netdev paired with ``device`` port ``port``."""
        entry = next((e for e in self.entries if e.device == device and e.port == port), None)
        return entry.netdev if entry else None

    def device_of(self, netdev: str) -> list[Ibdev2NetdevEntry]:
        """Return every entry mapped to ``netdev`` (several when plain bond slaves all show `bond0`)."""
        return [e for e in self.entries if e.netdev == netdev]


_PCI = r"[0-9a-fA-F]{4,}:[0-9a-fA-F]{2}:[0-9a-fA-F]{2}\.[0-7]"
_IBDEV_VERBOSE = re.compile(
    rf"^\s*(?:(?P<pci>{_PCI})\s+)?(?P<dev>\S+)\s+\((?P<hca>[^()\s]*)\s+-\s+(?P<part>[^()]*?)\s*\)"
    r"\s*(?P<desc>.*?)\s*\bfw\s+(?P<fw>\S+)\s+port\s+(?P<port>\d+)\s+\((?P<pstate>[^)]*)\)"
    r"\s+==>\s+(?P<netdev>\S+)(?:\s+\((?P<state>[^)]*)\))?"
)
_IBDEV_PLAIN = re.compile(
    r"^\s*(?P<dev>\S+)\s+port\s+(?P<port>\d+)\s+(?:==>|<===>)\s+(?P<netdev>\S+)(?:\s+\((?P<state>[^)]*)\))?"
)


def _blank_none(value: str | None) -> str | None:
    """Collapse padding inside ``value``; blank or 'NA' (what ibdev2netdev prints for unknown) is None."""
    value = " ".join((value or "").split())
    return None if value in ("", "NA") else value


def parse_ibdev2netdev(text: str) -> Ibdev2Netdev:
    """Parse MLNX_OFED/DOCA `ibdev2netdev` in its plain, `-v` and old `<===>` forms."""
    entries = []
    for line in require_lines(text, "ibdev2netdev"):
        match = _IBDEV_VERBOSE.match(line) or _IBDEV_PLAIN.match(line)
        if match is None:
            continue
        fields = match.groupdict()
        netdev = fields["netdev"]
        entries.append(
            Ibdev2NetdevEntry(
                device=fields["dev"],
                port=int(fields["port"]),
                netdev=None if netdev in ("NA", "") else netdev,
                state=_blank_none(fields["state"]),
                pci=fields.get("pci"),
                description=_blank_none(fields.get("desc")),
                hca_type=_blank_none(fields.get("hca")),
                part_number=_blank_none(fields.get("part")),
                fw_ver=_blank_none(fields.get("fw")),
                port_state=_blank_none(fields.get("pstate")),
            )
        )
    if not entries:
        raise ParseError("no 'DEV port N ==> NETDEV' line: not ibdev2netdev output")
    return Ibdev2Netdev(entries=entries)
