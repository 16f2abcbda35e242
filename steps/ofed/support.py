"""What each NVIDIA host-stack release supports: adapters, firmware lines, repositories (per NVIDIA's docs)."""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from wizard.answers.sections import OfedSection

# PCI device id -> adapter family as NVIDIA's "General Support" tables name it (VFs share the PF's firmware).
FAMILY: dict[str, str] = {
    "1013": "ConnectX-4",
    "1014": "ConnectX-4",
    "1015": "ConnectX-4 Lx",
    "1016": "ConnectX-4 Lx",
    "1017": "ConnectX-5",
    "1018": "ConnectX-5",
    "1019": "ConnectX-5",
    "101a": "ConnectX-5",
    "101b": "ConnectX-6",
    "101c": "ConnectX-6",
    "101d": "ConnectX-6 Dx",
    "101e": "ConnectX-6 Dx",
    "101f": "ConnectX-6 Lx",
    "1021": "ConnectX-7",
    "1023": "ConnectX-8",
    "a2d6": "BlueField-2",
    "a2dc": "BlueField-3",
}

# Bundled firmware per adapter family, copied from the "General Support" page of each release:
#   DOCA 2.9.1  https://docs.nvidia.com/doca/archive/2-9-1/General+Support  (MLNX_OFED 24.10 is the same driver line)
#   DOCA 2.10.0 https://docs.nvidia.com/doca/archive/2-10-0/General+Support
#   DOCA 3.0.0  https://docs.nvidia.com/doca/archive/3-0-0/General+Support
#   DOCA 3.1.0  https://docs.nvidia.com/doca/archive/3-1-0/General+Support
# A release supports the firmware line (major.minor) it bundles; ConnectX-4 is absent from 2.10 on because
# "DOCA 2.9.0 (and its LTS branch) is the final software version to support NVIDIA ConnectX-4"
# (https://docs.nvidia.com/doca/archive/2-9-2/Changes+and+New+Features).
_DOCA_2_9 = {
    "ConnectX-4": "12.28.2302",
    "ConnectX-4 Lx": "14.32.1900",
    "ConnectX-5": "16.35.4030",
    "ConnectX-6": "20.43.2026",
    "ConnectX-6 Dx": "22.43.2026",
    "ConnectX-6 Lx": "26.43.2026",
    "ConnectX-7": "28.43.2026",
    "BlueField-2": "24.43.2402",
    "BlueField-3": "32.43.2402",
}
FIRMWARE: dict[tuple[int, int], dict[str, str]] = {
    (2, 9): _DOCA_2_9,
    (2, 10): {
        "ConnectX-4 Lx": "14.32.1900",
        "ConnectX-5": "16.35.4030",
        "ConnectX-6": "20.43.2026",
        "ConnectX-6 Dx": "22.44.1036",
        "ConnectX-6 Lx": "26.44.1036",
        "ConnectX-7": "28.44.1036",
        "ConnectX-8": "40.44.1036",
        "BlueField-2": "24.44.1036",
        "BlueField-3": "32.44.1036",
    },
    (3, 0): {
        "ConnectX-4 Lx": "14.32.1010",
        "ConnectX-5": "16.35.4506",
        "ConnectX-6": "20.43.2566",
        "ConnectX-6 Dx": "22.45.1020",
        "ConnectX-6 Lx": "26.45.1020",
        "ConnectX-7": "28.45.1020",
        "ConnectX-8": "40.45.1020",
        "BlueField-2": "24.45.1020",
        "BlueField-3": "32.45.1020",
    },
    (3, 1): {
        "ConnectX-4 Lx": "14.32.1010",
        "ConnectX-5": "16.35.4554",
        "ConnectX-6": "20.43.3608",
        "ConnectX-6 Dx": "22.46.1006",
        "ConnectX-6 Lx": "26.46.1006",
        "ConnectX-7": "28.46.1006",
        "ConnectX-8": "40.46.1006",
        "BlueField-2": "24.46.1006",
        "BlueField-3": "32.46.1006",
    },
}
# "BlueField-2 and ConnectX-7 are the last generation ... supported by MLNX_OFED" (same General Support pages).
MLNX_OFED_UNSUPPORTED = ("ConnectX-8", "BlueField-3")
DOCA_KEY_URL = "https://linux.mellanox.com/public/repo/doca/GPG-KEY-Mellanox.pub"
DOCA_REPO_URL = "https://linux.mellanox.com/public/repo/doca/{version}/{os}/{arch}/"
MLNX_OFED_KEY_URL = "https://www.mellanox.com/downloads/ofed/RPM-GPG-KEY-Mellanox"
MLNX_OFED_LIST_URL = "https://linux.mellanox.com/public/repo/mlnx_ofed/{version}/{os}/mellanox_mlnx_ofed.list"
_ARCH = {"x86_64": "x86_64", "aarch64": "arm64-sbsa"}


@dataclass(frozen=True)
class Release:
    """The stack release the answers ask for, with what it supports."""

    stack: str  # doca | mlnx_ofed | inbox
    version: str
    label: str  # "DOCA-OFED 2.9.1"
    firmware: dict[str, str] = field(default_factory=dict)
    firmware_source: str = ""  # which release's table the firmware lines come from

    def unsupported(self, family: str) -> str | None:
        """Why this release cannot drive ``family``, or None when it can."""
        if self.stack == "doca" and family == "ConnectX-4" and version_key(self.version)[:2] > (2, 9):
            return f"{self.label} does not support ConnectX-4 (DOCA 2.9 LTS is the last release that does)"
        if self.stack == "doca" and family == "ConnectX-8" and version_key(self.version)[:2] <= (2, 9):
            return f"{self.label} does not support ConnectX-8 (first supported in DOCA 2.10)"
        if self.stack == "mlnx_ofed" and family in MLNX_OFED_UNSUPPORTED:
            return f"{self.label} does not support {family} (ConnectX-7 / BlueField-2 are the last MLNX_OFED supports)"
        return None


def release(ofed: OfedSection) -> Release:
    """The release the answers select, with the firmware table that applies to it."""
    if ofed.stack == "doca":
        key = version_key(ofed.doca_version)[:2]
        known = [k for k in FIRMWARE if k <= key]
        table_key = max(known) if known else min(FIRMWARE)
        source = "DOCA {}.{}".format(*table_key)
        return Release("doca", ofed.doca_version, f"DOCA-OFED {ofed.doca_version}", FIRMWARE[table_key], source)
    if ofed.stack == "mlnx_ofed":
        line = ofed.mlnx_ofed_version.split("-")[0]
        table = _DOCA_2_9 if line == "24.10" else {}
        source = "MLNX_OFED 24.10 (= DOCA 2.9 driver line)" if table else ""
        return Release("mlnx_ofed", ofed.mlnx_ofed_version, f"MLNX_OFED {ofed.mlnx_ofed_version}", table, source)
    return Release("inbox", "", "inbox rdma-core")


def version_key(text: str) -> tuple[int, ...]:
    """Numeric tuple of a dotted/dashed version ("14.32.1010" -> (14, 32, 1010)); junk parts count as 0."""
    return tuple(int(p) if p.isdigit() else 0 for p in re.split(r"[.-]", text.strip()) if p != "")


def firmware_line(version: str) -> tuple[int, int]:
    """The firmware line (major.minor) of a version like 14.32.1010."""
    key = version_key(version)
    return (key[0], key[1]) if len(key) >= 2 else (key[0] if key else 0, 0)


def os_label(os_id: str, os_version: str) -> str:
    """NVIDIA's repository label for an OS: ubuntu22.04, debian12."""
    return f"{os_id}{os_version}"


def repo_arch(machine: str) -> str | None:
    """NVIDIA's repository directory for a CPU architecture (uname -m), or None when it has none."""
    return _ARCH.get(machine)


def doca_package_version(installed: str) -> str:
    """The DOCA release in a doca-ofed package version: 2.9.1-018000-24.10-ubuntu2204 -> 2.9.1."""
    return installed.split(":")[-1].split("-")[0]


def driver_matches(module_version: str | None, ofed_version: str | None) -> bool:
    """Whether the loaded mlx5_core is the installed OFED's: OFED modules carry a version the package
    version starts with (24.10-1.1.4 in OFED-internal-24.10-1.1.4); inbox modules carry none."""
    if not module_version or not ofed_version:
        return False
    return ofed_version.startswith(module_version.strip())
