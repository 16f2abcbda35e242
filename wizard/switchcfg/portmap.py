"""SONiC port names from the switch itself: an LLDP neighbour sees a SONiC port's *alias* (etp5) as its port ID,
while CONFIG_DB is keyed by the port's *name* (Ethernet32). The operator saves, per switch, the output of `show
interfaces alias` (or the switch's /etc/sonic/config_db.json) as ``<switch>.txt`` / ``<switch>.json`` in a folder;
these pure parsers turn them into alias -> name."""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from pathlib import Path

_ROW = re.compile(r"^(Ethernet\d+)\s+(\S+)\s*$")


@dataclass
class PortMap:
    """One switch's port names: alias -> name, and the buffer model when the source says it."""

    aliases: dict[str, str] = field(default_factory=dict)
    buffer_model: str | None = None
    source: str = ""

    def name_of(self, port_id: str) -> str | None:
        """The SONiC name for an LLDP port ID: the alias's port, or the ID itself when it already is a name."""
        if port_id in self.aliases:
            return self.aliases[port_id]
        return port_id if port_id in self.aliases.values() else None


def parse_show_alias(text: str) -> dict[str, str]:
    """``show interfaces alias`` (tabulate: "Name  Alias", a dashes line, then one row per port) -> alias: name."""
    rows = {}
    for line in text.splitlines():
        m = _ROW.match(line.strip())
        if m:
            rows[m[2]] = m[1]
    if not rows:
        raise ValueError("no 'EthernetN  alias' rows (is this the output of `show interfaces alias`?)")
    return rows


def parse_config_db(text: str) -> tuple[dict[str, str], str | None]:
    """/etc/sonic/config_db.json -> (alias: name from PORT, DEVICE_METADATA's buffer_model)."""
    doc = json.loads(text)
    ports = doc.get("PORT") if isinstance(doc, dict) else None
    if not isinstance(ports, dict) or not ports:
        raise ValueError("no PORT table (is this a SONiC config_db.json?)")
    aliases = {str(f.get("alias") or name): name for name, f in ports.items() if isinstance(f, dict)}
    meta = (doc.get("DEVICE_METADATA") or {}).get("localhost") or {}
    return aliases, meta.get("buffer_model")


def load_port_maps(folder: Path) -> dict[str, PortMap]:
    """``<switch>.txt`` / ``<switch>.json`` files of a folder -> switch: PortMap; a file that does not parse is a
    ValueError naming it."""
    maps: dict[str, PortMap] = {}
    for path in sorted(folder.iterdir()):
        if path.suffix not in (".txt", ".json") or not path.is_file():
            continue
        try:
            if path.suffix == ".json":
                aliases, model = parse_config_db(path.read_text(encoding="utf-8"))
            else:
                aliases, model = parse_show_alias(path.read_text(encoding="utf-8")), None
        except (ValueError, OSError) as exc:
            raise ValueError(f"port map {path}: {exc}") from None
        maps[path.stem] = PortMap(aliases, model, str(path))
    return maps
