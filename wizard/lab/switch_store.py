"""The simulated switches' saved configuration, kept beside the hosts' disks so two `--demo` runs meet the same
switches: which NOS they run and every configuration file each switch accepted (what `nv config apply` with
auto-save, `config save` or `write memory` keep across a reboot). JSON, never pickle."""

from __future__ import annotations

import json
import os
import sys
import tempfile
from pathlib import Path
from typing import TYPE_CHECKING

from wizard.lab import switch_os

if TYPE_CHECKING:
    from wizard.lab.cluster import Lab

FILE = "switches.json"


def restore_switches(lab: Lab, directory: Path) -> None:
    """Boot the switches from their saved configuration. A saved NOS other than the one asked for is a reinstall:
    the switches start from that NOS's defaults (said on stderr)."""
    fab = lab.fabric.switches
    path = directory / FILE
    if fab is None:
        return
    if not path.exists():
        if lab.switch_os_asked is not None:
            save_switches(lab)  # the NOS asked for is the state directory's from now on
        return
    doc = json.loads(path.read_text())
    saved_os = doc.get("os", "cumulus")
    if lab.switch_os_asked is not None and lab.switch_os_asked != saved_os:
        sys.stderr.write(
            f"[simulated] switches were {saved_os}, now {lab.switch_os_asked}: they start from its defaults "
            "(nothing loaded)\n"
        )
        save_switches(lab)
        return
    if saved_os != lab.switch_os:
        lab.switch_os = saved_os
        lab.fabric = lab.leaf_fabric(saved_os)
        fab = lab.fabric.switches
        assert fab is not None
    saved_of = doc.get("os_of", {})
    for name, texts in doc.get("loaded", {}).items():
        switch = fab.switches.get(name)
        if switch is None:
            continue
        was = saved_of.get(name, saved_os)
        if was != switch.os:  # switches.os_of changed it: a reinstall of that one switch
            sys.stderr.write(f"[simulated] {name} ran {was}, now {switch.os}: it starts from its defaults\n")
            continue
        switch.loaded = list(texts)
        switch_os.rebuild(fab, switch)
    if saved_of != lab.switch_os_of:
        save_switches(lab)


def save_switches(lab: Lab) -> None:
    """Write the switches' saved configuration atomically (nothing without a disk directory)."""
    fab = lab.fabric.switches
    if lab.disk_dir is None or fab is None:
        return
    doc = {
        "os": lab.switch_os,
        "os_of": lab.switch_os_of,
        "loaded": {n: s.loaded for n, s in fab.switches.items() if s.loaded},
    }
    lab.disk_dir.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=lab.disk_dir, prefix=".switches-")
    with os.fdopen(fd, "w") as f:
        json.dump(doc, f, indent=1)
    os.replace(tmp, lab.disk_dir / FILE)


def apply_file(lab: Lab, switch: str, text: str) -> switch_os.LoadResult:
    """Load a configuration file into one switch the way its NOS does, and save what it accepted."""
    fab = lab.fabric.switches
    if fab is None:
        raise ValueError("this lab has no modelled switches (--profile rails-N)")
    if switch not in fab.switches or fab.switches[switch].role == "mgmt":
        names = ", ".join(n for n, s in fab.switches.items() if s.role != "mgmt")
        raise ValueError(f"no switch {switch!r} in the simulated fabric (switches: {names})")
    result = switch_os.load(fab, fab.switches[switch], text)
    if result.applied:
        save_switches(lab)
    return result
