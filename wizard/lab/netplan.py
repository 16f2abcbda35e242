"""netplan on a simulated host: read /etc/netplan/*.yaml, validate like netplan does, apply to netdevs."""

from __future__ import annotations

import ipaddress
import os
import time
from typing import TYPE_CHECKING, Any

import yaml

from wizard.lab import netops
from wizard.lab.netdevs import BOND_MODES, HASH_POLICIES, BondParams, Netdev, drop_link_local, ensure_link_local
from wizard.lab.vfs import Cred, FsError

if TYPE_CHECKING:
    from wizard.lab.host import SimHost

NETDEF_KEYS = {
    "addresses",
    "dhcp4",
    "dhcp6",
    "mtu",
    "optional",
    "routes",
    "nameservers",
    "gateway4",
    "gateway6",
    "match",
    "set-name",
    "link-local",
    "macaddress",
    "accept-ra",
    "critical",
    "wakeonlan",
    "routing-policy",
    "ignore-carrier",
    "renderer",
    "activation-mode",
    "emit-lldp",
    "receive-checksum-offload",
    "transmit-checksum-offload",
    "ipv6-privacy",
    "dhcp-identifier",
}
BOND_KEYS = NETDEF_KEYS | {"interfaces", "parameters"}
BOND_PARAMS = {
    "mode",
    "lacp-rate",
    "mii-monitor-interval",
    "min-links",
    "transmit-hash-policy",
    "ad-select",
    "all-slaves-active",
    "arp-interval",
    "arp-ip-targets",
    "arp-validate",
    "arp-all-targets",
    "up-delay",
    "down-delay",
    "fail-over-mac-policy",
    "gratuitous-arp",
    "packets-per-slave",
    "primary-reselect-policy",
    "resend-igmp",
    "learn-packet-interval",
    "primary",
}
NETWORK_KEYS = {"version", "renderer", "ethernets", "bonds", "bridges", "vlans", "wifis", "tunnels", "vrfs"}


class NetplanError(Exception):
    """A configuration error, formatted like netplan's (path:line:col: message + the line and a caret)."""


def _err(path: str, text: str, node: yaml.Node | None, msg: str) -> NetplanError:
    if node is None:
        return NetplanError(f"{path}: Error in network definition: {msg}")
    line, col = node.start_mark.line, node.start_mark.column
    src = text.splitlines()[line] if line < len(text.splitlines()) else ""
    return NetplanError(f"{path}:{line + 1}:{col + 1}: Error in network definition: {msg}\n{src}\n{' ' * col}^")


def _map(node: yaml.Node | None) -> dict[str, yaml.Node]:
    if not isinstance(node, yaml.MappingNode):
        return {}
    return {k.value: v for k, v in node.value if isinstance(k, yaml.ScalarNode)}


def _check_mapping(path: str, text: str, node: yaml.Node, allowed: set[str] | None) -> dict[str, yaml.Node]:
    if not isinstance(node, yaml.MappingNode):
        raise _err(path, text, node, "expected mapping (check indentation)")
    seen: set[str] = set()
    for key, _ in node.value:
        if allowed is not None and key.value not in allowed:
            raise _err(path, text, key, f"unknown key '{key.value}'")
        if key.value in seen:
            raise _err(path, text, key, f"duplicate key '{key.value}'")
        seen.add(key.value)
    return _map(node)


def _validate_netdef(path: str, text: str, name: str, node: yaml.Node, bond: bool) -> None:
    m = _check_mapping(path, text, node, BOND_KEYS if bond else NETDEF_KEYS)
    if "mtu" in m and not (isinstance(m["mtu"], yaml.ScalarNode) and m["mtu"].value.isdigit()):
        raise _err(path, text, m["mtu"], f"invalid unsigned int value '{getattr(m['mtu'], 'value', '')}'")
    if "addresses" in m:
        addrs = m["addresses"]
        if not isinstance(addrs, yaml.SequenceNode):
            raise _err(path, text, addrs, "expected sequence")
        for a in addrs.value:
            value = str(getattr(a, "value", ""))
            if "/" not in value:
                raise _err(path, text, a, f"address '{value}' is missing /prefixlength")
            try:
                ipaddress.ip_interface(value)
            except ValueError:
                raise _err(
                    path, text, a, f"malformed address '{value}', must be X.X.X.X/NN or X:X:X:X:X:X:X:X/NN"
                ) from None
    if bond and "parameters" in m:
        params = _check_mapping(path, text, m["parameters"], BOND_PARAMS)
        mode = params.get("mode")
        if mode is not None and mode.value not in BOND_MODES:
            raise _err(path, text, mode, f"unknown bond mode '{mode.value}'")
        hp = params.get("transmit-hash-policy")
        if hp is not None and hp.value not in HASH_POLICIES:
            raise _err(path, text, hp, f"unknown transmit-hash-policy '{hp.value}'")
        lr = params.get("lacp-rate")
        if lr is not None and lr.value not in ("slow", "fast"):
            raise _err(path, text, lr, f"unknown lacp-rate value '{lr.value}' (expected 'fast' or 'slow')")


def _merge(base: dict[str, Any], new: dict[str, Any]) -> dict[str, Any]:
    for key, value in new.items():
        if isinstance(value, dict) and isinstance(base.get(key), dict):
            _merge(base[key], value)
        elif key == "addresses" and isinstance(value, list) and isinstance(base.get(key), list):
            base[key] = base[key] + [v for v in value if v not in base[key]]
        else:
            base[key] = value
    return base


# netplan parses with libyaml; PyYAML's binding to it, where built, is also ten times faster than pure Python.
YAML_LOADER = getattr(yaml, "CSafeLoader", yaml.SafeLoader)


def config_files(host: SimHost) -> list[str]:
    try:
        names = host.fs.listdir("/etc/netplan")
    except FsError:
        return []
    return [f"/etc/netplan/{n}" for n in names if n.endswith(".yaml")]


def load(host: SimHost, cred: Cred) -> tuple[dict[str, Any], list[str]]:
    """Merged configuration and warnings; raises :class:`NetplanError` on the first bad file."""
    merged: dict[str, Any] = {}
    warnings: list[str] = []
    for path in config_files(host):
        node_obj = host.fs.lookup(path)
        try:
            text = host.fs.read_text(path, cred)
        except FsError as exc:
            raise NetplanError(f"Cannot open {path}: {exc.reason}") from None
        if node_obj is not None and node_obj.mode & 0o077:
            stamp = time.strftime("%H:%M:%S", time.gmtime()) + f".{int(time.time() * 1000) % 1000:03d}"
            warnings.append(
                f"** (generate:{os.getpid() % 30000 + 1000}): WARNING **: {stamp}: Permissions for {path} are too "
                "open. Netplan configuration should NOT be accessible by others."
            )
        try:
            root = yaml.compose(text, Loader=YAML_LOADER)
            data = yaml.load(text, Loader=YAML_LOADER)  # noqa: S506 - a safe loader
        except yaml.YAMLError as exc:
            mark = getattr(exc, "problem_mark", None)
            where = f"{path}:{mark.line + 1}:{mark.column + 1}" if mark else path
            raise NetplanError(f"{where}: Invalid YAML: {getattr(exc, 'problem', None) or exc}") from None
        if root is None:
            continue
        top = _check_mapping(path, text, root, {"network"})
        net = top.get("network")
        if net is None or not isinstance(net, yaml.MappingNode):
            raise _err(path, text, net or root, "expected mapping (check indentation)")
        sections = _check_mapping(path, text, net, NETWORK_KEYS)
        version = sections.get("version")
        if version is not None and version.value != "2":
            raise _err(path, text, version, "Only version 2 is supported")
        for section, is_bond in (("ethernets", False), ("bonds", True)):
            if section in sections:
                for name, nd in _check_mapping(path, text, sections[section], None).items():
                    _validate_netdef(path, text, name, nd, is_bond)
        _merge(merged, data or {})
    _check_references(merged)
    return merged, warnings


def _check_references(cfg: dict[str, Any]) -> None:
    net = cfg.get("network") or {}
    eths = net.get("ethernets") or {}
    owner: dict[str, str] = {}
    for bond, conf in (net.get("bonds") or {}).items():
        for iface in (conf or {}).get("interfaces") or []:
            if iface not in eths:
                raise NetplanError(f"Error in network definition: {bond}: interface '{iface}' is not defined")
            if iface in owner:
                raise NetplanError(
                    f"Error in network definition: {bond}: interface '{iface}' is already assigned to bond "
                    f"{owner[iface]}"
                )
            owner[iface] = bond


def bond_params(conf: dict[str, Any]) -> BondParams:
    p = (conf or {}).get("parameters") or {}
    return BondParams(
        mode=str(p.get("mode", "balance-rr")),
        miimon=int(p.get("mii-monitor-interval", 0) or 0),
        updelay=int(p.get("up-delay", 0) or 0),
        downdelay=int(p.get("down-delay", 0) or 0),
        xmit_hash_policy=str(p.get("transmit-hash-policy", "layer2")),
        lacp_rate=str(p.get("lacp-rate", "slow")),
        primary=p.get("primary"),
        ad_select=str(p.get("ad-select", "stable")),
    )


def apply(host: SimHost, cfg: dict[str, Any], only: set[str] | None = None) -> None:
    """What systemd-networkd does with the generated config; ``only`` limits it to some netdevs."""
    net = cfg.get("network") or {}
    eths: dict[str, Any] = net.get("ethernets") or {}
    bonds: dict[str, Any] = net.get("bonds") or {}
    if only is None:
        host.gateway = None
        host.static_routes = []
        host.rules = []
        for dev in list(host.netdevs.values()):
            if dev.kind == "bond" and dev.managed and dev.name not in bonds:
                netops.remove_netdev(host, dev.name)
    slave_of = {i: b for b, conf in bonds.items() for i in (conf or {}).get("interfaces") or []}
    for name, conf in bonds.items():
        params = bond_params(conf)
        dev = host.netdevs.get(name)
        if dev is not None and dev.bond is not None and dev.bond.mode != params.mode:
            netops.remove_netdev(host, name)
            dev = None
        if dev is None:
            dev = netops.create_bond(host, name, params)
        else:
            dev.bond = params
        if "mtu" in (conf or {}):
            netops.set_mtu(host, name, int(conf["mtu"]))
    for name, conf in eths.items():
        conf = conf or {}
        dev = host.netdevs.get(name)
        if dev is None or (only is not None and name not in only):
            continue
        master = slave_of.get(name)
        if dev.master and dev.master != master:
            netops.release(host, name)
        if master and dev.master != master:
            netops.enslave(host, name, master)
        dev.admin_up = True
        if "mtu" in conf:
            try:
                netops.set_mtu(host, name, int(conf["mtu"]))
            except netops.NetError:
                host.journal_log("systemd-networkd", f"{name}: Could not set MTU to {conf['mtu']}: Invalid argument")
        if not master:
            netops.set_managed_addrs(host, name, [str(a) for a in conf.get("addresses") or []])
            _link_local(dev, conf)
        if only is None:
            _routes(host, name, conf)
    for name, conf in bonds.items():
        conf = conf or {}
        dev = host.netdevs[name]
        dev.admin_up = True
        if "mtu" in conf:
            netops.set_mtu(host, name, int(conf["mtu"]))
        netops.set_managed_addrs(host, name, [str(a) for a in conf.get("addresses") or []])
        _link_local(dev, conf)
        if only is None:
            _routes(host, name, conf)


def _link_local(dev: Netdev, conf: dict[str, Any]) -> None:
    """netplan ``link-local: []`` means no fe80:: address (default: IPv6 link-local on)."""
    if "link-local" in conf and "ipv6" not in (conf.get("link-local") or []):
        drop_link_local(dev)
    else:
        ensure_link_local(dev)


def _routes(host: SimHost, name: str, conf: dict[str, Any]) -> None:
    """Static routes (main or numbered tables) and routing-policy rules of one netdef."""
    via = conf.get("gateway4")
    if via:
        host.gateway = (str(via), name)
    for r in conf.get("routes") or []:
        if not isinstance(r, dict):
            continue
        to = str(r.get("to", ""))
        table = r.get("table")
        if to in ("default", "0.0.0.0/0") and table is None and r.get("via"):
            host.gateway = (str(r["via"]), name)
            continue
        host.static_routes.append(
            {
                "dst": "default" if to in ("default", "0.0.0.0/0") else to,
                "dev": name,
                "via": str(r["via"]) if r.get("via") else None,
                "table": int(table) if table is not None else None,
                "metric": r.get("metric"),
            }
        )
    for p in conf.get("routing-policy") or []:
        if isinstance(p, dict) and p.get("table") is not None:
            host.rules.append(
                {
                    "priority": int(p.get("priority", 32765)),
                    "from": p.get("from"),
                    "to": p.get("to"),
                    "table": int(p["table"]),
                }
            )


# Ubuntu Desktop's netplan file, verbatim: the global renderer hands every definition without its own renderer to
# NetworkManager (netplan-yaml docs, `renderer`). Used by the nm_renderer fault.
NM_ALL_PATH = "/etc/netplan/01-network-manager-all.yaml"
NM_ALL = "# Let NetworkManager manage all devices on this system\nnetwork:\n  version: 2\n  renderer: NetworkManager\n"
NM_UNIT = """[Unit]
Description=Network Manager
Wants=network.target
After=network-pre.target dbus.service
Before=network.target

[Service]
Type=dbus
BusName=org.freedesktop.NetworkManager
ExecStart=/usr/sbin/NetworkManager --no-daemon

[Install]
WantedBy=multi-user.target
Also=NetworkManager-wait-online.service
"""


def use_network_manager(host: SimHost) -> None:
    """The host's netplan renderer is NetworkManager (Ubuntu Desktop, some cloud images): NM runs, networkd not."""
    from wizard.lab import services

    if not host.fs.exists(NM_ALL_PATH):
        host.fs.install(NM_ALL_PATH, NM_ALL, 0o600)
    host.fs.install("/lib/systemd/system/NetworkManager.service", NM_UNIT)
    unit = services.find_unit(host, "NetworkManager.service")
    assert unit is not None
    services.enable(host, unit)
    networkd = services.find_unit(host, "systemd-networkd.service")
    if networkd is not None:
        services.disable(host, networkd)
