"""Switch-side lossless configuration for the leaves LLDP found, derived from the hosts' own RoCE answers."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from types import ModuleType

from wizard.answers.switches import FabricSwitch
from wizard.switchcfg import eos, nvue, sonic
from wizard.switchcfg.model import SwitchPortUse, SwitchQos, Unconfigured, port_map, unconfigured
from wizard.switchcfg.portmap import PortMap

VENDORS: dict[str, ModuleType] = {"nvue": nvue, "sonic": sonic, "eos": eos}
VENDOR_ALIASES = {"cumulus": "nvue"}  # the NOS's name, as --switch-os spells it
APPLY = {
    "nvue": "copy to the switch and run: bash {file}   (it ends in `nv config apply`, which shows the diff and asks)",
    "sonic": "copy to the switch and run: sudo config load {file} -y && sudo config save -y   (merged into "
    "CONFIG_DB; do not run `config qos reload` afterwards, it regenerates the QoS tables from the templates)",
    "eos": "configure session roce-wizard, paste the file, `show session-config diffs`, then `commit`",
}

__all__ = [
    "VENDORS",
    "SwitchJob",
    "SwitchPortUse",
    "SwitchQos",
    "Unconfigured",
    "plan_jobs",
    "port_map",
    "render",
    "resolve_sonic_names",
    "unconfigured",
    "write",
]


@dataclass
class SwitchJob:
    """One switch file: the host ports LLDP found behind it and its fabric ports (uplinks, or a spine's ports)."""

    name: str
    role: str = "leaf"
    uses: list[SwitchPortUse] = field(default_factory=list)
    fabric: list[str] = field(default_factory=list)


def plan_jobs(ports: dict[str, list[SwitchPortUse]], fabric: Sequence[FabricSwitch] = ()) -> list[SwitchJob]:
    """Leaves from the LLDP port map, their uplinks and the spines from the answers' switches.fabric."""
    jobs = {name: SwitchJob(name, "leaf", list(uses)) for name, uses in ports.items()}
    for sw in fabric:
        job = jobs.setdefault(sw.name, SwitchJob(sw.name, sw.role))
        job.role = sw.role
        job.fabric += [p for p in sw.ports if p not in job.fabric]
    return list(jobs.values())


def resolve_sonic_names(jobs: list[SwitchJob], maps: dict[str, PortMap]) -> list[SwitchJob]:
    """SONiC's own port names for the LLDP port IDs (aliases); ValueError naming the switch and the alias that no
    port map resolves, before anything is written."""
    out = []
    for job in jobs:
        pm = maps.get(job.name)
        if pm is None:
            raise ValueError(
                f"{job.name}: no port map: save `show interfaces alias` from that switch as <port-map dir>/"
                f"{job.name}.txt (or its /etc/sonic/config_db.json as {job.name}.json)"
            )
        uses = []
        for u in job.uses:
            name = pm.name_of(u.port)
            if name is None:
                raise ValueError(
                    f"{job.name}: LLDP port ID {u.port!r} ({u.host} {u.netdev}) is no alias or port in {pm.source}"
                )
            uses.append(replace(u, port=name))
        fabric = []
        for port in job.fabric:
            name = pm.name_of(port)
            if name is None:
                raise ValueError(f"{job.name}: switches.fabric port {port!r} is no alias or port in {pm.source}")
            fabric.append(name)
        out.append(SwitchJob(job.name, job.role, uses, fabric))
    return out


def render(
    vendor: str, switch: str, uses: list[SwitchPortUse], qos: SwitchQos, fabric: Sequence[str] = (), role: str = "leaf"
) -> str:
    """The configuration text one switch needs (pure)."""
    renderer: Callable[..., str] = VENDORS[VENDOR_ALIASES.get(vendor, vendor)].render
    return renderer(switch, uses, qos, fabric, role)


def write(
    out: Path,
    vendor: str,
    jobs: list[SwitchJob],
    qos: SwitchQos,
    missing: list[Unconfigured],
    *,
    origin: str,
) -> list[Path]:
    """Write OUT/<vendor>/<switch>.<ext> per switch and OUT/<vendor>/README.txt; return the files written. Every
    file is rendered before any is written: a switch the renderer refuses leaves nothing half-written."""
    module = VENDORS[VENDOR_ALIASES.get(vendor, vendor)]
    texts = {job.name: render(vendor, job.name, job.uses, qos, job.fabric, job.role) for job in jobs}
    folder = out / vendor
    folder.mkdir(parents=True, exist_ok=True)
    written: list[Path] = []
    extras: dict[str, str] = {}
    if hasattr(module, "render_structured"):  # EOS: the same configuration as AVD structured configuration
        extras = {job.name: module.render_structured(job.name, job.uses, qos, job.fabric, job.role) for job in jobs}
    for name, text in texts.items():
        path = folder / f"{_safe(name)}.{module.EXT}"
        path.write_text(text, encoding="utf-8")
        written.append(path)
        if name in extras:
            path = folder / f"{_safe(name)}.{module.STRUCTURED_EXT}"
            path.write_text(extras[name], encoding="utf-8")
            written.append(path)
    readme = folder / "README.txt"
    readme.write_text(_readme(vendor, jobs, qos, missing, origin), encoding="utf-8")
    return [*written, readme]


def _readme(vendor: str, jobs: list[SwitchJob], qos: SwitchQos, missing: list[Unconfigured], origin: str) -> str:
    module = VENDORS[VENDOR_ALIASES.get(vendor, vendor)]
    ext = module.EXT
    lines = [
        f"roce-wizard switch-config ({vendor}): what the switch operator applies. The wizard never logs into a switch.",
        f"QoS from the answers: {qos.summary()}",
        f"Port map from: {origin}",
        "",
        "Files (one per switch; each lists the host port every switch port serves):",
    ]
    for job in jobs:
        lines.append(
            f"  {_safe(job.name)}.{ext}: {job.role}, {len(job.uses)} host port(s), {len(job.fabric)} fabric port(s)"
        )
        lines += [f"    {u.port:<14} {u.serves()}" for u in job.uses]
        lines += [f"    {p:<14} {'uplink' if job.role == 'leaf' else 'to a leaf'}" for p in job.fabric]
    if not jobs:
        lines.append("  none: no host port has an LLDP neighbour")
    lines += ["", "Apply: " + APPLY[VENDOR_ALIASES.get(vendor, vendor)].format(file=f"<switch>.{ext}")]
    if hasattr(module, "STRUCTURED_EXT"):
        lines.append(
            f"AVD: <switch>.{module.STRUCTURED_EXT} holds the same configuration as AVD structured configuration "
            "(eos_cli_config_gen); the .eos file adds per interface the lines AVD has no key for."
        )
    if not any(job.role == "spine" for job in jobs) or not any(job.fabric for job in jobs if job.role == "leaf"):
        lines += [
            "Leaf uplinks and spines are not in these files (no switches.fabric in the answers): traffic between rails",
            "crosses them, so give them the same QoS (DSCP map, PFC on the same priority, ECN, watchdog) or lossless",
            "ends at the leaf. List them in the answers' switches.fabric and run switch-config again.",
        ]
    lines += [
        "Then check from the hosts: roce-wizard --answers FILE --only discovery (LLDP/DCBX) and bwtest --incast.",
        "",
        "Not configured (no switch file covers these host ports):",
    ]
    lines += [f"  {m.host} {m.netdev}: {m.reason}" for m in missing] or ["  none"]
    lines += ["", "Sources:"] + [f"  {s}" for s in module.SOURCES]
    return "\n".join(lines) + "\n"


def _safe(name: str) -> str:
    """A switch name as a file name (LLDP chassis names are free text)."""
    return "".join(c if c.isalnum() or c in "-_." else "_" for c in name) or "switch"
