"""Discovery's InfiniBand reads: port state, rate, LIDs and P_Keys from sysfs (always there), the master subnet
manager (sminfo) and the switch port each CA port reaches (iblinkinfo), both from infiniband-diags where it is
installed. All read-only; sminfo and iblinkinfo need root for /dev/infiniband/umad*."""

from __future__ import annotations

from typing import Any

from steps.discovery import facts as df
from wizard.executors.base import Executor, SudoRefused
from wizard.parsers.infiniband import (
    IbPortSysfs,
    PortPkeys,
    parse_iblinkinfo,
    parse_sminfo,
    parse_sysfs_ib_ports,
    parse_sysfs_pkeys,
)

IB_ATTRS = ("state", "phys_state", "rate", "lid", "sm_lid", "sm_sl", "link_layer")
PORT_ATTRS = "grep -sH . " + " ".join(f"/sys/class/infiniband/*/ports/*/{a}" for a in IB_ATTRS)
PKEYS = "grep -sH . /sys/class/infiniband/*/ports/*/pkeys/*"
SMINFO = ["sminfo"]
IBLINKINFO = ["iblinkinfo"]


def _port_state(sysfs: IbPortSysfs, keys: PortPkeys | None) -> df.IbPortState:
    """sysfs' view of one IB port (wizard/parsers/infiniband.py) as discovery keeps it."""
    return df.IbPortState(
        state=sysfs.state_name or "DOWN",
        phys_state=sysfs.phys_state_name,
        rate_gbps=sysfs.rate_gbps,
        width=sysfs.lanes,
        speed=sysfs.speed_label,
        lid=sysfs.lid,
        sm_lid=sysfs.sm_lid,
        sm_sl=sysfs.sm_sl,
        pkeys=[k.hex for k in keys.pkeys] if keys else [],
    )


async def probe_infiniband(ex: Executor, facts: df.DiscoveryFacts, out: Any) -> None:
    """Fill ``port.ib`` for InfiniBand ports and the subnet manager; nothing when the host has no IB port."""
    attrs, tables = await out(PORT_ATTRS), await out(PKEYS)
    ports = parse_sysfs_ib_ports(attrs) if attrs.strip() else None
    keys = parse_sysfs_pkeys(tables) if tables.strip() else None
    for port in facts.rdma_ports():
        device, number = port.rdma_device or "", port.rdma_port or 1
        sysfs = ports.get(device, number) if ports else None
        if sysfs is not None and sysfs.link_layer:
            port.link_layer = sysfs.link_layer
        if sysfs is not None and port.link_layer == "InfiniBand":
            port.ib = _port_state(sysfs, keys.get(device, number) if keys else None)
    ib = [p for p in facts.rdma_ports() if p.ib is not None]
    if not ib:
        return
    text, why = await _privileged(ex, SMINFO)
    if text is not None:
        info = parse_sminfo(text)
        if info.reachable and info.sm_lid is not None:
            facts.ib_sm = df.IbSm(lid=info.sm_lid, guid=info.sm_guid or "?", priority=info.priority,
                                  state=info.state_name)  # fmt: skip
        else:
            why = SM_FAILURES.get(info.failure or "", info.error or "no SMInfo in its output")
    facts.ib_sm_error = why
    text, _ = await _privileged(ex, IBLINKINFO)
    if text is not None:
        links = parse_iblinkinfo(text)
        for port in ib:
            up = links.find_ca_uplink(host=facts.hostname, ca=port.rdma_device)
            if up is not None and port.ib is not None and up.peer_type == "Switch":
                port.ib.switch, port.ib.switch_port = up.switch_name, up.switch_port


SM_FAILURES = {
    "no_sm_response": "no subnet manager answered (SubnGet(SMInfo) failed)",
    "no_mad_port": "no umad port to send from (ib_umad not loaded, or no IB port)",
}


async def _privileged(ex: Executor, argv: list[str]) -> tuple[str | None, str | None]:
    """(output to parse, or None; why there is none) of a umad tool run with sudo. A failed run's output is kept:
    infiniband-diags says why on stderr (parse_sminfo reads the failure from it)."""
    try:
        result = await ex.run(argv, sudo=True)
    except SudoRefused:
        return None, "sudo refused"
    if result.exit_status == 127:
        return None, f"{argv[0]} not installed (infiniband-diags)"
    return result.stdout + "\n" + result.stderr, None if result.ok else result.first_error_line()
