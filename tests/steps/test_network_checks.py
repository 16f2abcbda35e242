"""Network stage verification on a host: MTU, RoCE active MTU, links, GIDs, routes and source rules."""

from __future__ import annotations

from typing import Any

from steps.network.facts import Route, Rule
from steps.network.stage import Network
from tests.steps.facts_builder import answers, view
from tests.steps.test_network import RAILS, configured, two_hosts

STEP = Network()


def checks_after(ans: Any, facts: dict[str, Any], **kw: Any) -> dict[str, Any]:
    facts["server1"]["network"] = configured(ans, facts, **kw)
    return {i.id: i for i in STEP.checks(view(ans, facts), "server1")}


def test_a_configured_host_passes_every_check() -> None:
    ans, facts = two_hosts()
    items = checks_after(ans, facts)
    assert [i for i in items.values() if i.status in ("fail", "warn")] == []
    assert items["roce_mtu:rocep59s0f0"].evidence == "rocep59s0f0 active_mtu 4096 (ibv_devinfo), expected 4096"
    assert items["gid:rocep59s0f0"].status == "pass"


def test_a_port_stuck_at_mtu_1500_fails_naming_the_port_and_the_fix() -> None:
    ans, facts = two_hosts()
    items = checks_after(ans, facts, mtus={"ens1f0np0": 1500})
    assert items["mtu:ens1f0np0"].status == "fail"
    assert "ens1f0np0 MTU is 1500, not 9000" in items["mtu:ens1f0np0"].evidence
    assert "ip -d link show ens1f0np0" in (items["mtu:ens1f0np0"].fix or "")
    assert items["roce_mtu:rocep59s0f0"].status == "fail"


def test_a_dead_link_fails_with_reseat_or_replace_the_cable() -> None:
    ans, facts = two_hosts()
    items = checks_after(ans, facts, down=("ens2f1np1",))
    assert items["link:ens2f1np1"].status == "fail"
    assert items["link:ens2f1np1"].fix and items["link:ens2f1np1"].fix.startswith(
        "reseat or replace the cable on ens2f1np1"
    )


def test_a_default_route_through_a_rail_fails() -> None:
    ans, facts = two_hosts()
    items = checks_after(ans, facts, routes=[Route(dst="default", dev="ens1f0np0", gateway="192.168.11.254")])
    assert items["no_default_via_rails"].status == "fail"


def test_a_missing_roce_v2_gid_for_the_rail_address_fails() -> None:
    ans, facts = two_hosts()
    facts["server1"]["network"] = configured(ans, facts)
    facts["server1"]["network"].rdma[0].gids_v2_ipv4 = []
    items = {i.id: i for i in STEP.checks(view(ans, facts), "server1")}
    assert items["gid:rocep59s0f0"].status == "fail" and "192.168.11.1" in items["gid:rocep59s0f0"].evidence


def test_switched_checks_require_the_source_rule_and_table_route() -> None:
    ans = answers(RAILS + "  fabric: switched\n")
    _, facts = two_hosts()
    rules = [Rule(priority=100, src="192.168.11.1", table="100")]
    routes = [Route(dst="192.168.11.0/24", dev="ens1f0np0", table="100")]
    items = checks_after(ans, facts, rules=rules, routes=routes)
    assert items["policy:ens1f0np0"].status == "pass"
    assert items["policy:ens1f1np1"].status == "fail" and "rule from 192.168.12.1 lookup 101: missing" in (
        items["policy:ens1f1np1"].evidence
    )
