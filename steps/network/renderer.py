"""Which daemon renders the rails (networkd or NetworkManager) and which netplan definitions hold the boot.

Sources:
- netplan-yaml docs, `renderer`: per device, per device type or global; default networkd. netplan reads every
  /{lib,etc,run}/netplan/*.yaml in file-name order and a definition without its own renderer gets the global one
  (src/parse.c, finish_iterator / get_default_backend_for_type), so a global `renderer:` in a file read last moves
  the definitions of EVERY other file, the management interface's included. The wizard therefore writes the
  renderer per interface, never globally.
- netplan-yaml docs, `optional`: "An optional device is not required for booting ... *only* supported by networkd";
  netplan's NetworkManager backend (src/nm.c) does not render it, and NetworkManager-wait-online (nm-online(1) -s)
  does not wait for a device without carrier.
- netplan < 1.2 drops `routing-policy` for NetworkManager definitions (support added by netplan commit d3754780,
  "networkmanager: add support for routing-policy", first in 1.2); per-rail source rules then need networkd.
"""

from __future__ import annotations

import functools
import posixpath
import re
from typing import Any

import yaml

from wizard.engine.step import CheckItem

NETWORKD = "networkd"
NM = "NetworkManager"
NM_ROUTING_POLICY = (1, 2)  # first netplan release whose NetworkManager backend writes routing-policy


# libyaml (what netplan itself parses with) when PyYAML was built with it: a tenth of the pure-Python parser's cost.
_LOADER = getattr(yaml, "CSafeLoader", yaml.SafeLoader)


@functools.lru_cache(maxsize=1024)
def _doc(text: str) -> dict[str, Any]:
    """The ``network:`` mapping of one netplan file; cached, as a stage checks the same files of every host again
    for each wave of a rolling reboot. Callers only read it."""
    try:
        doc = yaml.load(text, Loader=_LOADER) or {}  # noqa: S506 - a safe loader
    except yaml.YAMLError:
        return {}
    net = doc.get("network") if isinstance(doc, dict) else None
    return net if isinstance(net, dict) else {}


def global_renderer(files: dict[str, str]) -> tuple[str, str] | None:
    """(renderer, path) of the global `network: renderer:` netplan ends up with, or None (netplan's default)."""
    found = None
    for path, text in sorted(files.items(), key=lambda item: posixpath.basename(item[0])):
        value = _doc(text).get("renderer")
        if value in (NETWORKD, NM):
            found = (str(value), path)
    return found


def _version(text: str | None) -> tuple[int, ...]:
    match = re.match(r"(?:\d+:)?(\d+(?:\.\d+)*)", text or "")
    return tuple(int(p) for p in match.group(1).split(".")) if match else ()


def choose(
    others: dict[str, str], nm_active: bool, networkd_active: bool, netplan_version: str | None, policy: bool
) -> tuple[str, str]:
    """(renderer for the rails, why): the host's own renderer; networkd where NM would lose the rails' rules."""
    found = global_renderer(others)
    if found is not None:
        renderer, why = found[0], f"{found[1]} sets renderer: {found[0]} for this host"
    elif nm_active and not networkd_active:
        renderer, why = NM, "NetworkManager is active and systemd-networkd is not (no netplan file sets a renderer)"
    else:
        renderer, why = NETWORKD, "netplan's default renderer (no netplan file sets one)"
    if renderer == NM and policy and _version(netplan_version) < NM_ROUTING_POLICY:
        return NETWORKD, (
            f"{why}, but netplan {netplan_version or '(unknown version)'} drops routing-policy for NetworkManager "
            "interfaces (supported from netplan 1.2): the rails use networkd, per interface; netplan marks them "
            "unmanaged for NetworkManager, which keeps every other interface"
        )
    return renderer, why


def definitions(files: dict[str, str]) -> dict[str, tuple[str, dict[str, Any]]]:
    """name -> (section, merged settings) over netplan files in read order (later scalars override)."""
    merged: dict[str, tuple[str, dict[str, Any]]] = {}
    for _, text in sorted(files.items(), key=lambda item: posixpath.basename(item[0])):
        net = _doc(text)
        for section in ("ethernets", "bonds", "bridges", "vlans"):
            block = net.get(section)
            for name, conf in (block or {}).items() if isinstance(block, dict) else []:
                if name == "renderer" or not isinstance(conf, dict | None):
                    continue
                old = merged.get(str(name), (section, {}))[1]
                merged[str(name)] = (section, {**old, **(conf or {})})
    return merged


def waited_for(files: dict[str, str]) -> dict[str, str]:
    """Definitions systemd-networkd-wait-online waits for at boot -> the last file that lists them.

    networkd-rendered (own renderer, else the global one, else networkd), not `optional: true`, no
    `activation-mode` (netplan src/gen-networkd.c, _netplan_networkd_generate_wait_online).
    """
    glob = (global_renderer(files) or (NETWORKD, ""))[0]
    where: dict[str, str] = {}
    for path, text in sorted(files.items(), key=lambda item: posixpath.basename(item[0])):
        for section in ("ethernets", "bonds"):
            block = _doc(text).get(section)
            for name in (block or {}) if isinstance(block, dict) else []:
                where[str(name)] = path
    result = {}
    for name, (_, conf) in definitions(files).items():
        if name not in where or conf.get("optional") is True or conf.get("activation-mode"):
            continue
        if str(conf.get("renderer") or glob) == NETWORKD:
            result[name] = where[name]
    return result


def wait_online_check(design: Any, net: Any, netplan_path: str) -> CheckItem:
    """Does any netplan definition make the boot wait for a link that may have no carrier?

    A rail that is not optional fails (its peer server being off stalls every boot for 2 minutes, and the QoS,
    Ray and inference units After=network-online.target with it); another non-management interface that is not
    optional and has no carrier now warns (it stalls every boot while it stays dark).
    """
    files = dict(net.netplan_others)
    if net.netplan_file is not None:
        files[netplan_path] = net.netplan_file
    waiting = waited_for(files)
    rails = {n for e in design.endpoints for n in (e.netdev, *e.members)} - {design.ssh_interface}
    stalls = {n: p for n, p in waiting.items() if n in rails}
    title = "boot does not wait for rails"
    if stalls:
        where = "; ".join(f"{n} in {p}" for n, p in sorted(stalls.items()))
        return CheckItem(
            id="wait_online",
            title=title,
            status="fail",
            evidence=f"not optional: {where}: with a peer off, systemd-networkd-wait-online holds "
            "network-online.target (and the units after it) for its 120 s timeout at every boot",
            fix="re-run the network stage (it writes optional: true on every rail); in another file, add "
            "`optional: true` to the interface or remove its definition",
        )
    dark = {
        n: p
        for n, p in waiting.items()
        if n != design.ssh_interface and n in net.interfaces and not net.interfaces[n].carrier
    }
    if dark:
        where = "; ".join(f"{n} in {p}" for n, p in sorted(dark.items()))
        return CheckItem(
            id="wait_online",
            title=title,
            status="warn",
            evidence=f"no carrier and not optional: {where}: every boot waits 120 s for it "
            "(systemd-networkd-wait-online)",
            fix="add `optional: true` to that interface in that file, or remove its definition if unused",
        )
    listed = ", ".join(sorted(waiting)) or "nothing"
    return CheckItem(id="wait_online", title=title, status="pass", evidence=f"networkd waits at boot for: {listed}")
