"""Rail cabling on a fabric of several scalable units (DGX SuperPOD: 32 hosts per SU, one leaf per rail per SU):
a rail has one leaf per SU, so rail i of a host belongs on the rail-i leaf its SU peers reach, not on the one most
hosts reach (steps/discovery/rail_leaves.py). The lab's rails-N profiles cable hosts this way."""

from __future__ import annotations

from tests.steps.facts_builder import rails_host
from tests.steps.test_lldp import _checks
from wizard.lab.rails_plan import RailPlan

RAILS = 4
BODY = "network:\n  fabric: switched\n  rails:\n" + "".join(f"    - subnet: 172.16.{i}.0/24\n" for i in range(RAILS))


def su_fabric(n: int, **leaves: dict[int, str]) -> dict:
    """``n`` hosts with 4 rails, host k on leaf-suNN-r<i> of its SU as rails-N cables them (``leaves`` re-cables)."""
    plan = RailPlan(n, RAILS)
    hosts = {}
    for k in range(1, n + 1):
        name = f"gpu-{k:03d}"
        own = {i: plan.leaf_name(plan.su_of(k - 1), i) for i in range(RAILS)}
        hosts[name] = rails_host(k, leaves={**own, **leaves.get(name.replace("-", "_"), {})}, nports=RAILS)
    return hosts


def test_every_su_leaf_passes_even_when_the_sus_differ_in_size() -> None:
    checks = _checks(su_fabric(48), BODY)  # SU 01: 32 hosts, SU 02: 16 (a per-rail majority would fail all of SU 02)
    item = checks["gpu-040"]["lldp_rail:enp1s0np0"]
    assert (item.status, item.evidence) == (
        "pass",
        "gpu-040 enp1s0np0 (rail 0) reaches leaf-su02-r0/swp40; rail 0 is on leaf-su02-r0",
    )
    assert all(c.status == "pass" for host in checks.values() for k, c in host.items() if k.startswith("lldp_rail"))


def test_a_port_on_another_rails_leaf_of_its_su_fails_naming_its_sus_leaf() -> None:
    checks = _checks(su_fabric(64, gpu_040={0: "leaf-su02-r1"}), BODY)
    item = checks["gpu-040"]["lldp_rail:enp1s0np0"]
    assert item.status == "fail"
    assert "rail 0 is on leaf-su02-r0" in item.evidence
    assert item.fix == "move the cable of gpu-040 enp1s0np0 to a port of leaf-su02-r0 (leaf-su02-r1 serves rail 1)"
    assert checks["gpu-040"]["lldp_rail:enp2s0np0"].status == "pass"


def test_a_port_on_the_right_rail_of_another_su_fails_too() -> None:
    checks = _checks(su_fabric(64, gpu_005={1: "leaf-su02-r1"}), BODY)
    item = checks["gpu-005"]["lldp_rail:enp2s0np0"]
    assert item.status == "fail" and "rail 1 is on leaf-su01-r1" in item.evidence
    assert item.fix == "move the cable of gpu-005 enp2s0np0 to a port of leaf-su01-r1 (leaf-su02-r1 serves rail 1)"
    assert all(checks["gpu-005"][f"lldp_rail:enp{i + 1}s0np0"].status == "pass" for i in (0, 2, 3))
