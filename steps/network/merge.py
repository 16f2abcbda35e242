"""Other netplan files that mention our interfaces: what netplan's merge would do to them, and what to refuse."""

from __future__ import annotations

import posixpath
from typing import Any

import yaml

from steps.network.design import Design
from steps.network.facts import NETPLAN_PATH

# Sequences are concatenated across files: any entry in another file ends up on our interface too.
MERGED_SEQUENCES = ("addresses", "routes", "routing-policy", "nameservers", "gateway4", "gateway6")
OURS = posixpath.basename(NETPLAN_PATH)


def review_other_files(d: Design, others: dict[str, str], ours_text: str) -> tuple[list[str], list[str]]:
    """(notes, blockers) about other netplan files that also configure the interfaces we manage.

    netplan reads every file in name order: later scalars override earlier ones, sequences are concatenated
    (netplan-generate(8)). Membership in another bond/bridge/VLAN, or addresses/routes there, would silently
    change what we build; a scalar in a file read after ours would override ours.
    """
    ours = {e.netdev for e in d.endpoints} | {m for e in d.endpoints for m in e.members}
    mine = _sections(yaml.safe_load(ours_text) or {})
    notes: list[str] = []
    blockers: list[str] = []
    harmless: dict[tuple[str, str], list[str]] = {}
    for path, text in sorted(others.items(), key=lambda item: posixpath.basename(item[0])):
        try:
            doc = yaml.safe_load(text) or {}
        except yaml.YAMLError:
            blockers.append(f"{path} is not valid YAML: netplan generate would fail; fix or remove it first")
            continue
        later = posixpath.basename(path) > OURS
        for section, name, conf in _entries(doc):
            members = {m for m in conf.get("interfaces") or [] if m in ours} | (
                {conf["link"]} & ours if conf.get("link") else set()
            )
            if members:
                blockers.append(
                    f"{', '.join(sorted(members))} {'is' if len(members) == 1 else 'are'} part of {section}.{name} in "
                    f"{path}; netplan would merge that into this plan: remove {section}.{name} there (back the file "
                    "up), then re-run"
                )
            if name not in ours:
                continue
            merged = [k for k in MERGED_SEQUENCES if conf.get(k)]
            if merged:
                blockers.append(
                    f"{name} has {', '.join(merged)} in {path}; netplan concatenates them with ours: remove them "
                    f"from {section}.{name} there, then re-run"
                )
            ours_conf = mine.get(name, {})
            clash = [k for k, v in conf.items() if later and k in ours_conf and ours_conf[k] != v]
            if clash:
                blockers.append(
                    f"{path} is read after {OURS} and overrides {', '.join(clash)} of {name}: remove {section}.{name} "
                    "there, then re-run"
                )
            elif not merged:
                shown = (
                    ", ".join(
                        f"{k}: {yaml.safe_dump(v, default_flow_style=True).strip().removesuffix('...')}"
                        for k, v in conf.items()
                    )
                    .replace("\n", "")
                    .strip()
                    or "no settings"
                )
                harmless.setdefault((path, shown), []).append(name)
    for (path, shown), names in harmless.items():
        notes.append(f"{path} also lists {', '.join(names)} ({shown}); {OURS} is read later and takes precedence")
    return notes, blockers


def _entries(doc: Any) -> list[tuple[str, str, dict[str, Any]]]:
    network = doc.get("network") if isinstance(doc, dict) else None
    out = []
    for section in ("ethernets", "bonds", "bridges", "vlans"):
        block = (network or {}).get(section) if isinstance(network, dict) else None
        for name, conf in (block or {}).items() if isinstance(block, dict) else []:
            out.append((section, str(name), conf if isinstance(conf, dict) else {}))
    return out


def _sections(doc: Any) -> dict[str, dict[str, Any]]:
    return {name: conf for _, name, conf in _entries(doc)}
