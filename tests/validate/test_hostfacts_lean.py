"""A validation run keeps every host's facts to the end; of the roce stage's facts it keeps what the tests read, and
the lint finds exactly what it found in the whole facts."""

from __future__ import annotations

import pytest

from steps.discovery.facts import DiscoveryFacts
from steps.roce.facts import RoceFacts
from tests.steps.facts_builder import answers, roce_facts
from tests.validate.test_lint import configured
from wizard.validate.hostfacts import HostFacts, _ports_as_tests_read, _what_tests_read
from wizard.validate.lint import lint

DSCP = 26  # the answers' roce.dscp


def lean(host: HostFacts) -> HostFacts:
    assert host.roce is not None
    raw = host.roce.model_dump(mode="json")
    return HostFacts(host.name, host.discovery, RoceFacts.model_validate(_what_tests_read(raw, DSCP)))


def test_the_stage_files_texts_and_skipped_ports_are_not_kept() -> None:
    raw = roce_facts(configured=True, host="server1").model_dump(mode="json")
    raw |= {"script_text": "#!/bin/sh\n" * 600, "unit_text": "[Unit]\n", "skipped": [{"name": "eno1", "reason": "ssh"}]}
    kept = RoceFacts.model_validate(_what_tests_read(raw, DSCP))
    assert kept.script_text is None and kept.unit_text is None and kept.skipped == []
    assert [(p.netdev, p.trust, p.pfc, p.mtu) for p in kept.ports] == [
        (p["netdev"], p["trust"], p["pfc"], p["mtu"]) for p in raw["ports"]
    ]
    assert all(p.dscp2prio == {DSCP: 3} for p in kept.ports)  # of mlnx_qos' 64 entries, the one the lint reads


@pytest.mark.parametrize(
    "table",
    [
        {d: d >> 3 for d in range(64)},  # mlnx_qos' whole map, DSCP 26 on priority 3
        {**{d: d >> 3 for d in range(64)}, DSCP: 0},  # DSCP 26 sent to priority 0
        {d: d >> 3 for d in range(64) if d != DSCP},  # a map without DSCP 26
        {},  # no map read
    ],
    ids=["right", "wrong-priority", "dscp-missing", "unknown"],
)
def test_the_lint_finds_the_same_in_the_lean_facts(table: dict[int, int]) -> None:
    hosts = {"server1": configured("server1", 1), "server2": configured("server2", 2)}
    assert hosts["server2"].roce is not None
    for port in hosts["server2"].roce.ports:
        port.dscp2prio = dict(table)
    whole = lint(answers(), hosts)
    assert lint(answers(), {name: lean(h) for name, h in hosts.items()}) == whole
    if table and table.get(DSCP) != 3:
        assert any(i.id == "dscp" and i.status != "pass" for i in whole), "the case is one the lint flags"


def test_a_port_keeps_the_gid_the_tests_use_and_the_link_counters_only_when_asked() -> None:
    host = configured("server1", 1)
    raw = host.discovery.model_dump(mode="json")
    raw["ports"][0]["link"] = {"carrier_changes": 4}
    for link_counters in (True, False):
        kept = DiscoveryFacts.model_validate(_ports_as_tests_read(raw, link_counters))
        assert [p.roce_v2_ipv4_gid for p in kept.ports] == [p.roce_v2_ipv4_gid for p in host.discovery.ports]
        assert all(len(p.gids) == 1 for p in kept.ports)  # of fe80 and the IPv4 address, as RoCE v1 and v2
        assert (kept.ports[0].link is not None) is link_counters
    whole = lint(answers(), {"server1": host, "server2": configured("server2", 2)})
    lean_host = HostFacts("server1", DiscoveryFacts.model_validate(_ports_as_tests_read(raw, False)), host.roce)
    assert lint(answers(), {"server1": lean_host, "server2": configured("server2", 2)}) == whole
