"""Renderer choice and boot waits of the network stage's netplan file (pure: plan/checks from synthetic facts).

Rules (sources in steps/network/renderer.py): rails are `optional: true` so systemd-networkd-wait-online never
waits 120 s for a rail whose peer is off (systemd-networkd-wait-online.service(8), netplan-yaml `optional`); the
management interface is never optional; the renderer is the host's own and written per interface, never as a
global key, because netplan's global renderer is last-file-wins for every definition (netplan-yaml `renderer`).
"""

from __future__ import annotations

from typing import Any

import yaml

from steps.network.design import design
from steps.network.facts import NETPLAN_PATH, NetworkFacts
from steps.network.render import netplan_yaml
from steps.network.renderer import choose, waited_for
from tests.steps.facts_builder import view
from tests.steps.test_network import STEP, plan_of, two_hosts

NM_ALL = "network:\n  version: 2\n  renderer: NetworkManager\n"
INSTALLER = "network:\n  version: 2\n  ethernets:\n    eno1:\n      addresses: [10.0.0.11/24]\n"
OLD_WIZARD_FILE = (
    "network:\n  version: 2\n  renderer: networkd\n  ethernets:\n    ens1f0np0:\n      mtu: 9000\n"
    "      addresses:\n        - 192.168.11.1/24\n"
)


def netplan_doc(ans: Any, facts: dict[str, Any]) -> dict[str, Any]:
    return yaml.safe_load(plan_of(ans, facts).changes[0].files[0].content)["network"]


def with_net(facts: dict[str, Any], host: str = "server1", **update: Any) -> dict[str, Any]:
    net = facts[host]["network"]
    facts[host]["network"] = net.model_copy(update=update) if isinstance(net, NetworkFacts) else {**net, **update}
    return facts


def checks(ans: Any, facts: dict[str, Any]) -> dict[str, Any]:
    return {i.id: i for i in STEP.checks(view(ans, facts), "server1")}


def test_every_rail_is_optional_so_a_dark_rail_never_holds_the_boot() -> None:
    doc = netplan_doc(*two_hosts())
    assert {name: conf["optional"] for name, conf in doc["ethernets"].items()} == {
        "ens1f0np0": True,
        "ens1f1np1": True,
        "ens2f0np0": True,
        "ens2f1np1": True,
    }


def test_the_management_interface_is_never_optional_even_when_the_answers_allow_changing_it() -> None:
    ans, facts = two_hosts()
    d = design(ans, "server1", facts["server1"]["discovery"], facts["server1"]["network"])
    d.ssh_interface = d.endpoints[0].netdev  # SSH rides rail 0 (network.allow_management_changes)
    eth = yaml.safe_load(netplan_yaml(d, 9000))["network"]["ethernets"]
    assert "optional" not in eth[d.endpoints[0].netdev]
    assert eth[d.endpoints[1].netdev]["optional"] is True


def test_no_global_renderer_is_written_and_networkd_is_named_per_interface_by_default() -> None:
    doc = netplan_doc(*two_hosts())
    assert "renderer" not in doc
    assert {conf["renderer"] for conf in doc["ethernets"].values()} == {"networkd"}


def test_a_network_manager_host_gets_network_manager_on_its_rails() -> None:
    ans, facts = two_hosts()
    with_net(facts, netplan_others={"/etc/netplan/01-network-manager-all.yaml": NM_ALL}, nm_active=True)
    doc = netplan_doc(ans, facts)
    assert "renderer" not in doc
    assert {conf["renderer"] for conf in doc["ethernets"].values()} == {"NetworkManager"}
    notes = " ".join(plan_of(ans, facts).notes)
    assert "renderer NetworkManager on every rail" in notes
    assert "/etc/netplan/01-network-manager-all.yaml sets renderer: NetworkManager" in notes


def test_network_manager_running_without_a_netplan_renderer_is_followed() -> None:
    assert choose({}, True, False, "1.0-2", False)[0] == "NetworkManager"
    assert choose({}, True, True, "1.0-2", False)[0] == "networkd"
    assert choose({}, False, True, "1.0-2", False)[0] == "networkd"


def test_the_last_netplan_file_with_a_global_renderer_decides() -> None:
    others = {"/etc/netplan/01-network-manager-all.yaml": NM_ALL, "/etc/netplan/50-x.yaml": INSTALLER}
    assert choose(others, False, True, None, False)[0] == "NetworkManager"
    others["/etc/netplan/90-y.yaml"] = "network:\n  renderer: networkd\n"
    assert choose(others, True, False, None, False)[0] == "networkd"


def test_network_manager_with_netplan_older_than_1_2_keeps_rails_with_routing_policy_on_networkd() -> None:
    others = {"/etc/netplan/01-network-manager-all.yaml": NM_ALL}
    renderer, why = choose(others, True, False, "0.106.1-7ubuntu0.22.04.4", True)
    assert renderer == "networkd" and "drops routing-policy" in why and "1.2" in why
    assert choose(others, True, False, "1.2.1-1", True)[0] == "NetworkManager"
    assert choose(others, True, False, "0.106.1-7ubuntu0.22.04.4", False)[0] == "NetworkManager"


def test_wait_online_lists_networkd_definitions_without_optional_only() -> None:
    files = {
        "/etc/netplan/00-installer-config.yaml": INSTALLER
        + "    ens1f0np0:\n      dhcp4: false\n    ens1f1np1:\n      dhcp4: false\n",
        NETPLAN_PATH: "network:\n  ethernets:\n    ens1f0np0:\n      optional: true\n",
    }
    installer = "/etc/netplan/00-installer-config.yaml"
    assert waited_for(files) == {"eno1": installer, "ens1f1np1": installer}
    files["/etc/netplan/01-network-manager-all.yaml"] = NM_ALL
    assert waited_for(files) == {}


def test_a_rail_without_optional_in_an_existing_netplan_file_fails_the_boot_check() -> None:
    ans, facts = two_hosts()
    with_net(facts, netplan_file=OLD_WIZARD_FILE)
    item = checks(ans, facts)["wait_online"]
    assert item.status == "fail"
    assert f"not optional: ens1f0np0 in {NETPLAN_PATH}" in item.evidence and "120 s" in item.evidence
    assert "optional: true" in item.fix


def test_an_unused_dark_port_listed_without_optional_warns_with_the_file_to_edit() -> None:
    two_rails = "network:\n  rails:\n    - subnet: 192.168.11.0/24\n    - subnet: 192.168.12.0/24\n"
    ans, facts = two_hosts(two_rails)
    plan = plan_of(ans, facts)
    ours = plan.changes[0].files[0].content
    installer = INSTALLER + "    ens2f1np1:\n      dhcp4: false\n"
    net = facts["server1"]["network"]
    ifaces = dict(net.interfaces)
    ifaces["ens2f1np1"] = ifaces["ens2f1np1"].model_copy(update={"carrier": False})
    with_net(
        facts,
        netplan_file=ours,
        netplan_others={"/etc/netplan/00-installer-config.yaml": installer},
        interfaces=ifaces,
    )
    item = checks(ans, facts)["wait_online"]
    assert item.status == "warn"
    assert "ens2f1np1 in /etc/netplan/00-installer-config.yaml" in item.evidence
    assert any("ens2f1np1 in /etc/netplan/00-installer-config.yaml" in n for n in plan_of(ans, facts).notes)


def test_the_planned_file_passes_the_boot_check() -> None:
    ans, facts = two_hosts()
    with_net(facts, netplan_file=plan_of(ans, facts).changes[0].files[0].content)
    item = checks(ans, facts)["wait_online"]
    assert item.status == "pass" and "ens1f0np0" not in item.evidence
