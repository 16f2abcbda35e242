"""DOCA-Host releases: the doca-ofed profile's packages, the doca-host repository package and its key."""

from __future__ import annotations

import re

from wizard.lab.pkg_catalog import Pkg, _tools

DOCA_VERSION = "2.9.1-018000-24.10-ubuntu2204"

# DOCA release -> (build number, OFED version) as in the doca-host package names and ofed_info.
DOCA_RELEASES = {
    "2.9.1": ("018000", "24.10-1.1.4"),
    "2.9.2": ("001000", "24.10-2.1.8"),
    "2.10.0": ("093000", "25.01-0.6.0"),
    "3.0.0": ("058000", "25.04-0.6.1"),
}


def doca_catalog(release: str = "2.9.1", os_tag: str = "ubuntu2204") -> list[Pkg]:
    """The doca-ofed profile's packages for one DOCA release (versions shaped like NVIDIA's)."""
    build, ofed = DOCA_RELEASES[release]
    major = ofed.split("-")[0]
    compact = major.replace(".", "")
    mlnx = f"{compact}mlnx54-1.{compact}068"
    kver = f"{major}.OFED.{ofed.replace('-', '.')}.1-1"
    return [
        Pkg("mlnx-ofed-kernel-dkms", kver, repo="doca", size_kb=14800),
        Pkg(
            "mlnx-ofed-kernel-utils",
            kver,
            repo="doca",
            size_kb=320,
            bins=(("/usr/sbin/ibdev2netdev", "ibdev2netdev"), ("/etc/init.d/openibd", "openibd")),
            files=(
                (
                    "/lib/systemd/system/openibd.service",
                    "[Unit]\nDescription=openibd - configure Mellanox "
                    "devices\nBefore=network.target network-pre.target\n[Service]\nType=oneshot\nRemainAfterExit=yes\n"
                    "ExecStart=/etc/init.d/openibd start bootid=%b\nExecStop=/etc/init.d/openibd stop\n"
                    "[Install]\nWantedBy=sysinit.target\n",
                    0o644,
                ),
            ),
        ),
        Pkg(
            "ofed-scripts",
            f"{major}.OFED.{ofed.replace('-', '.')}-1",
            repo="doca",
            size_kb=90,
            bins=_tools("/usr/bin", "ofed_info") + (("/usr/sbin/ofed_uninstall.sh", "ofed_uninstall"),),
        ),
        Pkg(
            "mlnx-tools",
            f"{major}-0.{compact}068",
            repo="doca",
            size_kb=260,
            bins=_tools("/usr/bin", "mlnx_qos") + _tools("/usr/sbin", "show_gids", "cma_roce_mode", "cma_roce_tos"),
        ),
        Pkg("libibverbs1", mlnx, repo="doca", size_kb=180),
        Pkg("ibverbs-providers", mlnx, repo="doca", size_kb=900),
        Pkg("rdma-core", mlnx, repo="doca", size_kb=260),
        Pkg(
            "ibverbs-utils",
            mlnx,
            repo="doca",
            size_kb=70,
            bins=_tools("/usr/bin", "ibv_devices", "ibv_devinfo", "ibv_rc_pingpong"),
        ),
        Pkg(
            "infiniband-diags",
            mlnx,
            repo="doca",
            size_kb=430,
            bins=_tools("/usr/sbin", "ibstat", "ibstatus", "sminfo", "iblinkinfo", "ibnetdiscover", "smpquery"),
        ),
        Pkg(
            "perftest",
            f"{major}.0-0.66.g9093bae.{compact}068",
            repo="doca",
            size_kb=400,
            bins=_tools(
                "/usr/bin", "ib_write_bw", "ib_read_bw", "ib_send_bw", "ib_write_lat", "ib_read_lat", "ib_send_lat"
            ),
        ),
        # mstflint ships mstconfig (the open-source mlxconfig): wizard/lab/cmd_pcie.py answers its queries
        Pkg("mstflint", f"4.16.1-2.{compact}068", repo="doca", size_kb=2600, bins=_tools("/usr/bin", "mstconfig")),
        Pkg(
            "doca-ofed",
            f"{release}-{build}-{major}-{os_tag}",
            repo="doca",
            size_kb=8,
            depends=(
                "mlnx-ofed-kernel-dkms",
                "mlnx-ofed-kernel-utils",
                "ofed-scripts",
                "mlnx-tools",
                "rdma-core",
                "libibverbs1",
                "ibverbs-providers",
                "ibverbs-utils",
                "infiniband-diags",
                "perftest",
                "mstflint",
            ),
        ),
    ]


DOCA = doca_catalog()


GPG_KEY = (
    "-----BEGIN PGP PUBLIC KEY BLOCK-----\n\nmQENBFrRoce+WizardLabSimulatedKey==\n-----END PGP PUBLIC KEY BLOCK-----\n"
)


def doca_host_pkg(version: str = DOCA_VERSION) -> Pkg:
    repo_dir = f"/usr/share/doca-host-{version}/repo"
    return Pkg(
        "doca-host",
        version,
        repo="local",
        size_kb=1_500_000,
        files=(
            (
                "/etc/apt/sources.list.d/doca.list",
                f"deb [signed-by=/etc/apt/trusted.gpg.d/GPG-KEY-Mellanox.pub] file:{repo_dir} ./\n",
                0o644,
            ),
            ("/etc/apt/trusted.gpg.d/GPG-KEY-Mellanox.pub", GPG_KEY, 0o644),
            (f"{repo_dir}/Packages", "", 0o644),
        ),
    )


def doca_release_of(list_text: str) -> str | None:
    """DOCA release named by a doca.list line (online repo URL or a doca-host local repo directory)."""
    m = re.search(r"/repo/doca/(\d+\.\d+\.\d+)/", list_text) or re.search(r"doca-host-(\d+\.\d+\.\d+)-", list_text)
    return m.group(1) if m else None
