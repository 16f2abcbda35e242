"""Disk images of simulated hosts, so two `--demo` runs meet the same hosts.

What survives is what survives a power cycle on a real host: the filesystem (minus /sys, /proc and /dev, which the
kernel makes anew) and the package database. Restoring a disk then boots the host from it, so everything the wizard
persisted (netplan, modules-load.d, enabled units) comes back and nothing that was only set at runtime does. The
images are JSON (never pickle): a state directory is data, not code.
"""

from __future__ import annotations

import base64
import contextlib
import json
import os
import tempfile
from pathlib import Path
from typing import TYPE_CHECKING, Any

from wizard.lab.nodes import Dir, DynDir, DynFile, File, Node, Symlink, changes

if TYPE_CHECKING:
    from wizard.lab.host import SimHost

VERSION = 2  # 2: udev, dkms and openssl in the base image (issue 13); older disks start fresh
KERNEL_MOUNTS = ("sys", "proc", "dev")
DISK_ATTRS = ("packages", "doca_repo", "users")


def _dump(node: Node) -> dict[str, Any] | None:
    meta = {"mode": node.mode, "uid": node.uid, "gid": node.gid}
    if isinstance(node, (DynDir, DynFile)):
        return None
    if isinstance(node, Dir):
        children = {name: _dump(child) for name, child in node.children().items()}
        return {"t": "d", **meta, "c": {k: v for k, v in children.items() if v is not None}}
    if isinstance(node, Symlink):
        return {"t": "l", "uid": node.uid, "gid": node.gid, "target": node.target}
    if isinstance(node, File):
        return {"t": "f", **meta, "data": base64.b64encode(node.data).decode()}
    return None


def _load(doc: dict[str, Any]) -> Node:
    kind = doc["t"]
    if kind == "l":
        return Symlink(doc["target"], doc["uid"], doc["gid"])
    if kind == "f":
        return File(base64.b64decode(doc["data"]), doc["mode"], doc["uid"], doc["gid"])
    directory = Dir(doc["mode"], doc["uid"], doc["gid"])
    for name, child in doc["c"].items():
        directory.add(name, _load(child))
    return directory


def save_disk(host: SimHost, path: Path) -> None:
    """Write the host's disk image atomically."""
    attrs = {name: getattr(host, name) for name in DISK_ATTRS}
    # No node anywhere changed and the package database reads the same: the image on disk is this host's image.
    seen = (path, changes(), json.dumps(attrs))
    if host.__dict__.get("_disk_seen") == seen:
        return
    tree = {name: _dump(node) for name, node in host.fs.root.children().items() if name not in KERNEL_MOUNTS}
    doc = {
        "version": VERSION,
        "host": host.name,
        "tree": {k: v for k, v in tree.items() if v is not None},
        "attrs": attrs,
    }
    text = json.dumps(doc)  # dumps runs the C encoder; dump() iterates in Python, ~10x slower
    if host.__dict__.get("_disk_saved") == (path, text):
        # Most commands only read. Writing and fsyncing an unchanged image after each of them blocked the lab's one
        # event loop on the disk, thousands of times a minute with a thousand hosts.
        host.__dict__["_disk_seen"] = seen
        return
    path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
    fd, temp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.")
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as handle:
            handle.write(text)
            handle.flush()
            os.fsync(handle.fileno())
        os.replace(temp, path)
        host.__dict__["_disk_saved"] = (path, text)
        host.__dict__["_disk_seen"] = seen
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(temp)  # a full or read-only disk keeps the last image and no temp file
        raise


def load_disk(host: SimHost, path: Path) -> bool:
    """Put a saved disk into ``host`` and boot it; False (host untouched) when there is no usable image."""
    try:
        doc = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return False
    if not isinstance(doc, dict) or doc.get("version") != VERSION or doc.get("host") != host.name:
        return False
    root = host.fs.root
    for name in [n for n in root.children() if n not in KERNEL_MOUNTS]:
        root.remove(name)
    for name, node in doc["tree"].items():
        root.add(name, _load(node))
    for name in DISK_ATTRS:
        if name in doc["attrs"]:
            setattr(host, name, doc["attrs"][name])
    host.install_fault_software()
    host.power_on()
    return True
