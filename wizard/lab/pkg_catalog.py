"""The Ubuntu and CUDA package catalogs of the reference host (what each package puts on disk)."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Pkg:
    name: str
    version: str
    repo: str = "ubuntu"  # ubuntu | cuda | doca | local
    size_kb: int = 120
    depends: tuple[str, ...] = ()
    bins: tuple[tuple[str, str], ...] = ()  # (path, simulated tool)
    links: tuple[tuple[str, str], ...] = ()  # (path, symlink target)
    files: tuple[tuple[str, str, int], ...] = ()  # (path, content, mode)


def _b(tool: str, *dirs_names: str) -> tuple[tuple[str, str], ...]:
    return tuple((p, tool) for p in dirs_names)


def _tools(prefix: str, *names: str) -> tuple[tuple[str, str], ...]:
    return tuple((f"{prefix}/{n}", n) for n in names)


COREUTILS = (
    "cat",
    "ls",
    "echo",
    "printf",
    "test",
    "[",
    "true",
    "false",
    "mkdir",
    "rm",
    "rmdir",
    "cp",
    "mv",
    "chmod",
    "chown",
    "stat",
    "sha256sum",
    "md5sum",
    "mktemp",
    "touch",
    "ln",
    "readlink",
    "realpath",
    "basename",
    "dirname",
    "head",
    "tail",
    "wc",
    "sort",
    "uniq",
    "cut",
    "tr",
    "tee",
    "env",
    "nohup",
    "sleep",
    "timeout",
    "id",
    "whoami",
    "uname",
    "printenv",
    "date",
    "install",
    "nproc",
    "seq",
)


BASE: list[Pkg] = [
    Pkg("bash", "5.1-6ubuntu1.1", bins=_b("bash", "/usr/bin/bash")),
    Pkg(
        "dash",
        "0.5.11+git20210903+057cd650a4ed-3build1",
        bins=_b("bash", "/usr/bin/dash"),
        links=(("/usr/bin/sh", "dash"),),
    ),
    Pkg("coreutils", "8.32-4.1ubuntu1.2", bins=_tools("/usr/bin", *COREUTILS)),
    Pkg("grep", "3.7-1build1", bins=_tools("/usr/bin", "grep")),
    Pkg("sed", "4.8-1ubuntu2", bins=_tools("/usr/bin", "sed")),
    Pkg("mawk", "1.3.4.20200120-3", bins=_b("awk", "/usr/bin/mawk"), links=(("/usr/bin/awk", "mawk"),)),
    Pkg("findutils", "4.8.0-1ubuntu3", bins=_tools("/usr/bin", "find", "xargs")),
    Pkg("hostname", "3.23ubuntu2", bins=_tools("/usr/bin", "hostname")),
    Pkg("iproute2", "5.15.0-1ubuntu2", bins=_tools("/usr/sbin", "ip", "rdma", "dcb")),
    Pkg("ethtool", "1:5.16-1ubuntu0.1", bins=_tools("/usr/sbin", "ethtool")),
    Pkg("pciutils", "1:3.7.0-6", bins=_tools("/usr/bin", "lspci")),
    Pkg("kmod", "29-1ubuntu1", bins=_tools("/usr/sbin", "modprobe", "lsmod", "rmmod", "insmod", "modinfo")),
    Pkg("iputils-ping", "3:20211215-1", bins=_tools("/usr/bin", "ping")),
    Pkg("netplan.io", "0.106.1-7ubuntu0.22.04.4", bins=_tools("/usr/sbin", "netplan")),
    Pkg(
        "systemd",
        "249.11-0ubuntu3.12",
        bins=_tools("/usr/bin", "systemctl", "systemd-run", "journalctl", "hostnamectl"),
        links=(
            ("/usr/sbin/reboot", "/bin/systemctl"),
            ("/usr/sbin/shutdown", "/bin/systemctl"),
            ("/usr/sbin/poweroff", "/bin/systemctl"),
        ),
    ),
    Pkg("sudo", "1.9.9-1ubuntu2.4", bins=_tools("/usr/bin", "sudo")),
    Pkg("udev", "249.11-0ubuntu3.12", bins=_tools("/usr/bin", "udevadm")),  # Ubuntu 22.04: /usr/bin/udevadm
    Pkg("dpkg", "1.21.1ubuntu2.3", bins=_tools("/usr/bin", "dpkg", "dpkg-query")),
    Pkg("apt", "2.4.13", bins=_tools("/usr/bin", "apt-get", "apt", "apt-cache")),
    Pkg(
        "procps",
        "2:3.3.17-6ubuntu2.1",
        bins=_tools("/usr/bin", "ps", "pgrep", "pkill", "uptime", "free") + (("/usr/sbin/sysctl", "sysctl"),),
    ),
    Pkg("util-linux", "2.37.2-4ubuntu3.4", bins=_tools("/usr/bin", "dmesg", "lscpu", "flock")),
    Pkg("wget", "1.21.2-2ubuntu1.1", bins=_tools("/usr/bin", "wget")),
    Pkg("gpg", "2.2.27-3ubuntu2.1", bins=_tools("/usr/bin", "gpg")),
    Pkg("gnupg", "2.2.27-3ubuntu2.1"),
    Pkg(
        "systemd-timesyncd",
        "249.11-0ubuntu3.12",
        files=(
            (
                "/lib/systemd/system/systemd-timesyncd.service",
                "[Unit]\nDescription=Network Time Synchronization\n"
                "[Service]\nType=notify\nExecStart=!!/lib/systemd/systemd-timesyncd\n"
                "[Install]\nWantedBy=sysinit.target\n",
                0o644,
            ),
        ),
    ),
    Pkg("curl", "7.81.0-1ubuntu1.20", bins=_tools("/usr/bin", "curl")),
    Pkg("openssh-server", "1:8.9p1-3ubuntu0.10"),
    Pkg("openssh-client", "1:8.9p1-3ubuntu0.10", bins=_tools("/usr/bin", "ssh")),
    Pkg("libc-bin", "2.35-0ubuntu3.8", bins=_tools("/usr/bin", "ldd")),
    Pkg(
        "python3",
        "3.10.6-1~22.04.1",
        bins=(("/usr/bin/python3.10", "python3"),),
        links=(("/usr/bin/python3", "python3.10"),),
    ),
    Pkg("linux-image-5.15.0-125-generic", "5.15.0-125.135"),
    Pkg("linux-modules-extra-5.15.0-125-generic", "5.15.0-125.135"),
    Pkg("libibverbs1", "39.0-1"),
    Pkg("ibverbs-providers", "39.0-1"),
    Pkg(
        "rdma-core",
        "39.0-1",
        files=(
            (
                "/usr/lib/udev/rules.d/60-rdma-persistent-naming.rules",
                'ACTION=="add", SUBSYSTEM=="infiniband", PROGRAM="rdma_rename %k NAME_FALLBACK"\n',
                0o644,
            ),
        ),
    ),
    # nvidia-dkms-* Depends: dkms; its maintainer scripts build the driver's modules with DKMS (gpudirect_dkms.py)
    Pkg("dkms", "2.8.7-2ubuntu2.2", size_kb=70, bins=_tools("/usr/sbin", "dkms")),
    Pkg("nvidia-dkms-550-server", "550.127.05-0ubuntu0.22.04.1", repo="cuda", size_kb=40200, depends=("dkms",)),
    Pkg("nvidia-utils-550-server", "550.127.05-0ubuntu0.22.04.1", repo="cuda", bins=_tools("/usr/bin", "nvidia-smi")),
    Pkg(
        "nvidia-driver-550-server",
        "550.127.05-0ubuntu0.22.04.1",
        repo="cuda",
        depends=("nvidia-dkms-550-server", "nvidia-utils-550-server"),
    ),
]


UBUNTU: list[Pkg] = [
    Pkg(
        "ibverbs-utils",
        "39.0-1",
        size_kb=63,
        depends=("libibverbs1",),
        bins=_tools("/usr/bin", "ibv_devices", "ibv_devinfo", "ibv_rc_pingpong"),
    ),
    Pkg(
        "infiniband-diags",
        "39.0-1",
        size_kb=412,
        bins=_tools("/usr/sbin", "ibstat", "ibstatus", "sminfo", "iblinkinfo", "ibnetdiscover", "smpquery"),
    ),
    Pkg(
        "perftest",
        "4.4+0.37-1",
        size_kb=390,
        bins=_tools(
            "/usr/bin", "ib_write_bw", "ib_read_bw", "ib_send_bw", "ib_write_lat", "ib_read_lat", "ib_send_lat"
        ),
    ),
    Pkg("rdmacm-utils", "39.0-1", size_kb=88, bins=_tools("/usr/bin", "rping")),
    Pkg("libibverbs-dev", "39.0-1", size_kb=620),
    Pkg(
        "chrony",
        "4.2-2ubuntu2",
        size_kb=301,
        bins=_tools("/usr/bin", "chronyc"),
        files=(
            (
                "/lib/systemd/system/chrony.service",
                "[Unit]\nDescription=chrony, an NTP client/server\n"
                "[Service]\nType=forking\nExecStart=/usr/sbin/chronyd $DAEMON_OPTS\n"
                "[Install]\nWantedBy=multi-user.target\n",
                0o644,
            ),
        ),
    ),
    Pkg("openmpi-bin", "4.1.2-2ubuntu1", size_kb=2040, bins=_tools("/usr/bin", "mpirun")),
    Pkg("libopenmpi-dev", "4.1.2-2ubuntu1", size_kb=4200, depends=("openmpi-bin",)),
    Pkg("ifenslave", "2.13ubuntu1", size_kb=14),
    Pkg("net-tools", "1.60+git20181103.0eebece-1ubuntu5", size_kb=204),
    Pkg("build-essential", "12.9ubuntu3", size_kb=12, depends=("gcc", "make")),
    Pkg("gcc", "4:11.2.0-1ubuntu1", size_kb=51),
    Pkg("make", "4.3-4.1build1", size_kb=180, bins=_tools("/usr/bin", "make")),
    Pkg("cmake", "3.22.1-1ubuntu1.22.04.2", size_kb=5000),
    Pkg("python3-venv", "3.10.6-1~22.04.1", size_kb=1),
    Pkg("python3-pip", "22.0.2+dfsg-1ubuntu0.5", size_kb=1300),
    Pkg("linux-headers-5.15.0-125", "5.15.0-125.135", size_kb=12400),
    Pkg(
        "linux-headers-5.15.0-125-generic",
        "5.15.0-125.135",
        size_kb=2900,
        depends=("linux-headers-5.15.0-125",),
        files=(("/usr/src/linux-headers-5.15.0-125-generic/Makefile", "# simulated kernel headers\n", 0o644),),
        links=(("/usr/lib/modules/5.15.0-125-generic/build", "/usr/src/linux-headers-5.15.0-125-generic"),),
    ),
    Pkg("git", "1:2.34.1-1ubuntu1.11", size_kb=3200),
    Pkg(
        "lldpad",
        "1.1+git20200127.f3a8ea7-0ubuntu2",
        size_kb=640,
        bins=_tools("/usr/sbin", "lldptool"),
        files=(
            (
                "/lib/systemd/system/lldpad.service",
                "[Unit]\nDescription=Link Layer Discovery Protocol Agent "
                "Daemon.\n[Service]\nType=simple\nExecStart=/usr/sbin/lldpad -t\n"
                "[Install]\nWantedBy=multi-user.target\n",
                0o644,
            ),
        ),
    ),
    # nginx (Ubuntu 22.04: 1.18.0-6ubuntu14), the unit as Ubuntu ships it: `nginx -t` before every start
    Pkg(
        "nginx",
        "1.18.0-6ubuntu14.4",
        size_kb=1120,
        bins=_tools("/usr/sbin", "nginx"),
        files=(
            (
                "/lib/systemd/system/nginx.service",
                "[Unit]\nDescription=A high performance web server and a reverse proxy server\n"
                "Documentation=man:nginx(8)\nAfter=network.target nss-lookup.target\n\n[Service]\nType=forking\n"
                "PIDFile=/run/nginx.pid\nExecStartPre=/usr/sbin/nginx -t -q -g 'daemon on; master_process on;'\n"
                "ExecStart=/usr/sbin/nginx -g 'daemon on; master_process on;'\n"
                "ExecReload=/usr/sbin/nginx -g 'daemon on; master_process on;' -s reload\nTimeoutStopSec=5\n"
                "KillMode=mixed\n\n[Install]\nWantedBy=multi-user.target\n",
                0o644,
            ),
            (
                "/etc/nginx/nginx.conf",
                "user www-data;\nworker_processes auto;\npid /run/nginx.pid;\nevents {}\n"
                "http {\n\tinclude /etc/nginx/conf.d/*.conf;\n\tinclude /etc/nginx/sites-enabled/*;\n}\n",
                0o644,
            ),
        ),
    ),
    # lldpd (Ubuntu 22.04: 1.0.13-1): lldpcli, with lldpctl as its "show neighbors details" alias
    Pkg(
        "lldpd",
        "1.0.13-1",
        size_kb=520,
        bins=_tools("/usr/sbin", "lldpcli", "lldpctl", "lldpd"),
        files=(
            (
                "/lib/systemd/system/lldpd.service",
                "[Unit]\nDescription=LLDP daemon\nDocumentation=man:lldpd(8)\n[Service]\nType=notify\n"
                "NotifyAccess=main\nEnvironmentFile=-/etc/default/lldpd\nExecStart=/usr/sbin/lldpd $DAEMON_ARGS\n"
                "Restart=on-failure\n[Install]\nWantedBy=multi-user.target\n",
                0o644,
            ),
        ),
    ),
]


CUDA: list[Pkg] = [
    Pkg(
        "libnccl2",
        "2.21.5-1+cuda12.4",
        repo="cuda",
        size_kb=204800,
        files=(("/usr/lib/x86_64-linux-gnu/libnccl.so.2.21.5", "", 0o644),),
        links=(("/usr/lib/x86_64-linux-gnu/libnccl.so.2", "libnccl.so.2.21.5"),),
    ),
    Pkg(
        "libnccl-dev",
        "2.21.5-1+cuda12.4",
        repo="cuda",
        size_kb=208000,
        depends=("libnccl2",),
        files=(("/usr/include/nccl.h", "/* simulated */\n", 0o644),),
    ),
]
