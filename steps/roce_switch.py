"""What the NIC runs versus what its switch port advertises (LLDP DCBX TLVs): the two ends of one lossless link.

PFC only works when both ends pause the same priority: a NIC that sends PAUSE for priority 3 to a switch port that
does not honour it keeps losing frames under congestion, and a switch mapping the RoCE DSCP to another priority puts
RoCE in a lossy queue (IEEE 802.1Qaz PFC and APP TLVs; NVIDIA "RoCE Configuration" for ConnectX and Cumulus). The
switch side comes from discovery's LLDP neighbour of the port; back-to-back links have none and get no item.
"""

from __future__ import annotations

from typing import Any

from steps.roce_desired import Desired
from steps.roce_facts import RoceFacts
from wizard.step import CheckItem


def switch_dcb_checks(discovery: dict[str, Any] | None, facts: RoceFacts, want: Desired) -> list[CheckItem]:
    """One item per RoCE port whose switch port advertises its DCB settings over LLDP."""
    neighbours = {
        p.get("netdev"): p.get("lldp") for p in (discovery or {}).get("ports", []) if p.get("netdev") and p.get("lldp")
    }
    items = []
    for port in facts.ports:
        seen = neighbours.get(port.netdev)
        if seen is None or seen.get("pfc_enabled") is None:
            continue
        items.append(_compare(port.netdev, port.pfc, seen, want))
    return items


def _compare(netdev: str, nic_pfc: list[int] | None, seen: dict[str, Any], want: Desired) -> CheckItem:
    where = f"{seen.get('chassis_name') or seen.get('chassis_id') or '?'}/{seen.get('port_id') or '?'}"
    switch_pfc = sorted(seen.get("pfc_enabled") or [])
    nic = sorted(i for i, on in enumerate(nic_pfc or []) if on)
    mapped = {int(k): v for k, v in (seen.get("app_dscp") or {}).items()}
    evidence = (
        f"{netdev}: NIC PFC on {nic or 'no priority'}; {where} advertises PFC on {switch_pfc or 'no priority'}"
        f" (willing {seen.get('pfc_willing')})"
    )
    item = CheckItem(
        id=f"switch_dcb:{netdev}",
        title=f"{netdev} and its switch port pause the same priority",
        status="pass",
        evidence=evidence,
    )
    problems = []
    if want.priority not in switch_pfc:
        problems.append(f"{where} does not pause priority {want.priority}: RoCE is lossy on that link")
    if want.dscp in mapped and mapped[want.dscp] != want.priority:
        problems.append(f"{where} maps DSCP {want.dscp} to priority {mapped[want.dscp]}, not {want.priority}")
    if problems:
        item.status = "fail"
        item.evidence = f"{evidence}; " + "; ".join(problems)
        item.fix = (
            f"on {seen.get('chassis_name') or 'the switch'} port {seen.get('port_id') or '?'}: trust DSCP, map DSCP "
            f"{want.dscp} to priority {want.priority} and enable PFC (no-drop) on priority {want.priority} "
            "(roce-wizard switch-config writes it for NVUE, SONiC and EOS)"
        )
    elif switch_pfc != nic:
        item.status = "warn"
        item.evidence = f"{evidence}; the priorities differ beyond {want.priority} (harmless for RoCE, worth aligning)"
    return item
