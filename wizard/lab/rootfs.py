"""The root filesystem of a freshly installed ("bare") host: directories, /etc, packages, units, mounts."""

from __future__ import annotations

from typing import TYPE_CHECKING

from wizard.lab import packages, procfs
from wizard.lab.sysfs import Sysfs
from wizard.lab.vfs import Dir

if TYPE_CHECKING:
    from wizard.lab.host import SimHost

DIRS = {
    "/usr": 0o755,
    "/usr/bin": 0o755,
    "/usr/sbin": 0o755,
    "/usr/lib": 0o755,
    "/usr/local": 0o755,
    "/usr/local/bin": 0o755,
    "/usr/local/sbin": 0o755,
    "/usr/share": 0o755,
    "/etc": 0o755,
    "/etc/netplan": 0o755,
    "/etc/systemd/system": 0o755,
    "/etc/modules-load.d": 0o755,
    "/etc/modprobe.d": 0o755,
    "/etc/apt": 0o755,
    "/etc/apt/sources.list.d": 0o755,
    "/etc/apt/trusted.gpg.d": 0o755,
    "/usr/share/keyrings": 0o755,
    "/etc/sysctl.d": 0o755,
    "/etc/default": 0o755,
    "/etc/init.d": 0o755,
    "/etc/sudoers.d": 0o750,
    "/var": 0o755,
    "/var/lib": 0o755,
    "/var/log": 0o775,
    "/var/tmp": 0o1777,
    "/tmp": 0o1777,
    "/root": 0o700,
    "/home": 0o755,
    "/opt": 0o755,
    "/run": 0o755,
    "/run/systemd": 0o755,
    "/boot": 0o755,
    "/srv": 0o755,
    "/mnt": 0o755,
}

SSH_UNIT = """[Unit]
Description=OpenBSD Secure Shell server
After=network.target auditd.service

[Service]
ExecStart=/usr/sbin/sshd -D $SSHD_OPTS
Type=notify

[Install]
WantedBy=multi-user.target
Alias=sshd.service
"""
NETWORKD_UNIT = """[Unit]
Description=Network Configuration

[Service]
Type=notify
ExecStart=!!/lib/systemd/systemd-networkd

[Install]
WantedBy=multi-user.target
"""
PERSISTENCED_UNIT = """[Unit]
Description=NVIDIA Persistence Daemon

[Service]
Type=forking
ExecStart=/usr/bin/nvidia-persistenced --user nvidia-persistenced --no-persistence-mode --verbose

[Install]
WantedBy=multi-user.target
"""
MODULES_LOAD_UNIT = """[Unit]
Description=Load Kernel Modules
DefaultDependencies=no

[Service]
Type=oneshot
RemainAfterExit=yes
ExecStart=/lib/systemd/systemd-modules-load
"""
SYSCTL_SECURITY = """# Turn on Source Address Verification in all interfaces to
# prevent some spoofing attacks.
net.ipv4.conf.default.rp_filter=2
net.ipv4.conf.all.rp_filter=2
"""
ETC_MODULES = """# /etc/modules: kernel modules to load at boot time.
#
# This file contains the names of kernel modules that should be loaded
# at boot time, one per line. Lines beginning with "#" are ignored.
"""


def os_release(host: SimHost) -> str:
    p = host.profile
    return (
        f'PRETTY_NAME="{p.os_pretty}"\n'
        'NAME="Ubuntu"\n'
        f'VERSION_ID="{p.os_version_id}"\n'
        f'VERSION="{p.os_version}"\n'
        f"VERSION_CODENAME={p.os_codename}\n"
        "ID=ubuntu\n"
        "ID_LIKE=debian\n"
        'HOME_URL="https://www.ubuntu.com/"\n'
        'SUPPORT_URL="https://help.ubuntu.com/"\n'
        'BUG_REPORT_URL="https://bugs.launchpad.net/ubuntu/"\n'
        'PRIVACY_POLICY_URL="https://www.ubuntu.com/legal/terms-and-policies/privacy-policy"\n'
        f"UBUNTU_CODENAME={p.os_codename}\n"
        'VARIANT="roce-wizard simulated host"\n'
        "VARIANT_ID=roce-wizard-sim\n"
    )


def installer_netplan(host: SimHost) -> str:
    gw = host.gateway_address
    lines = [
        "# This is the network config written by 'subiquity'",
        "network:",
        "  ethernets:",
        f"    {host.profile.mgmt.netdev}:",
        "      addresses:",
        f"      - {host.mgmt}",
        "      nameservers:",
        "        addresses:",
        f"        - {gw}",
        "        search: []",
        "      routes:",
        "      - to: default",
        f"        via: {gw}",
    ]
    for port in host.profile.ports:
        lines += [f"    {port.netdev}:", "      dhcp4: false"]
    lines.append("  version: 2")
    return "\n".join(lines) + "\n"


def populate(host: SimHost) -> None:
    fs = host.fs
    for path, mode in DIRS.items():
        fs.mkdir(path, parents=True)
        node = fs.resolve(path)
        node.mode = mode
    for link, target in (("/bin", "usr/bin"), ("/sbin", "usr/sbin"), ("/lib", "usr/lib"), ("/lib64", "usr/lib64")):
        fs.symlink(target, link)
    fs.mkdir("/usr/lib/systemd/system", parents=True)
    fs.mkdir(f"/usr/lib/modules/{host.profile.kernel}", parents=True)
    fs.mount("/sys", Sysfs(host).root())
    fs.mount("/proc", procfs.proc_root(host))
    fs.mount("/dev", procfs.dev_root(host))
    for pkg in packages.BASE:
        packages.install_files(host, pkg)
    fs.install("/etc/os-release", os_release(host))
    fs.install("/etc/hostname", host.name + "\n")
    fs.install("/etc/hosts", f"127.0.0.1 localhost\n127.0.1.1 {host.name}\n\n::1     ip6-localhost ip6-loopback\n")
    fs.install("/etc/passwd", "root:x:0:0:root:/root:/bin/bash\n")
    fs.install("/etc/group", "root:x:0:\nsudo:x:27:\n")
    fs.install("/etc/modules", ETC_MODULES)
    fs.install("/etc/sudoers", "Defaults\tenv_reset\nroot\tALL=(ALL:ALL) ALL\n%sudo\tALL=(ALL:ALL) ALL\n", 0o440)
    fs.install(
        "/etc/apt/sources.list",
        f"deb http://archive.ubuntu.com/ubuntu {host.profile.os_codename} main restricted universe multiverse\n",
    )
    fs.install(
        "/etc/apt/sources.list.d/cuda-ubuntu2204-x86_64.list",
        "deb [signed-by=/usr/share/keyrings/cuda-archive-keyring.gpg] https://developer.download.nvidia.com/"
        "compute/cuda/repos/ubuntu2204/x86_64/ /\n",
    )
    fs.install("/etc/netplan/00-installer-config.yaml", installer_netplan(host), 0o600)
    if not host.fault("hf_logged_out"):
        # The operator ran `hf auth login` as root, as the wizard's notes ask before a gated model (simulated token).
        fs.install("/root/.cache/huggingface/token", "hf_simulatedTokenNotARealOne0000000000\n", 0o600)
    for name, text in (
        ("ssh.service", SSH_UNIT),
        ("systemd-networkd.service", NETWORKD_UNIT),
        ("nvidia-persistenced.service", PERSISTENCED_UNIT),
        ("systemd-modules-load.service", MODULES_LOAD_UNIT),
    ):
        fs.install(f"/lib/systemd/system/{name}", text)
    for name in ("ssh.service", "systemd-networkd.service", "nvidia-persistenced.service"):
        fs.mkdir("/etc/systemd/system/multi-user.target.wants", parents=True)
        fs.symlink(f"/lib/systemd/system/{name}", f"/etc/systemd/system/multi-user.target.wants/{name}")
    fs.mkdir("/etc/systemd/system/sysinit.target.wants", parents=True)
    fs.symlink(
        "/lib/systemd/system/systemd-timesyncd.service",
        "/etc/systemd/system/sysinit.target.wants/systemd-timesyncd.service",
    )
    fs.install("/etc/sysctl.d/10-network-security.conf", SYSCTL_SECURITY)
    fs.install("/etc/sysctl.conf", "#\n# /etc/sysctl.conf - Configuration file for setting system variables\n#\n")
    for key in ("ubuntu-keyring-2012-cdimage.gpg", "ubuntu-keyring-2018-archive.gpg"):
        fs.install(f"/etc/apt/trusted.gpg.d/{key}", "\x99\x02\x0d", 0o644)
    fs.install("/usr/share/keyrings/cuda-archive-keyring.gpg", "\x99\x02\x0d", 0o644)
    fs.install(f"/lib/modules/{host.profile.kernel}/kernel/drivers/video/nvidia-peermem.ko", "", 0o644)
    assert isinstance(fs.resolve("/tmp"), Dir)
