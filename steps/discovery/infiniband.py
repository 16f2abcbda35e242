"""Discovery's InfiniBand reads: port state, rate, LIDs and P_Keys from sysfs (always there), the master subnet
manager (sminfo) and the switch port each CA port reaches (iblinkinfo), both from infiniband-diags where it is
installed. All read-only; sminfo and iblinkinfo need root for /dev/infiniband/umad*."""

from __future__ import annotations

import re
from typing import Any

from steps.discovery import facts as df
from wizard.executors.base import Executor, SudoRefused

IB_ATTRS = ("state", "phys_state", "rate", "lid", "sm_lid", "sm_sl", "link_layer")
PORT_ATTRS = "grep -sH . " + " ".join(f"/sys/class/infiniband/*/ports/*/{a}" for a in IB_ATTRS)
PKEYS = "grep -sH . /sys/class/infiniband/*/ports/*/pkeys/*"
SMINFO = ["sminfo"]
IBLINKINFO = ["iblinkinfo"]
_ATTR = re.compile(r"^/sys/class/infiniband/([^/]+)/ports/(\d+)/(?:pkeys/\d+|(\w+)):(.*)$")


def parse_port_attrs(text: str) -> dict[tuple[str, int], dict[str, Any]]:
    """`grep -sH .` over the port attributes and P_Key tables -> (device, port) -> values.

    Formats from drivers/infiniband/core/sysfs.c: state "4: ACTIVE", phys_state "5: LinkUp", rate
    "100 Gb/sec (4X EDR)", lid/sm_lid "0x5", pkeys/N "0xffff" (unused slots read 0x0000).
    """
    out: dict[tuple[str, int], dict[str, Any]] = {}
    for line in text.splitlines():
        m = _ATTR.match(line.strip())
        if not m:
            continue
        device, port, attr, value = m.group(1), int(m.group(2)), m.group(3), m.group(4).strip()
        entry = out.setdefault((device, port), {"pkeys": []})
        if attr is None:  # a pkeys/N line
            if int(value, 16) & 0x7FFF:
                entry["pkeys"].append(value.lower())
        elif attr in ("state", "phys_state"):
            entry[attr] = value.split(":", 1)[-1].strip()
        elif attr in ("lid", "sm_lid"):
            entry[attr] = int(value, 16)
        elif attr == "sm_sl":
            entry[attr] = int(value)
        elif attr == "rate":
            rate = re.match(r"([\d.]+) Gb/sec \((\d+)X (\w+)\)", value)
            if rate:
                entry.update(rate_gbps=float(rate.group(1)), width=int(rate.group(2)), speed=rate.group(3))
        else:
            entry[attr] = value
    return out


def parse_sminfo(text: str) -> df.IbSm | None:
    """`sminfo: sm lid 1 sm guid 0x..., activity count N priority P state 3 SMINFO_MASTER` (infiniband-diags)."""
    m = re.search(r"sm lid (\d+) sm guid (0x[0-9a-fA-F]+), activity count \d+ priority (\d+) state \d+ (\S+)", text)
    if not m:
        return None
    return df.IbSm(lid=int(m.group(1)), guid=m.group(2), priority=int(m.group(3)), state=m.group(4))


def parse_iblinkinfo_peers(text: str) -> dict[str, tuple[str, int]]:
    """iblinkinfo's switch view -> "<node description>" of each CA port -> (switch name, switch port)."""
    peers: dict[str, tuple[str, int]] = {}
    switch = None
    for line in text.splitlines():
        head = re.match(r"^Switch:\s+0x[0-9a-fA-F]+\s+(.*):\s*$", line)
        if head:
            switch = head.group(1).strip()
            continue
        m = re.match(r'^\s*\d+\s+(\d+)\[\s*\].*==>\s+\d+\s+\d+\[\s*\]\s+"([^"]+)"', line)
        if m and switch:
            peers[m.group(2)] = (switch, int(m.group(1)))
    return peers


async def probe_infiniband(ex: Executor, facts: df.DiscoveryFacts, out: Any) -> None:
    """Fill ``port.ib`` for InfiniBand ports and the subnet manager; nothing when the host has no IB port."""
    attrs = parse_port_attrs(await out(PORT_ATTRS) + "\n" + await out(PKEYS))
    for port in facts.rdma_ports():
        values = attrs.get((port.rdma_device or "", port.rdma_port or 1))
        if values and values.get("link_layer"):
            port.link_layer = values["link_layer"]
        if values and port.link_layer == "InfiniBand":
            port.ib = df.IbPortState(
                state=values.get("state", "DOWN"),
                **{k: values.get(k) for k in ("phys_state", "rate_gbps", "width", "speed", "lid", "sm_lid", "sm_sl")},
                pkeys=values.get("pkeys", []),
            )
    ib = [p for p in facts.rdma_ports() if p.ib is not None]
    if not ib:
        return
    sm = await _privileged(ex, SMINFO)
    if isinstance(sm, str):
        facts.ib_sm = parse_sminfo(sm)
        facts.ib_sm_error = None if facts.ib_sm else "no SMInfo in its output"
    else:
        facts.ib_sm_error = sm[1]
    links = await _privileged(ex, IBLINKINFO)
    if isinstance(links, str):
        peers = parse_iblinkinfo_peers(links)
        for port in ib:
            found = peers.get(f"{facts.hostname} {port.rdma_device}")
            if found and port.ib:
                port.ib.switch, port.ib.switch_port = found


async def _privileged(ex: Executor, argv: list[str]) -> str | tuple[None, str]:
    """Output of a umad tool run with sudo, or (None, why not)."""
    try:
        result = await ex.run(argv, sudo=True)
    except SudoRefused:
        return None, "sudo refused"
    if result.exit_status == 127:
        return None, f"{argv[0]} not installed (infiniband-diags)"
    if not result.ok:
        return None, result.first_error_line() or f"exit {result.exit_status}"
    return result.stdout
