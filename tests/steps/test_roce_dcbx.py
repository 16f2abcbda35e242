"""Specification of the DCBX check in roce verify: NIC PFC priorities against the switch port's PFC TLV."""

from __future__ import annotations

from typing import Any

from steps.discovery.facts import DiscoveryFacts, NicPort
from steps.roce.dcbx import dcbx_checks
from steps.roce.stage import Roce
from tests.steps.facts_builder import REFERENCE_PORTS, answers, lldp_neighbor, roce_facts, view


def _discovery(pfc: dict[str, list[int]] | None = None, willing: set[str] | None = None) -> DiscoveryFacts:
    """The reference server's four ports, each on leaf-r<i> swp1 advertising PFC on priority 3 unless ``pfc``."""
    ports = []
    for i, (pci, netdev, inbox, _ofed) in enumerate(REFERENCE_PORTS):
        n = lldp_neighbor(netdev, f"leaf-r{i}", "swp1", pfc=(pfc or {}).get(netdev))
        if netdev in (willing or set()):
            n = n.model_copy(update={"pfc_willing": True})
        ports.append(NicPort(pci=pci, model="ConnectX-4 Lx", netdev=netdev, rdma_device=inbox, lldp=n))
    return DiscoveryFacts(ports=ports, lldp_status="ok")


def _by_id(items: list[Any]) -> dict[str, Any]:
    return {i.id: i for i in items}


def test_nic_and_switch_pausing_the_same_priority_pass() -> None:
    items = _by_id(dcbx_checks("server1", roce_facts(configured=True), _discovery()))
    assert [items[f"dcbx_pfc:{p[1]}"].status for p in REFERENCE_PORTS] == ["pass"] * 4
    assert items["dcbx_pfc:ens1f0np0"].evidence == (
        "server1 ens1f0np0 (leaf-r0 swp1): NIC PFC on priorities {3}, switch advertises {3}"
    )
    assert not any(i.startswith("dcbx_willing:") for i in items)


def test_nic_pfc_priorities_differing_from_the_switch_fail_naming_host_port_switch_port_and_both_sets() -> None:
    items = _by_id(dcbx_checks("server1", roce_facts(configured=True), _discovery(pfc={"ens2f0np0": [3, 4]})))
    item = items["dcbx_pfc:ens2f0np0"]
    assert item.status == "fail"
    assert item.evidence == "server1 ens2f0np0 (leaf-r2 swp1): NIC PFC on priorities {3}, switch advertises {3,4}"
    assert "roce-wizard switch-config" in item.fix and "--from roce" in item.fix
    assert items["dcbx_pfc:ens1f0np0"].status == "pass"


def test_a_nic_without_pfc_under_a_lossless_switch_port_fails_too() -> None:
    items = _by_id(dcbx_checks("server1", roce_facts(configured=False), _discovery()))
    assert items["dcbx_pfc:ens1f1np1"].status == "fail"
    assert "NIC PFC on priorities {}, switch advertises {3}" in items["dcbx_pfc:ens1f1np1"].evidence


def test_a_willing_switch_port_warns_because_the_switch_should_be_the_authority() -> None:
    items = _by_id(dcbx_checks("server1", roce_facts(configured=True), _discovery(willing={"ens1f1np1"})))
    item = items["dcbx_willing:ens1f1np1"]
    assert item.status == "warn"
    assert item.evidence.startswith("server1 ens1f1np1 (leaf-r1 swp1): the switch advertises willing=1")
    assert items["dcbx_pfc:ens1f1np1"].status == "pass"
    assert "dcbx_willing:ens1f0np0" not in items


def test_ports_without_a_switch_pfc_tlv_or_without_discovery_get_no_dcbx_item() -> None:
    silent = _discovery()
    silent.ports[0].lldp = None
    items = _by_id(dcbx_checks("server1", roce_facts(configured=True), silent))
    assert "dcbx_pfc:ens1f0np0" not in items and "dcbx_pfc:ens1f1np1" in items
    assert dcbx_checks("server1", roce_facts(configured=True), None) == []


def test_roce_verify_runs_the_dcbx_comparison_from_the_discovery_facts() -> None:
    v = view(
        answers(),
        {"server1": {"roce": roce_facts(configured=True), "discovery": _discovery(pfc={"ens1f0np0": [4]})}},
    )
    items = _by_id(Roce().checks(v, "server1"))
    assert items["dcbx_pfc:ens1f0np0"].status == "fail"
    assert items["dcbx_pfc:ens1f1np1"].status == "pass"
