"""DCBX in roce verify: the PFC priorities the NIC runs against those its switch port advertises (LLDP PFC TLV).

IEEE 802.1Qaz (DCBX) has each end send its PFC configuration in the PFC TLV with a *willing* bit: a willing end
adopts its peer's configuration. On a RoCE fabric the operator sets PFC on both ends (the host with mlnx_qos/dcb,
the switch in its QoS config) and the switch is the authority: NVIDIA's RoCE guides run the host with lldpad off
(the NIC keeps what mlnx_qos set) and Cumulus advertises willing 0. PFC only protects a priority when both ends
pause on it: a priority the NIC pauses but the switch does not (or the reverse) is lossy under congestion.
"""

from __future__ import annotations

from steps.discovery.facts import DiscoveryFacts
from steps.roce.facts import RoceFacts
from wizard.engine.step import CheckItem

RERUN = "re-run roce-wizard --from roce"


def _prios(values: set[int]) -> str:
    return "{" + ",".join(map(str, sorted(values))) + "}"


def dcbx_checks(host: str, roce: RoceFacts, discovery: DiscoveryFacts | None) -> list[CheckItem]:
    """Per RoCE port with both sides known: NIC PFC priorities == switch PFC priorities; switch not willing."""
    if discovery is None:
        return []
    items: list[CheckItem] = []
    for port in roce.ports:
        found = discovery.port_by_netdev(port.netdev)
        n = found.lldp if found is not None else None
        if n is None or n.pfc_enabled is None or port.pfc is None:
            continue  # no switch PFC TLV (discovery warns) or NIC PFC unread (the port's PFC check says why)
        nic = {i for i, on in enumerate(port.pfc) if on}
        switch = set(n.pfc_enabled)
        where = f"{host} {port.netdev} ({n.chassis_name or n.chassis_id or '?'} {n.port_id or '?'})"
        same = nic == switch
        items.append(
            CheckItem(
                id=f"dcbx_pfc:{port.netdev}",
                title=f"{port.netdev} PFC matches its switch port",
                status="pass" if same else "fail",
                evidence=f"{where}: NIC PFC on priorities {_prios(nic)}, switch advertises {_prios(switch)}",
                fix=None
                if same
                else f"set the same lossless priorities on both ends: on the host {RERUN}; on the switch port "
                "see `roce-wizard switch-config`; a priority paused on one end only drops under congestion",
            )
        )
        if n.pfc_willing:
            items.append(
                CheckItem(
                    id=f"dcbx_willing:{port.netdev}",
                    title=f"{port.netdev} switch port is the PFC authority",
                    status="warn",
                    evidence=f"{where}: the switch advertises willing=1: it would take its PFC settings from the host",
                    fix="configure PFC on the switch port and turn its DCBX willing bit off (the switch should be "
                    "the authority; the host keeps lldpad off)",
                )
            )
    return items
