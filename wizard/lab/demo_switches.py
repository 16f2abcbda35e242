"""The simulated switches of a demo state directory, outside a running lab: what an operator reads off or loads
into the real switches (`show interfaces alias`, the uplinks, a configuration file), for `switch-config --demo` and
`roce-wizard lab switch-apply`. Nothing here starts SSH servers."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from wizard.lab import switch_os
from wizard.lab.switch_store import apply_file, restore_switches

if TYPE_CHECKING:
    from wizard.answers.model import Answers
    from wizard.lab.cluster import Lab
    from wizard.lab.switches import Switch


def demo_lab(answers: Answers, state_dir: Path, profile: str, switch_os_name: str | None, faults: list) -> Lab:  # type: ignore[type-arg]
    """The lab as the demo builds it, its switches booted from the state directory's saved configuration."""
    from wizard.lab.cluster import Lab

    lab = Lab.for_profile(
        profile,
        [h.name for h in answers.hosts],
        mgmt_addresses={h.name: h.address for h in answers.hosts},
        faults=faults,
        switch_os=switch_os_name,
        switch_os_of=answers.switches.os_of,
    )
    lab.disk_dir = state_dir / "lab"
    restore_switches(lab, lab.disk_dir)
    return lab


def fabric_switches(lab: Lab) -> list[Switch]:
    """The leaves and spines (not the management switch)."""
    fab = lab.fabric.switches
    return [s for s in fab.switches.values() if s.role in ("leaf", "spine")] if fab is not None else []


def alias_tables(lab: Lab) -> dict[str, str]:
    """switch -> its `show interfaces alias` output (empty for a NOS whose LLDP port IDs are the port names)."""
    return {s.name: switch_os.port_map_text(s) for s in fabric_switches(lab) if switch_os.port_map_text(s)}


def load_files(lab: Lab, files: list[Path]) -> list[tuple[str, Path, switch_os.LoadResult]]:
    """Load each ``<switch>.<ext>`` file into the switch its name gives, as the switch's NOS loads it."""
    out = []
    for path in files:
        switch = path.name.split(".", 1)[0]
        out.append((switch, path, apply_file(lab, switch, path.read_text(encoding="utf-8"))))
    return out
