"""Parser for ``lspci -vvv`` (optionally -D, -nn, -PP): PCIe port type, link capability/status and ACS control."""

from __future__ import annotations

import re

from wizard.parsers.common import Parsed, ParseError

# A device header: "0000:3b:00.0 Ethernet controller [0200]: ...", "b3:00.0 ...", or the -PP path form
# "00:01.0/01:00.0/02:00.0 PCI bridge [0604]: ..." (pciutils lspci(8): -PP prints the whole bridge path).
_ADDR = r"(?:[0-9a-fA-F]{4}:)?[0-9a-fA-F]{2}:[0-9a-fA-F]{2}\.[0-7]"
_HEADER_RE = re.compile(
    rf"^(?P<path>{_ADDR}(?:/{_ADDR})*)\s+(?P<cls>[^:\[]+?)(?:\s+\[(?P<cid>[0-9a-fA-F]{{4}})\])?:\s*(?P<rest>.*)$"
)
_IDS_RE = re.compile(r"\[([0-9a-fA-F]{4}):([0-9a-fA-F]{4})\]")
_PROMPT_RE = re.compile(r"^\S*[$#]\s+\S")
_LINK_RE = re.compile(r"Speed\s+(?P<speed>[0-9.]+)GT/s[^,]*,\s*Width\s+x(?P<width>\d+)")
_PORT_TYPE_RE = re.compile(r"Express \(v\d\) (?P<type>[A-Za-z ]+?)(?: \(Slot[+-]\))?, (?:MSI|IntMsgNum)")
_FLAG_RE = re.compile(r"([A-Za-z]+)([+-])")
# ACS control bits that send peer-to-peer requests/completions up to the root complex (PCIe spec 7.7.11.3;
# NCCL troubleshooting "PCI Access Control Services (ACS)": SrcValid+/ReqRedir+ on a bridge breaks GPUDirect P2P).
REDIRECT_BITS = ("ReqRedir", "CmpltRedir")


class PcieLink(Parsed):
    """One side of a PCIe link as lspci prints it: speed in GT/s and width in lanes."""

    speed_gts: float
    width: int


class PciDevice(Parsed):
    """One device block of ``lspci -vvv``."""

    address: str  # as printed (last element of a -PP path), lower case
    path: list[str] = []  # the -PP bridge path when printed, upstream first, the device last
    class_name: str
    class_id: str | None = None
    description: str
    vendor_id: str | None = None
    device_id: str | None = None
    port_type: str | None = None  # Endpoint, Legacy Endpoint, Root Port, Upstream Port, Downstream Port
    link_cap: PcieLink | None = None
    link_sta: PcieLink | None = None
    acs_ctl: dict[str, bool] | None = None
    iommu_group: int | None = None
    caps_denied: bool = False  # "Capabilities: <access denied>": lspci ran without root
    driver: str | None = None

    @property
    def is_bridge(self) -> bool:
        return self.class_id == "0604" or self.class_name.lower() == "pci bridge"

    @property
    def acs_redirect(self) -> bool:
        """ACS redirects peer-to-peer traffic on this port (ReqRedir+ or CmpltRedir+)."""
        return bool(self.acs_ctl) and any(self.acs_ctl.get(bit) for bit in REDIRECT_BITS)  # type: ignore[union-attr]

    @property
    def downgraded(self) -> bool:
        """The negotiated link is slower or narrower than the device can do."""
        if self.link_cap is None or self.link_sta is None:
            return False
        return self.link_sta.speed_gts < self.link_cap.speed_gts or self.link_sta.width < self.link_cap.width


class LspciVerbose(Parsed):
    devices: list[PciDevice]

    def get(self, address: str) -> PciDevice | None:
        """The device at ``address`` ("0000:3b:00.0" or "3b:00.0")."""
        wanted = address.lower()
        short = wanted[5:] if len(wanted) == 12 else wanted
        return next((d for d in self.devices if d.address in (wanted, short)), None)


def parse_lspci_vvv(text: str) -> LspciVerbose:
    """Parse ``lspci -vvv`` output; raises ParseError when no device block is found."""
    if not text.strip():
        raise ParseError("empty input: no lspci -vvv output")
    devices: list[PciDevice] = []
    current: dict | None = None
    for raw in text.replace("\r\n", "\n").split("\n"):
        line = raw.rstrip()
        if not line:
            continue
        if not line[0].isspace():
            header = _HEADER_RE.match(line)
            if header:
                if current:
                    devices.append(PciDevice(**current))
                current = _header(header)
            elif not _PROMPT_RE.match(line) and current is not None:
                devices.append(PciDevice(**current))
                current = None
            continue
        if current is not None:
            _detail(current, line.strip())
    if current:
        devices.append(PciDevice(**current))
    if not devices:
        raise ParseError("no PCI device header (e.g. '0000:3b:00.0 Ethernet controller: ...') found")
    return LspciVerbose(devices=devices)


def _header(match: re.Match[str]) -> dict:
    path = [p.lower() for p in match.group("path").split("/")]
    rest = match.group("rest")
    ids = _IDS_RE.findall(rest)
    description = re.sub(r"\s*\(prog-if.*$", "", rest)
    description = re.sub(r"\s*\(rev [0-9a-fA-F]+\)", "", description)
    description = _IDS_RE.sub("", description).strip()
    return {
        "address": path[-1],
        "path": path if len(path) > 1 else [],
        "class_name": match.group("cls").strip(),
        "class_id": match.group("cid"),
        "description": description,
        "vendor_id": ids[-1][0].lower() if ids else None,
        "device_id": ids[-1][1].lower() if ids else None,
    }


def _detail(dev: dict, line: str) -> None:
    if line.startswith("Capabilities: <access denied>"):
        dev["caps_denied"] = True
    elif line.startswith("IOMMU group:"):
        value = line.split(":", 1)[1].strip()
        dev["iommu_group"] = int(value) if value.isdigit() else None
    elif line.startswith("Kernel driver in use:"):
        dev["driver"] = line.split(":", 1)[1].strip()
    elif line.startswith("Capabilities:") and (port := _PORT_TYPE_RE.search(line)):
        dev["port_type"] = port.group("type").strip()
    elif line.startswith(("LnkCap:", "LnkSta:")):
        link = _LINK_RE.search(line)
        if link:
            key = "link_cap" if line.startswith("LnkCap") else "link_sta"
            dev[key] = PcieLink(speed_gts=float(link.group("speed")), width=int(link.group("width")))
    elif line.startswith("ACSCtl:"):
        dev["acs_ctl"] = {name: sign == "+" for name, sign in _FLAG_RE.findall(line.split(":", 1)[1])}
