"""Facts the ofed stage reads on a host, and the small pure parsers behind them."""

from __future__ import annotations

import re
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

# Packages NVIDIA's documented uninstall loop removes before a (re)install: `dpkg --list | grep -E
# 'doca|flexio|dpa-gdbserver|dpa-stats|dpa-resource-mgmt|dpaeumgmt'`, followed by ofed_uninstall.sh --force
# (https://docs.nvidia.com/doca/sdk/DOCA-Host+Installation+and+Upgrade, "Uninstalling Software from Host").
STACK_PACKAGE_RE = re.compile(r"doca|flexio|dpa-gdbserver|dpa-stats|dpa-resource-mgmt|dpaeumgmt")
# NVIDIA builds of distribution packages carry "mlnx" in their version (rdma-core 2410mlnx54-1.2410068).
_NVIDIA_BUILD_RE = re.compile(r"mlnx|OFED", re.IGNORECASE)
TOOL_PACKAGES = ("rdma-core", "ibverbs-utils", "infiniband-diags", "perftest")
KEEP_PACKAGES = (
    *TOOL_PACKAGES,
    "doca-ofed",
    "doca-host",
    "mlnx-ofed-kernel-dkms",
    "mlnx-ofed-kernel-utils",
    "mlnx-ofed-basic",
    "mlnx-ofed-all",
    "mlnx-tools",
    "ofed-scripts",
    "mstflint",
    "chrony",
    "systemd-timesyncd",
    "gnupg",
    "gpg",
    "curl",
    "dkms",
)
TIME_UNITS = ("chrony", "systemd-timesyncd")
RDMA_MODULES = ("mlx5_core", "mlx5_ib", "ib_uverbs", "rdma_cm")
WATCHED_MODULES = (*RDMA_MODULES, "ib_core", "nvidia_peermem")


class _Model(BaseModel):
    model_config = ConfigDict(extra="forbid")


class LocalRepo(_Model):
    """What ofed.local_repo is on the host."""

    path: str
    kind: Literal["deb", "dir", "missing"]
    indexed: bool = False  # a directory with Packages / Packages.gz
    signed: bool = False  # Release.gpg and GPG-KEY-Mellanox.pub present


class OfedFacts(_Model):
    """What the stage saw on one host: installed stack, loaded driver, devices, tools and time sync."""

    arch: str = ""
    packages: dict[str, str] = Field(default_factory=dict)
    stack_packages: list[str] = Field(default_factory=list)
    ofed_stack: str | None = None  # MLNX_OFED | DOCA (from ofed_info -s)
    ofed_version: str | None = None
    driver_version: str | None = None  # /sys/module/mlx5_core/version: present only for OFED-built modules
    modules: list[str] = Field(default_factory=list)
    rdma_by_netdev: dict[str, str] = Field(default_factory=dict)
    rdma_by_pci: dict[str, str] = Field(default_factory=dict)
    ibv_devices: list[str] | None = None  # None: ibv_devinfo missing or failed
    ibv_error: str | None = None
    firmware_by_device: dict[str, str] = Field(default_factory=dict)
    services: dict[str, str] = Field(default_factory=dict)
    files: dict[str, str | None] = Field(default_factory=dict)  # managed files -> current content (None: absent)
    keyrings: list[str] = Field(default_factory=list)  # keyring files already present
    uninstall_script: bool = False
    local_repo: LocalRepo | None = None
    kernel_headers: bool = False
    notes: list[str] = Field(default_factory=list)

    def installed(self, name: str) -> str | None:
        return self.packages.get(name)

    def nvidia_userspace(self) -> bool:
        """Whether rdma-core is NVIDIA's build (left behind by DOCA/MLNX_OFED) rather than the distribution's."""
        return bool(_NVIDIA_BUILD_RE.search(self.packages.get("rdma-core", "")))

    def active(self, unit: str) -> bool:
        return self.services.get(unit) == "active"


def keep_packages(all_packages: dict[str, str], headers: str) -> tuple[dict[str, str], list[str]]:
    """The packages the stage cares about, and the names NVIDIA's uninstall loop would remove."""
    kept = {name: v for name, v in all_packages.items() if name in KEEP_PACKAGES or name == headers}
    stack = sorted(name for name in all_packages if STACK_PACKAGE_RE.search(name))
    return kept, stack


def parse_is_active(text: str, units: tuple[str, ...]) -> dict[str, str]:
    """`systemctl is-active U1 U2 ...` prints one state per unit, in order (exit status 3 when one is inactive)."""
    states = [line.strip() for line in text.splitlines() if line.strip()]
    if len(states) != len(units):
        return {}
    return dict(zip(units, states, strict=True))


# `mlx5_0 -> ../../devices/pci0000:3a/0000:3a:00.0/0000:3b:00.0/infiniband/mlx5_0`: the PCI function owning it.
_CLASS_LINK = re.compile(r"\s(\S+) -> \S*/([0-9a-f]{4}:[0-9a-f]{2}:[0-9a-f]{2}\.[0-7])/infiniband/\S+\s*$")


def parse_rdma_pci(ls_output: str) -> dict[str, str]:
    """`ls -l /sys/class/infiniband` -> {pci address: RDMA device}; works for ports without a netdev (InfiniBand)."""
    result = {}
    for line in ls_output.splitlines():
        match = _CLASS_LINK.search(line.rstrip())
        if match:
            result[match.group(2)] = match.group(1)
    return result


def parse_local_repo(path: str, is_file: bool, is_dir: bool, listing: str) -> LocalRepo:
    """Classify ofed.local_repo from `test -f`, `test -d` and `ls -1 <dir>`."""
    if is_file and path.endswith(".deb"):
        return LocalRepo(path=path, kind="deb")
    if not is_dir:
        return LocalRepo(path=path, kind="missing")
    names = {line.strip() for line in listing.splitlines() if line.strip()}
    return LocalRepo(
        path=path,
        kind="dir",
        indexed=bool(names & {"Packages", "Packages.gz", "Packages.xz"}),
        signed={"Release", "Release.gpg", "GPG-KEY-Mellanox.pub"} <= names,
    )
