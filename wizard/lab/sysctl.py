"""Kernel parameters (sysctl) of a simulated host: defaults, per-interface keys, /etc/sysctl.d at boot."""

from __future__ import annotations

import re
from typing import TYPE_CHECKING

from wizard.lab.vfs import FsError

if TYPE_CHECKING:
    from wizard.lab.host import SimHost

DEFAULTS = {
    "net.ipv4.tcp_ecn": "2",
    "net.ipv4.ip_forward": "0",
    "net.core.rmem_max": "212992",
    "net.core.wmem_max": "212992",
    "kernel.numa_balancing": "1",
    "vm.max_map_count": "65530",
    "kernel.hostname": "",
}
# Per-interface defaults; Ubuntu's /etc/sysctl.d/10-network-security.conf sets rp_filter=2 for all/default.
CONF_DEFAULTS = {
    "arp_ignore": "0",
    "arp_announce": "0",
    "rp_filter": "2",
    "arp_filter": "0",
    "accept_local": "0",
    "forwarding": "0",
}
CONF_RE = re.compile(r"^net\.ipv4\.conf\.([^.]+)\.([a-z_]+)$")


class SysctlError(Exception):
    """Unknown key (like "cannot stat /proc/sys/...")."""


def normalize(key: str) -> str:
    key = key.strip()
    if "/" in key and "." not in key.split("/")[0]:
        parts = key.split("/")
        return ".".join(parts)
    return key


def known(host: SimHost, key: str) -> bool:
    m = CONF_RE.match(key)
    if m:
        return m.group(1) in ("all", "default") or m.group(1) in host.netdevs
    return key in DEFAULTS or key.startswith(("net.core.", "net.ipv4.tcp_", "vm.", "kernel."))


def get(host: SimHost, key: str) -> str:
    if not known(host, key):
        raise SysctlError(key)
    if key == "kernel.hostname":
        return host.hostname
    if key in host.sysctl:
        return host.sysctl[key]
    m = CONF_RE.match(key)
    if m:
        return CONF_DEFAULTS.get(m.group(2), "0")
    return DEFAULTS.get(key, "0")


def set_(host: SimHost, key: str, value: str) -> None:
    if not known(host, key):
        raise SysctlError(key)
    host.sysctl[key] = value.strip()


def parse_conf(text: str) -> list[tuple[str, str]]:
    out = []
    for raw in text.splitlines():
        line = raw.strip()
        if not line or line.startswith(("#", ";")) or "=" not in line:
            continue
        key, _, value = line.partition("=")
        out.append((normalize(key.lstrip("-")), value.strip()))
    return out


def boot_sysctl(host: SimHost) -> None:
    """systemd-sysctl at boot: /etc/sysctl.d/*.conf in name order, then /etc/sysctl.conf."""
    host.sysctl = {}
    paths = []
    try:
        paths = [f"/etc/sysctl.d/{n}" for n in host.fs.listdir("/etc/sysctl.d") if n.endswith(".conf")]
    except FsError:
        pass
    for path in paths + ["/etc/sysctl.conf"]:
        try:
            text = host.fs.read_text(path)
        except FsError:
            continue
        for key, value in parse_conf(text):
            try:
                set_(host, key, value)
            except SysctlError:
                continue
