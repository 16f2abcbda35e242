"""The consistency lint compares every rail port of every host with the answers and with each other."""

from __future__ import annotations

from tests.steps.facts_builder import REFERENCE_PORTS, answers, port, reference_host, roce_facts
from wizard.validate.hostfacts import HostFacts
from wizard.validate.lint import lint


def configured(name: str, n: int, **port_extra) -> HostFacts:  # type: ignore[no-untyped-def]
    """A host after stages network and roce: rail addresses, MTU 9000, DSCP trust and PFC 3, OFED names."""
    ports = [
        port(pci, netdev, ofed, ipv4=[f"192.168.{11 + i}.{n}/24"], **({"mtu": 9000} | port_extra.get(netdev, {})))
        for i, (pci, netdev, _inbox, ofed) in enumerate(REFERENCE_PORTS)
    ]
    disc = reference_host(name, ofed_names=True, ports=ports, ofed_stack="doca", ofed_version="24.10")
    return HostFacts(name, disc, roce_facts(configured=True, host=name))


def by_id(items):  # type: ignore[no-untyped-def]
    return {i.id: i for i in items}


def test_two_configured_hosts_pass_every_lint_item():
    items = by_id(lint(answers(), {"server1": configured("server1", 1), "server2": configured("server2", 2)}))
    assert {k: v.status for k, v in items.items() if v.status != "pass"} == {}
    assert items["gid"].evidence == "index 3 on 8 ports"


def test_an_mtu_mismatch_names_host_port_and_values():
    hosts = {"server1": configured("server1", 1),
             "server2": configured("server2", 2, ens2f0np0={"mtu": 1500})}  # fmt: skip
    item = by_id(lint(answers(), hosts))["mtu"]
    assert item.status == "fail" and item.evidence == "server2 ens2f0np0 (mlx5_2): MTU 1500, want 9000"


def test_a_down_port_and_a_missing_ipv4_gid_fail():
    hosts = {"server1": configured("server1", 1, ens1f0np0={"rdma_state": "DOWN", "link_detected": False}),
             "server2": configured("server2", 2)}  # fmt: skip
    hosts["server2"].discovery.ports[1].gids = hosts["server2"].discovery.ports[1].gids[:2]
    items = by_id(lint(answers(), hosts))
    assert (
        items["link"].status == "fail"
        and "server1 ens1f0np0 (mlx5_0): RDMA port DOWN, link down" in items["link"].evidence
    )
    assert items["gid"].status == "fail" and "server2 ens1f1np1" in items["gid"].evidence


def test_unconfigured_qos_fails_trust_and_pfc_on_that_host_only():
    hosts = {"server1": configured("server1", 1), "server2": configured("server2", 2)}
    hosts["server2"].roce = roce_facts(configured=False, host="server2")
    items = by_id(lint(answers(), hosts))
    assert items["trust"].status == "fail" and "server1" not in items["trust"].evidence
    assert (
        items["pfc"].status == "fail"
        and "server2 ens1f0np0 (mlx5_0): PFC 00000000 want 00010000" in items["pfc"].evidence
    )


def test_firmware_differing_between_ports_of_one_model_is_flagged_with_the_ports():
    hosts = {"server1": configured("server1", 1, ens2f1np1={"firmware": "14.31.1014"}),
             "server2": configured("server2", 2)}  # fmt: skip
    item = by_id(lint(answers(), hosts))["firmware"]
    assert item.status == "warn" and "fw 14.31.1014 on server1 ens2f1np1" in item.evidence


def test_an_unreachable_host_fails_first_and_is_left_out_of_the_port_checks():
    down = HostFacts("server2", reference_host("server2"), error="server2: connection refused")
    hosts = {"server1": configured("server1", 1), "server2": down}
    items = lint(answers(), hosts)
    assert items[0].id == "hosts" and items[0].status == "fail" and "connection refused" in items[0].evidence


def test_a_port_that_negotiated_below_the_expected_speed_fails_even_if_both_ends_agree():
    hosts = {"server1": configured("server1", 1, ens1f1np1={"speed_mbps": 10000}),
             "server2": configured("server2", 2, ens1f1np1={"speed_mbps": 10000})}  # fmt: skip
    item = by_id(lint(answers("discovery:\n  expect_link_speed_gbps: 25\n"), hosts))["speed"]
    assert item.status == "fail" and "server2 ens1f1np1: 10000 Mb/s, expected 25 Gb/s" in item.evidence
