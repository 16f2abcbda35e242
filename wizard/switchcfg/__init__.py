"""Switch-side lossless configuration for the leaves LLDP found, derived from the hosts' own RoCE answers."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from types import ModuleType

from wizard.switchcfg import eos, nvue, sonic
from wizard.switchcfg.model import SwitchPortUse, SwitchQos, Unconfigured, port_map, unconfigured

VENDORS: dict[str, ModuleType] = {"nvue": nvue, "sonic": sonic, "eos": eos}
APPLY = {
    "nvue": "copy to the switch and run: bash {file}   (it ends in `nv config apply`, which shows the diff and asks)",
    "sonic": "copy to the switch and run: sudo config load {file} -y && sudo config save -y   (merged into "
    "CONFIG_DB; do not run `config qos reload` afterwards, it regenerates the QoS tables from the templates)",
    "eos": "configure session roce-wizard, paste the file, `show session-config diffs`, then `commit`",
}

__all__ = ["VENDORS", "SwitchPortUse", "SwitchQos", "Unconfigured", "port_map", "render", "unconfigured", "write"]


def render(vendor: str, switch: str, uses: list[SwitchPortUse], qos: SwitchQos) -> str:
    """The configuration text one switch needs (pure)."""
    renderer: Callable[[str, list[SwitchPortUse], SwitchQos], str] = VENDORS[vendor].render
    return renderer(switch, uses, qos)


def write(
    out: Path,
    vendor: str,
    ports: dict[str, list[SwitchPortUse]],
    qos: SwitchQos,
    missing: list[Unconfigured],
    *,
    origin: str,
) -> list[Path]:
    """Write OUT/<vendor>/<switch>.<ext> per switch and OUT/<vendor>/README.txt; return the files written."""
    folder = out / vendor
    folder.mkdir(parents=True, exist_ok=True)
    written: list[Path] = []
    for switch, uses in ports.items():
        path = folder / f"{_safe(switch)}.{VENDORS[vendor].EXT}"
        path.write_text(render(vendor, switch, uses, qos), encoding="utf-8")
        written.append(path)
    readme = folder / "README.txt"
    readme.write_text(_readme(vendor, ports, qos, missing, origin), encoding="utf-8")
    return [*written, readme]


def _readme(
    vendor: str, ports: dict[str, list[SwitchPortUse]], qos: SwitchQos, missing: list[Unconfigured], origin: str
) -> str:
    ext = VENDORS[vendor].EXT
    lines = [
        f"roce-wizard switch-config ({vendor}): what the switch operator applies. The wizard never logs into a switch.",
        f"QoS from the answers: {qos.summary()}",
        f"Port map from: {origin}",
        "",
        "Files (one per switch; each lists the host port every switch port serves):",
    ]
    for switch, uses in ports.items():
        lines.append(f"  {_safe(switch)}.{ext}: {len(uses)} port(s)")
        lines += [f"    {u.port:<14} {u.serves()}" for u in uses]
    if not ports:
        lines.append("  none: no host port has an LLDP neighbour")
    lines += ["", "Apply: " + APPLY[vendor].format(file=f"<switch>.{ext}")]
    lines += [
        "Spine switches are not in the host's LLDP view: give their leaf-facing ports the same global QoS (the same",
        "DSCP map, PFC on the same priority, ECN on the same queue), or lossless ends at the leaf.",
        "Then check from the hosts: roce-wizard --answers FILE --only discovery (LLDP/DCBX) and bwtest.",
        "",
        "Not configured (no switch file covers these host ports):",
    ]
    lines += [f"  {m.host} {m.netdev}: {m.reason}" for m in missing] or ["  none"]
    lines += ["", "Sources:"] + [f"  {s}" for s in VENDORS[vendor].SOURCES]
    return "\n".join(lines) + "\n"


def _safe(name: str) -> str:
    """A switch name as a file name (LLDP chassis names are free text)."""
    return "".join(c if c.isalnum() or c in "-_." else "_" for c in name) or "switch"
