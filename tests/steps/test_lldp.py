"""Specification of LLDP in discovery: neighbours on ports, rail cabling by majority leaf, switch PFC and MTU."""

from __future__ import annotations

from typing import Any

import pytest

from steps.discovery.facts import DiscoveryFacts
from steps.discovery.lldp import LLDPCTL, probe_lldp
from steps.discovery.stage import Discovery
from tests.fixture_files import real_output
from tests.steps.facts_builder import answers, rails_host, view
from wizard.executors.base import CommandResult

HOSTS = tuple(f"gpu-{i:03d}" for i in range(1, 6))
RAILS = "network:\n  fabric: switched\n  rails:\n    - subnet: 172.16.0.0/24\n    - subnet: 172.16.1.0/24\n"


def _checks(hosts: dict[str, DiscoveryFacts], body: str = RAILS) -> dict[str, dict[str, Any]]:
    v = view(answers(body, hosts=tuple(hosts)), {h: {"discovery": f} for h, f in hosts.items()})
    step = Discovery()
    merged: dict[str, dict[str, Any]] = {h: {c.id: c for c in step.checks(v, h)} for h in hosts}
    for host, items in step.cluster_checks(v).items():
        merged[host].update({c.id: c for c in items})
    return merged


def _fabric(**overrides: DiscoveryFacts) -> dict[str, DiscoveryFacts]:
    hosts = {h: rails_host(i + 1) for i, h in enumerate(HOSTS)}
    hosts.update(overrides)
    return hosts


def test_every_rail_on_its_majority_leaf_passes_naming_the_switch_port() -> None:
    checks = _checks(_fabric())
    item = checks["gpu-003"]["lldp_rail:enp2s0np0"]
    assert item.status == "pass"
    assert item.evidence == "gpu-003 enp2s0np0 (rail 1) reaches leaf-r1/swp3; rail 1 is on leaf-r1"


def test_a_host_port_cabled_to_another_rails_leaf_fails_naming_host_port_switch_and_the_right_leaf() -> None:
    checks = _checks(_fabric(**{"gpu-004": rails_host(4, leaves={0: "leaf-r1"})}))
    item = checks["gpu-004"]["lldp_rail:enp1s0np0"]
    assert item.status == "fail"
    assert "gpu-004 enp1s0np0 (rail 0) reaches leaf-r1/swp4" in item.evidence
    assert "rail 0 is on leaf-r0 (4 hosts)" in item.evidence
    assert item.fix == "move the cable of gpu-004 enp1s0np0 to a port of leaf-r0 (leaf-r1 serves rail 1)"
    assert checks["gpu-004"]["lldp_rail:enp2s0np0"].status == "pass"
    assert all(checks[h]["lldp_rail:enp1s0np0"].status == "pass" for h in HOSTS if h != "gpu-004")


def test_two_rails_holding_each_others_cables_are_one_swap() -> None:
    checks = _checks(_fabric(**{"gpu-002": rails_host(2, leaves={0: "leaf-r1", 1: "leaf-r0"})}))
    assert checks["gpu-002"]["lldp_rail:enp1s0np0"].fix == "swap the cables of enp1s0np0 and enp2s0np0 on gpu-002"
    assert checks["gpu-002"]["lldp_rail:enp2s0np0"].fix == "swap the cables of enp2s0np0 and enp1s0np0 on gpu-002"


def test_a_port_without_lldp_neighbour_warns_with_the_reason() -> None:
    quiet = rails_host(5, leaves={1: ""})
    missing = rails_host(1, leaves={0: "", 1: ""}).model_copy(update={"lldp_status": "not installed"})
    checks = _checks(_fabric(**{"gpu-005": quiet, "gpu-001": missing}))
    assert checks["gpu-005"]["lldp_rail:enp2s0np0"].status == "warn"
    assert "the switch port sends no LLDP" in checks["gpu-005"]["lldp_rail:enp2s0np0"].evidence
    assert checks["gpu-001"]["lldp_rail:enp1s0np0"].fix.startswith("install lldpd")


def test_switch_without_pfc_on_the_lossless_priority_fails_with_the_switch_port() -> None:
    checks = _checks(_fabric(**{"gpu-002": rails_host(2, pfc=[])}))
    item = checks["gpu-002"]["switch_pfc:enp1s0np0"]
    assert item.status == "fail"
    assert item.evidence == "enp1s0np0 (rail 0) -> leaf-r0/swp2 advertises PFC on no priority, willing no"
    assert item.fix.startswith("enable PFC on priority 3 (DSCP 26) on leaf-r0/swp2")
    assert checks["gpu-001"]["switch_pfc:enp1s0np0"].status == "pass"


def test_the_switch_pfc_fix_names_the_switch_port_and_points_at_switch_config() -> None:
    item = _checks(_fabric(**{"gpu-002": rails_host(2, pfc=[])}))["gpu-002"]["switch_pfc:enp1s0np0"]
    assert item.status == "fail"
    assert "leaf-r0/swp2" in item.evidence
    assert item.fix and "switch-config" in item.fix and "leaf-r0/swp2" in item.fix


def test_a_switch_mapping_the_roce_dscp_elsewhere_fails() -> None:
    odd = rails_host(2)
    odd.ports[0].lldp.app_dscp = {26: 0}
    checks = _checks(_fabric(**{"gpu-002": odd}))
    item = checks["gpu-002"]["switch_dscp:enp1s0np0"]
    assert item.status == "fail" and "maps DSCP 26 to priority 0" in item.evidence
    assert "map DSCP 26 to priority 3 on leaf-r0/swp2" in item.fix


def test_switch_mtu_below_the_host_mtu_fails() -> None:
    checks = _checks(_fabric(**{"gpu-003": rails_host(3, mtu=1518)}))
    item = checks["gpu-003"]["switch_mtu:enp2s0np0"]
    assert (item.status, item.evidence) == (
        "fail",
        "enp2s0np0 (rail 1) -> leaf-r1/swp3 advertises max frame size 1518 (host MTU 9000)",
    )
    assert checks["gpu-001"]["switch_mtu:enp2s0np0"].status == "pass"


def test_back_to_back_fabrics_get_no_lldp_rail_checks() -> None:
    hosts = {"gpu-001": rails_host(1), "gpu-002": rails_host(2)}
    body = RAILS.replace("fabric: switched", "fabric: back_to_back")
    assert not [c for items in _checks(hosts, body).values() for c in items if c.startswith(("lldp_", "switch_"))]


def test_explicit_rail_netdev_decides_which_port_is_rail_0() -> None:
    body = RAILS.replace("- subnet: 172.16.0.0/24", "- subnet: 172.16.0.0/24\n      netdev: enp2s0np0").replace(
        "- subnet: 172.16.1.0/24", "- subnet: 172.16.1.0/24\n      netdev: enp1s0np0"
    )
    checks = _checks(_fabric(), body)
    assert checks["gpu-001"]["lldp_rail:enp2s0np0"].title == "rail 0 cabling (LLDP)"


class _Ex:
    """An executor answering only lldpctl, as a real host would."""

    def __init__(self, stdout: str = "", stderr: str = "", status: int = 0) -> None:
        self.result = CommandResult(
            command=" ".join(LLDPCTL), exit_status=status, stdout=stdout, stderr=stderr, duration_s=0.1
        )
        self.calls: list[tuple[list[str], bool]] = []

    async def run(self, argv: list[str], *, sudo: bool = False, **_: Any) -> CommandResult:
        self.calls.append((list(argv), sudo))
        return self.result


async def test_probe_runs_one_lldpctl_with_sudo_and_attaches_neighbours_by_netdev() -> None:
    facts = rails_host(1)
    for p in facts.ports:
        p.lldp = None
    text = real_output("lldpctl", "sonic-two-interfaces-list-1.json").replace('"Ethernet124"', '"enp2s0np0"')
    ex = _Ex(stdout=text)
    await probe_lldp(ex, facts)  # type: ignore[arg-type]
    assert ex.calls == [(["lldpctl", "-f", "json"], True)]
    assert facts.lldp_status == "ok"
    assert facts.ports[0].lldp is None and facts.ports[1].lldp.switch_port == "spine1.test/Ethernet1/1"


@pytest.mark.parametrize(
    ("status", "stderr", "expected"),
    [
        (127, "bash: lldpctl: command not found", "not installed"),
        (1, "sudo: lldpctl: command not found", "not installed"),
        (1, "[WARN/control] unable to connect to socket /run/lldpd.socket: No such file or directory", "not running"),
        (1, "[WARN/control] unable to connect to socket /run/lldpd.socket: Permission denied", "refused"),
    ],
)
async def test_probe_without_a_working_lldpd_notes_why_and_never_fails(status: int, stderr: str, expected: str) -> None:
    facts = rails_host(1)
    await probe_lldp(_Ex(stderr=stderr, status=status), facts)  # type: ignore[arg-type]
    assert facts.lldp_status == expected and any(n.startswith("lldpctl") for n in facts.notes)
