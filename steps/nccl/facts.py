"""NCCL stage facts: what the probe read (RDMA ports, nccl.conf, nccl-tests, MPI, CUDA) and its small parsers."""

from __future__ import annotations

import re

from pydantic import BaseModel, ConfigDict, Field

# Packages the nccl stage installs or depends on (queried with dpkg-query -W).
PACKAGES = ("libnccl2", "libnccl-dev", "openmpi-bin", "libopenmpi-dev", "build-essential", "git")
# Where Debian/Ubuntu put Open MPI per architecture (uname -m -> multiarch triplet).
MULTIARCH = {"x86_64": "x86_64-linux-gnu", "aarch64": "aarch64-linux-gnu", "ppc64le": "powerpc64le-linux-gnu"}


class _Model(BaseModel):
    model_config = ConfigDict(extra="forbid")


class RdmaPortState(_Model):
    """One RDMA device port as `rdma link` and sysfs show it now (LAG devices included)."""

    device: str
    port: int
    state: str
    physical_state: str | None = None
    netdev: str | None = None
    link_layer: str | None = None  # "Ethernet" / "InfiniBand" from sysfs
    roce_v2_ipv4_gids: list[int] = Field(default_factory=list)  # GID indexes of RoCE v2 + IPv4 entries

    @property
    def name(self) -> str:
        """The NCCL_IB_HCA token of this port: ``device:port``."""
        return f"{self.device}:{self.port}"


class Binary(_Model):
    """An executable as `ldd` saw it: present, linked against MPI and a resolvable libnccl."""

    path: str
    exists: bool = False
    mpi: bool = False  # linked against libmpi: built with MPI=1
    libnccl: str | None = None  # where libnccl.so.2 resolves to
    missing: list[str] = Field(default_factory=list)  # "lib => not found"


class NcclFacts(_Model):
    """Everything ``Nccl.probe`` read on one host."""

    arch: str = "x86_64"
    nproc: int | None = None
    conf_path: str = "/etc/nccl.conf"
    conf: str | None = None  # current content, None when absent
    user_conf_path: str | None = None  # ~/.nccl.conf of the SSH user: NCCL reads it first and its values win
    user_conf: str | None = None
    # the services (inference/Ray units, no User=) run as root: root's ~/.nccl.conf beats /etc/nccl.conf for them
    root_conf_path: str | None = None  # set only when the SSH user is not root
    root_conf: str | None = None
    ssh_user: str | None = None  # who mpirun runs as
    memlock: str | None = None  # `bash -c 'ulimit -l'` over SSH: KB or "unlimited"; None when unreadable
    bashrc: str | None = None  # /etc/bash.bashrc content, kept only when it sources an nccl.conf
    rdma: list[RdmaPortState] = Field(default_factory=list)
    mtus: dict[str, int] = Field(default_factory=dict)  # netdev -> MTU now
    bonds: dict[str, list[str]] = Field(default_factory=dict)  # bond -> slaves now
    modules: list[str] = Field(default_factory=list)  # loaded kernel modules now
    packages: dict[str, str] = Field(default_factory=dict)  # installed versions of PACKAGES
    libnccl2_candidate: str | None = None  # apt candidate when libnccl2 is not installed
    all_reduce_perf: Binary | None = None
    mpirun: str | None = None  # first line of `mpirun --version`, None when missing
    nvcc: str | None = None  # path of a working nvcc under the CUDA home, None when missing
    tests_source: str | None = None  # "tree" (Makefile + src/), "other" (exists, not nccl-tests), None (absent)
    torchrun: bool | None = None  # None: not probed (test is not torch)
    smoke_script: str | None = None  # current content of the torch smoke test script

    @property
    def nccl_version(self) -> str | None:
        """Upstream version of the installed libnccl2 ("2.21.5"), None when not installed."""
        return upstream_version(self.packages.get("libnccl2"))


def upstream_version(deb_version: str | None) -> str | None:
    """``2.21.5-1+cuda12.4`` -> ``2.21.5``."""
    if not deb_version:
        return None
    return deb_version.split(":")[-1].split("-")[0] or None


def version_tuple(version: str | None) -> tuple[int, ...] | None:
    """``2.21.5`` -> (2, 21, 5); None when absent or not numeric."""
    if not version or not re.match(r"^\d+(\.\d+)*$", version):
        return None
    return tuple(int(x) for x in version.split("."))


def cuda_of_package(deb_version: str | None) -> str | None:
    """The CUDA release an NVIDIA package was built for: ``2.21.5-1+cuda12.4`` -> ``12.4``."""
    match = re.search(r"\+cuda(\d+\.\d+)", deb_version or "")
    return match.group(1) if match else None


def parse_ldd(path: str, text: str, exit_status: int) -> Binary:
    """`ldd BINARY`: present or not, MPI-linked or not, where libnccl resolves."""
    binary = Binary(path=path, exists=exit_status == 0 and "=>" in text)
    for line in text.splitlines():
        match = re.match(r"^\s*(\S+)\s+=>\s+(.*?)\s*(?:\(0x[0-9a-f]+\))?\s*$", line)
        if not match:
            continue
        lib, target = match.groups()
        if target == "not found":
            binary.missing.append(lib)
            continue
        if lib.startswith("libmpi"):
            binary.mpi = True
        if lib.startswith("libnccl.so"):
            binary.libnccl = target
    return binary


def parse_apt_candidate(text: str) -> str | None:
    """`apt-cache policy PKG` -> the candidate version, None when there is none."""
    match = re.search(r"^\s*Candidate:\s*(\S+)", text, re.M)
    if not match or match.group(1) == "(none)":
        return None
    return match.group(1)


def parse_link_layers(text: str) -> dict[tuple[str, int], str]:
    """`grep -sH . /sys/class/infiniband/*/ports/*/link_layer` -> {(device, port): layer}."""
    layers = {}
    for line in text.splitlines():
        match = re.match(r"^/sys/class/infiniband/([^/]+)/ports/(\d+)/link_layer:(\S+)\s*$", line.strip())
        if match:
            layers[(match.group(1), int(match.group(2)))] = match.group(3)
    return layers


def parse_net_sysfs(text: str) -> tuple[dict[str, int], dict[str, list[str]]]:
    """`grep -sH . /sys/class/net/*/mtu /sys/class/net/*/bonding/slaves` -> ({netdev: mtu}, {bond: slaves})."""
    mtus: dict[str, int] = {}
    bonds: dict[str, list[str]] = {}
    for line in text.splitlines():
        match = re.match(r"^/sys/class/net/([^/]+)/(mtu|bonding/slaves):(.*)$", line.strip())
        if not match:
            continue
        name, kind, value = match.groups()
        if kind == "mtu" and value.strip().isdigit():
            mtus[name] = int(value)
        elif kind == "bonding/slaves":
            bonds[name] = value.split()
    return mtus, bonds


def sources_nccl_conf(line: str) -> bool:
    """A shell line that sources an nccl.conf (the seed's bashrc mistake)."""
    return re.match(r"^\s*(?:source|\.)\s+\S*nccl\.conf\b", line) is not None


def multiarch_triplet(arch: str) -> str:
    """Debian multiarch directory for ``uname -m``."""
    return MULTIARCH.get(arch, f"{arch}-linux-gnu")
