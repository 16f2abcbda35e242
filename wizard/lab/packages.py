"""Debian package catalog of the simulated hosts: what installing a package puts on the filesystem."""

from __future__ import annotations

from typing import TYPE_CHECKING

from wizard.lab import gpudirect_dkms
from wizard.lab.doca import (
    DOCA,
    DOCA_RELEASES,
    DOCA_VERSION,
    GPG_KEY,
    doca_catalog,
    doca_host_pkg,
    doca_release_of,
)
from wizard.lab.pkg_catalog import BASE, CUDA, UBUNTU, Pkg
from wizard.lab.shell.interp import MARKER

if TYPE_CHECKING:
    from wizard.lab.host import SimHost

DOCA_HOST_DEB = f"doca-host_{DOCA_VERSION}_amd64.deb"
DOCA_URL = f"https://www.mellanox.com/downloads/DOCA/DOCA_v2.9.1/host/{DOCA_HOST_DEB}"
DEB_MAGIC = b"!<arch>\ndebian-binary   roce-wizard-sim-deb\n"


def catalog(repo: str, host: SimHost | None = None) -> dict[str, Pkg]:
    if repo == "doca":
        release = host.doca_repo if host is not None and host.doca_repo else "2.9.1"
        return {p.name: p for p in doca_catalog(release)}
    pkgs = {"ubuntu": BASE + UBUNTU, "cuda": [p for p in BASE if p.repo == "cuda"] + CUDA}[repo]
    return {p.name: p for p in pkgs}


def enabled_repos(host: SimHost) -> list[str]:
    repos = ["ubuntu", "cuda"]
    if host.doca_repo and host.fs.exists("/etc/apt/sources.list.d/doca.list"):
        repos.append("doca")
    return repos


def candidate(host: SimHost, name: str) -> Pkg | None:
    """The version apt would install: DOCA's builds win over Ubuntu's once the DOCA repo is usable."""
    found = None
    for repo in enabled_repos(host):
        pkg = catalog(repo, host).get(name)
        if pkg is not None and (found is None or repo == "doca"):
            found = pkg
    return found


def ofed_version(host: SimHost) -> str:
    """OFED version of the installed DOCA stack (ethtool -i / ofed_info), e.g. 24.10-1.1.4."""
    installed = host.packages.get("doca-ofed", "")
    release = installed.split("-")[0]
    return DOCA_RELEASES.get(release, DOCA_RELEASES["2.9.1"])[1]


def make_deb(name: str = "doca-host", version: str = DOCA_VERSION) -> bytes:
    """Bytes of a simulated .deb that ``dpkg -i`` on a lab host accepts."""
    return DEB_MAGIC + f"Package: {name}\nVersion: {version}\nArchitecture: amd64\n".encode()


def read_deb(data: bytes) -> Pkg | None:
    if not data.startswith(DEB_MAGIC):
        return None
    fields = dict(
        line.split(": ", 1) for line in data[len(DEB_MAGIC) :].decode(errors="replace").splitlines() if ": " in line
    )
    if fields.get("Package") == "doca-host":
        return doca_host_pkg(fields.get("Version", DOCA_VERSION))
    return Pkg(fields.get("Package", "unknown"), fields.get("Version", "0"), repo="local")


def install_files(host: SimHost, pkg: Pkg, *, provisioning: bool = True) -> None:
    """Unpack: binaries, links and files appear; the package is recorded as installed.

    ``provisioning``: the package is part of a host image built in NVIDIA's documented order (GPU driver after
    DOCA-OFED), so the NVIDIA driver's DKMS modules are (re)built against what the image holds. apt-get and dpkg
    pass False and run the maintainer scripts' effects themselves, in the order the operator chose.
    """
    for path, tool in pkg.bins:
        host.fs.install(path, MARKER + tool.encode() + b"\n", 0o755)
    for path, target in pkg.links:
        parent = path.rsplit("/", 1)[0]
        host.fs.mkdir(parent, parents=True)
        if host.fs.lookup(path, follow=False) is None:
            host.fs.symlink(target, path)
    for path, content, mode in pkg.files:
        host.fs.install(path, content, mode)
    host.packages[pkg.name] = pkg.version
    if provisioning and (gpudirect_dkms.is_nvidia_dkms(pkg.name) or pkg.name == gpudirect_dkms.OFED_KERNEL_PKG):
        if any(gpudirect_dkms.is_nvidia_dkms(n) for n in host.packages):
            gpudirect_dkms.provision(host)


def remove_files(host: SimHost, pkg: Pkg) -> None:
    for path, _ in pkg.bins:
        if host.fs.lookup(path, follow=False) is not None:
            host.fs.remove(path)
    for path, _, _ in pkg.files:
        if host.fs.lookup(path, follow=False) is not None:
            host.fs.remove(path)
    host.packages.pop(pkg.name, None)


def deb_filename(pkg: Pkg) -> str:
    return f"{pkg.name}_{pkg.version.split(':')[-1]}_amd64.deb"


__all__ = [
    "BASE",
    "CUDA",
    "DOCA",
    "DOCA_RELEASES",
    "DOCA_URL",
    "DOCA_VERSION",
    "GPG_KEY",
    "UBUNTU",
    "Pkg",
    "candidate",
    "catalog",
    "doca_catalog",
    "doca_host_pkg",
    "doca_release_of",
    "install_files",
    "make_deb",
    "ofed_version",
    "read_deb",
    "remove_files",
]
