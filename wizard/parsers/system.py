"""Parsers for host facts: lspci, lsmod, ofed_info, /etc/os-release and dpkg-query -W."""

from __future__ import annotations

import re
import shlex
from typing import Literal

from wizard.parsers._text import prompt_command, require_lines
from wizard.parsers.common import Parsed, ParseError

# --------------------------------------------------------------------------------------------- lspci


class PciDevice(Parsed):
    """One lspci device; ids and class code only with `-nn`/`-n`, driver only with `-k`/`-v`."""

    address: str
    class_name: str | None = None
    class_id: str | None = None
    description: str | None = None
    vendor_id: str | None = None
    device_id: str | None = None
    revision: str | None = None
    subsystem: str | None = None
    kernel_driver: str | None = None
    kernel_modules: list[str] = []


class PciDevices(Parsed):
    """Every device lspci printed (or what a `| grep` kept), in order."""

    devices: list[PciDevice]

    def with_vendor(self, vendor_id: str) -> list[PciDevice]:
        """Return the devices of PCI vendor ``vendor_id`` (e.g. '15b3'; needs `lspci -nn`)."""
        return [d for d in self.devices if d.vendor_id == vendor_id.lower()]

    def matching(self, text: str) -> list[PciDevice]:
        """Return the devices whose description contains ``text`` (case-insensitive)."""
        return [d for d in self.devices if text.lower() in (d.description or "").lower()]


_PCI_ADDR = r"(?:[0-9a-fA-F]{4,8}:)?[0-9a-fA-F]{2}:[0-9a-fA-F]{2}\.[0-7]"
_LSPCI_LINE = re.compile(rf"^\s*({_PCI_ADDR})\s+(.*?)(?:\s+\[([0-9a-fA-F]{{4}})\])?:\s+(.*)$")
_LSPCI_NUMERIC = re.compile(rf"^\s*({_PCI_ADDR})\s+([0-9a-fA-F]{{4}}):\s+([0-9a-fA-F]{{4}}):([0-9a-fA-F]{{4}})")
_TAIL_PROG_IF = re.compile(r"\s*\(prog-if [^)]*(?:\[[^\]]*\])?\)\s*$")
_TAIL_REV = re.compile(r"\s*\(rev ([0-9a-fA-F]+)\)\s*$")
_TAIL_IDS = re.compile(r"\s*\[([0-9a-fA-F]{4}):([0-9a-fA-F]{4})\]\s*$")


def _pci_device(match: re.Match[str]) -> PciDevice:
    rest = _TAIL_PROG_IF.sub("", match.group(4))
    revision = None
    if rev := _TAIL_REV.search(rest):
        revision, rest = rev.group(1).lower(), rest[: rev.start()]
    vendor_id = device_id = None
    if ids := _TAIL_IDS.search(rest):
        vendor_id, device_id, rest = ids.group(1).lower(), ids.group(2).lower(), rest[: ids.start()]
    return PciDevice(
        address=match.group(1).lower(),
        class_name=match.group(2),
        class_id=match.group(3).lower() if match.group(3) else None,
        description=rest.strip() or None,
        vendor_id=vendor_id,
        device_id=device_id,
        revision=revision,
    )


def parse_lspci(text: str) -> PciDevices:
    """Parse `lspci`, `lspci -nn`, `lspci -D -nn`, `lspci -n` and the first lines of `-k`/`-v` blocks."""
    devices: list[PciDevice] = []
    for line in require_lines(text, "lspci"):
        if prompt_command(line) is not None and not re.match(rf"^\s*{_PCI_ADDR}\s", line):
            continue
        if match := _LSPCI_NUMERIC.match(line):
            devices.append(
                PciDevice(
                    address=match.group(1).lower(),
                    class_id=match.group(2).lower(),
                    vendor_id=match.group(3).lower(),
                    device_id=match.group(4).lower(),
                )
            )
        elif match := _LSPCI_LINE.match(line):
            devices.append(_pci_device(match))
        elif devices and (detail := re.match(r"^\s+(Subsystem|Kernel driver in use|Kernel modules):\s*(.*)$", line)):
            key, value = detail.groups()
            if key == "Subsystem":
                devices[-1].subsystem = value
            elif key == "Kernel driver in use":
                devices[-1].kernel_driver = value
            else:
                devices[-1].kernel_modules = [m.strip() for m in value.split(",") if m.strip()]
    if not devices:
        raise ParseError("no 'BUS:DEV.FN class: description' line: not lspci output")
    return PciDevices(devices=devices)


# --------------------------------------------------------------------------------------------- lsmod


class KernelModule(Parsed):
    """One lsmod row."""

    name: str
    size: int
    used_by_count: int | None
    used_by: list[str] = []


class Modules(Parsed):
    """Loaded kernel modules (all, or those a `| grep` kept)."""

    modules: list[KernelModule]

    def names(self) -> list[str]:
        """Return the module names in printed order."""
        return [m.name for m in self.modules]

    def get(self, name: str) -> KernelModule | None:
        """Return module ``name`` (dashes and underscores are the same to the kernel)."""
        wanted = name.replace("-", "_")
        return next((m for m in self.modules if m.name == wanted), None)


_LSMOD_HEADER = re.compile(r"^\s*Module\s+Size\s+Used by\s*$")
_LSMOD_ROW = re.compile(r"^\s*([A-Za-z0-9_]+)\s+(\d+)\s+(-?\d+|-)(?:\s+(\S+))?\s*$")


def parse_lsmod(text: str) -> Modules:
    """Parse `lsmod` (or `lsmod | grep X`; a pasted grep that printed nothing gives no modules)."""
    lines = require_lines(text, "lsmod")
    modules: list[KernelModule] = []
    evidence = False
    for line in lines:
        command = prompt_command(line)
        if command is not None:
            evidence = evidence or "lsmod" in command
        elif _LSMOD_HEADER.match(line):
            evidence = True
        elif match := _LSMOD_ROW.match(line):
            used = [m for m in (match.group(4) or "").split(",") if m and m != "[permanent]"]
            count = None if match.group(3) == "-" else int(match.group(3))
            modules.append(
                KernelModule(name=match.group(1), size=int(match.group(2)), used_by_count=count, used_by=used)
            )
    if not modules and not evidence:
        raise ParseError("no 'Module Size Used by' header or module row: not lsmod output")
    return Modules(modules=modules)


# --------------------------------------------------------------------------------------------- ofed_info

OfedStack = Literal["MLNX_OFED", "DOCA", "OFED"]


class OfedInfo(Parsed):
    """The OFED stack and version from `ofed_info -s`, `-n` or the full listing (with its packages)."""

    version: str | None = None
    stack: OfedStack | None = None
    base_version: str | None = None
    packages: dict[str, str] = {}


# `ofed_info -s` prints "<stack>-<version>:"; the colon is missing where the line was cut or pasted without it, so it
# is optional. MLNX_OFED: "MLNX_OFED_LINUX-23.10-1.1.9.0:"; DOCA-OFED: "OFED-internal-24.07-0.3.5.0.110:".
_OFED_HEAD = re.compile(r"^\s*(MLNX_OFED_LINUX|OFED-internal|OFED)-(\d[\w.-]*?)(?:\s+\((?:OFED-)?([^)]*)\))?:?\s*$")
_OFED_N = re.compile(r"^\s*(\d+\.\d+-[\d.]+)\s*$")
_DPKG_II = re.compile(r"^ii\s+(\S+)\s+(\S+)")
_RPM_NVR = re.compile(r"^([A-Za-z0-9_.+-]+?)-(\d[\w.+~]*-[\w.+~]+?)(?:\.(?:x86_64|aarch64|ppc64le|noarch|i686))?$")
_STACKS: dict[str, OfedStack] = {"MLNX_OFED_LINUX": "MLNX_OFED", "OFED-internal": "DOCA", "OFED": "OFED"}


def parse_ofed_info(text: str) -> OfedInfo:
    """Parse `ofed_info -s` (`MLNX_OFED_LINUX-23.10-1.1.9.0:` / DOCA `OFED-internal-24.10-1.1.4:`),
    `ofed_info -n` (bare version) and full `ofed_info` (heading plus `Installed Packages`)."""
    info = OfedInfo()
    in_packages = False
    for line in require_lines(text, "ofed_info"):
        if prompt_command(line) is not None:
            continue
        if match := _OFED_HEAD.match(line):
            if info.stack is None:
                info.stack = _STACKS[match.group(1)]
                info.version = match.group(2)
                info.base_version = match.group(3)
        elif (match := _OFED_N.match(line)) and info.version is None:
            info.version = match.group(1)
        elif line.strip() == "Installed Packages:":
            in_packages = True
        elif in_packages and (match := _DPKG_II.match(line)):
            info.packages[match.group(1).split(":")[0]] = match.group(2)
        elif in_packages and (match := _RPM_NVR.match(line.strip())):
            info.packages[match.group(1)] = match.group(2)
    if info.version is None:
        raise ParseError("no 'MLNX_OFED_LINUX-x:' / 'OFED-internal-x:' heading or version: not ofed_info output")
    return info


# --------------------------------------------------------------------------------------------- os-release


class OsRelease(Parsed):
    """/etc/os-release fields; ``fields`` keeps every KEY=VALUE."""

    id: str | None = None
    id_like: list[str] = []
    version_id: str | None = None
    pretty_name: str | None = None
    version_codename: str | None = None
    variant_id: str | None = None
    fields: dict[str, str] = {}


def parse_os_release(text: str) -> OsRelease:
    """Parse /etc/os-release (shell-quoted KEY=VALUE lines, comments ignored)."""
    fields: dict[str, str] = {}
    for line in require_lines(text, "os-release"):
        match = re.match(r"^\s*([A-Z][A-Z0-9_]*)=(.*)$", line)
        if match is None:
            continue
        try:
            words = shlex.split(match.group(2), comments=False)
        except ValueError:
            words = [match.group(2).strip("\"'")]
        fields[match.group(1)] = " ".join(words)
    if "ID" not in fields and "NAME" not in fields:
        raise ParseError("no ID= or NAME= line: not an os-release file")
    return OsRelease(
        id=fields.get("ID"),
        id_like=fields.get("ID_LIKE", "").split(),
        version_id=fields.get("VERSION_ID"),
        pretty_name=fields.get("PRETTY_NAME"),
        version_codename=fields.get("VERSION_CODENAME") or fields.get("UBUNTU_CODENAME"),
        variant_id=fields.get("VARIANT_ID"),
        fields=fields,
    )


# --------------------------------------------------------------------------------------------- dpkg-query


_DEB_NAME = re.compile(r"[a-z0-9][a-z0-9+.-]+(?::[a-z0-9-]+)?")
_DEB_VERSION = re.compile(r"(?:\d+:)?\d[A-Za-z0-9.+~:-]*")


class Packages(Parsed):
    """Installed Debian packages from `dpkg-query -W`; arch-qualified names also appear bare."""

    packages: dict[str, str]
    not_installed: list[str] = []

    def version(self, name: str) -> str | None:
        """Return the installed version of ``name``."""
        return self.packages.get(name)


def parse_dpkg_query(text: str) -> Packages:
    """Parse `dpkg-query -W [pkgs]` (`name<TAB>version` lines; an empty version is not installed)."""
    packages: dict[str, str] = {}
    not_installed: list[str] = []
    errors = False
    for line in require_lines(text, "dpkg-query"):
        if line.startswith("dpkg-query:"):
            errors = True  # 'no packages found matching X' (stderr pasted along)
            continue
        if prompt_command(line) is not None:
            continue
        # Tabs may have been expanded by a paste: then exactly two words (or one: not installed).
        parts = line.split("\t") if "\t" in line else line.split()
        if not parts or len(parts) > 2 or not _DEB_NAME.fullmatch(parts[0].strip()):
            continue
        name = parts[0].strip()
        version = parts[1].strip() if len(parts) > 1 else ""
        if not version:
            not_installed.append(name)
        elif _DEB_VERSION.fullmatch(version):
            packages[name] = version
            packages.setdefault(name.split(":")[0], version)
    if not packages and not errors:
        raise ParseError("no 'name<TAB>version' line: not dpkg-query -W output")
    return Packages(packages=packages, not_installed=not_installed)
