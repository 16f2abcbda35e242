"""Both ends of a lossless link: the NIC's PFC (mlnx_qos) against what its switch port advertises over LLDP."""

from __future__ import annotations

from steps.roce import Roce
from tests.steps.facts_builder import answers, lldp_neighbor, rails_host, roce_facts, view

STEP = Roce()


def configured_roce(disc: object) -> object:
    """Configured QoS facts (PFC on 3) for the host's rail ports."""
    roce = roce_facts(configured=True, host="gpu-001")
    roce.ports = roce.ports[: len(disc.ports)]
    for port, nic in zip(roce.ports, disc.ports, strict=True):
        port.netdev, port.pci = nic.netdev, nic.pci
    return roce


def checks_of(disc: object) -> dict[str, object]:
    v = view(answers(hosts=("gpu-001",)), {"gpu-001": {"discovery": disc, "roce": configured_roce(disc)}})
    return {c.id: c for c in STEP.checks(v, "gpu-001") if c.id.startswith("switch_dcb:")}


def items_for(**neighbor: object) -> dict[str, object]:
    return checks_of(rails_host(1, nports=2, **neighbor))


def test_a_switch_port_pausing_the_lossless_priority_passes() -> None:
    items = items_for()
    assert items and all(c.status == "pass" for c in items.values()), items
    assert "leaf-r0/swp1 advertises PFC on [3]" in items["switch_dcb:enp1s0np0"].evidence


def test_a_switch_port_without_pfc_on_the_lossless_priority_fails_naming_switch_and_port() -> None:
    item = items_for(pfc=[])["switch_dcb:enp1s0np0"]
    assert item.status == "fail"
    assert "leaf-r0/swp1 does not pause priority 3" in item.evidence
    assert item.fix and "switch-config" in item.fix and "port swp1" in item.fix


def test_a_switch_mapping_the_roce_dscp_elsewhere_fails() -> None:
    neighbor = lldp_neighbor("enp1s0np0", "leaf-r0", "swp1")
    neighbor.app_dscp = {26: 0}
    disc = rails_host(1, nports=1)
    disc.ports[0].lldp = neighbor
    item = checks_of(disc)["switch_dcb:enp1s0np0"]
    assert item.status == "fail" and "maps DSCP 26 to priority 0" in item.evidence


def test_back_to_back_ports_without_an_lldp_neighbour_get_no_switch_item() -> None:
    assert checks_of(rails_host(1, nports=2, leaves={0: "", 1: ""})) == {}
