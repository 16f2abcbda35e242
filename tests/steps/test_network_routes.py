"""The network stage's per-rail route check: what it asks each host, how it reads `ip -j route get`, what it says.

Outputs come from the rails-16 lab hosts (tests/lab/test_policy_routing_sim.py models them on iproute2 5.15 and the
kernel's rule lookup); the parser also reads the text form.
"""

from __future__ import annotations

import ipaddress
import json
from dataclasses import replace
from pathlib import Path

import pytest

from steps.network.design import Design, Endpoint
from steps.network.routes import ARGV, batch_text, route_check, wanted
from tests.lab.test_policy_routing_sim import fabric
from wizard.answers.model import parse_answers
from wizard.parsers import TOOLS, ParseError, parse
from wizard.parsers.iproute import parse_ip_route_get

NETDEVS = ["enp24s0np0", "enp64s0np0"]


def design(k: int, *, gateways: bool = True) -> Design:
    endpoints = [
        Endpoint(
            key=f"rail{i}",
            label=f"rail {i}",
            netdev=NETDEVS[i],
            subnet=ipaddress.ip_network(f"10.10.{i}.0/24"),
            address=f"10.10.{i}.{k}/24",
            gateway=f"10.10.{i}.254" if gateways else None,
            table=100 + i,
        )
        for i in range(2)
    ]
    return Design(fabric="switched", endpoints=endpoints)


def test_each_rail_address_asks_for_its_rail_on_the_next_host_and_one_address_of_each_other_rail() -> None:
    designs = {f"gpu-00{k}": design(k) for k in (1, 2, 3)}
    queries = wanted(designs, list(designs), "gpu-002")
    assert [(q["src"], q["dst"], q["dev"], q["via"]) for q in queries] == [
        ("10.10.0.2", "10.10.0.3", "enp24s0np0", None),  # gpu-001 is on the same subnet: the same rule and route
        ("10.10.0.2", "10.10.1.3", "enp24s0np0", "10.10.0.254"),
        ("10.10.1.2", "10.10.1.3", "enp64s0np0", None),
        ("10.10.1.2", "10.10.0.3", "enp64s0np0", "10.10.1.254"),
    ]
    assert batch_text(queries[:2]) == "route get 10.10.0.3 from 10.10.0.2\nroute get 10.10.1.3 from 10.10.0.2\n"


def test_a_rail_split_into_subnets_asks_one_host_of_each_and_a_thousand_hosts_ask_64_not_8000() -> None:
    split = {f"gpu-00{k}": design(k) for k in (1, 2, 3)}
    moved = split["gpu-003"].endpoints[0]
    split["gpu-003"].endpoints[0] = replace(moved, subnet=ipaddress.ip_network("10.11.0.0/24"), address="10.11.0.3/24")
    rail0 = [q["dst"] for q in wanted(split, list(split), "gpu-001") if q["dev"] == "enp24s0np0" and not q["via"]]
    assert rail0 == ["10.10.0.2", "10.11.0.3"]
    fleet = {f"gpu-{k:04d}": design(k % 250 + 1) for k in range(1, 1025)}
    assert len(wanted(fleet, list(fleet), "gpu-0001")) == 4  # 2 rails x (1 same-rail + 1 other rail)


def test_rails_without_a_table_or_gateway_ask_nothing_across_rails() -> None:
    designs = {f"gpu-00{k}": design(k, gateways=False) for k in (1, 2)}
    assert all(q["via"] is None for q in wanted(designs, list(designs), "gpu-001"))
    back_to_back = {h: Design(fabric="back_to_back", endpoints=[]) for h in designs}
    assert wanted(back_to_back, list(back_to_back), "gpu-001") == []


async def lab_facts(without_policy: tuple[str, ...] = ()) -> dict:
    """The check's facts for gpu-001 of a three-host rails lab, from a real batch run on the simulated host."""
    lab = await fabric(without_policy=without_policy)
    designs = {name: design(k) for k, name in enumerate(lab.names, start=1)}
    queries = wanted(designs, lab.names, "gpu-001")
    r = await lab.host("gpu-001").run(" ".join(ARGV), stdin=batch_text(queries))
    return {"queries": queries, "stdout": r.stdout, "stderr": r.stderr}


async def test_the_check_passes_when_every_route_leaves_by_its_own_rail() -> None:
    (item,) = route_check("gpu-001", await lab_facts())
    assert item.status == "pass"
    assert item.evidence == "gpu-001: 4 routes from 2 rail addresses each leave by their own rail"


async def test_without_the_rules_the_check_names_host_source_destination_and_both_ports() -> None:
    (item,) = route_check("gpu-001", await lab_facts(without_policy=("gpu-001",)))
    assert item.status == "fail"
    assert (
        "gpu-001: from 10.10.0.1 to 10.10.1.2 (rail 1) would leave by enp64s0np0 (table main), "
        "not by enp24s0np0 via 10.10.0.254" in item.evidence
    )
    assert "from 10.10.1.1 to 10.10.0.2 (rail 0) would leave by enp24s0np0 (table main)" in item.evidence
    assert "gpu-001" in (item.fix or "") and "routing-policy" in (item.fix or "")


def test_a_refused_lookup_is_named_with_the_kernels_message() -> None:
    queries = [{"src": "10.10.0.1", "dst": "10.10.0.2", "dev": "enp24s0np0", "via": None, "peer": "gpu-002"}]
    facts = {"queries": queries, "stdout": "", "stderr": "RTNETLINK answers: Invalid argument\nCommand failed -:1\n"}
    (item,) = route_check("gpu-001", facts)
    assert item.status == "fail"
    assert item.evidence == (
        "gpu-001: from 10.10.0.1 to 10.10.0.2 (gpu-002): no route (RTNETLINK answers: Invalid argument); "
        "it must leave by enp24s0np0"
    )


def test_no_queries_no_item_and_an_unreadable_answer_fails() -> None:
    assert route_check("gpu-001", None) == [] and route_check("gpu-001", {"queries": []}) == []
    facts = {"queries": [{"src": "a", "dst": "b", "dev": "x", "via": None, "peer": "p"}], "stdout": "", "stderr": ""}
    (item,) = route_check("gpu-001", facts)
    assert item.status == "fail" and "empty input" in item.evidence


def test_the_parser_is_registered_and_reads_json_batches_text_and_prompts() -> None:
    assert TOOLS["ip_route_get"] == "wizard.parsers.iproute:parse_ip_route_get"
    doc = {"dst": "10.10.1.2", "from": "10.10.0.1", "gateway": "10.10.0.254", "dev": "enp24s0np0", "table": "100"}
    got = parse("ip_route_get", f"$ ip -force -j -batch -\r\n{json.dumps([doc])}\r\n")
    assert got.routes[0].model_dump() == {
        "dst": "10.10.1.2",
        "dev": "enp24s0np0",
        "src": "10.10.0.1",
        "gateway": "10.10.0.254",
        "table": "100",
        "prefsrc": None,
        "type": "unicast",
    }
    text = parse_ip_route_get(
        "root@gpu-001:~# ip route get 10.10.2.3\n10.10.2.3 dev enp79s0np0 src 10.10.2.1 uid 0 \n    cache \n"
    )
    assert (text.routes[0].dev, text.routes[0].prefsrc, text.routes[0].table) == ("enp79s0np0", "10.10.2.1", "main")
    local = parse_ip_route_get("local 10.10.1.1 dev lo table local src 10.10.1.1 uid 0 \n    cache <local> ")
    assert (local.routes[0].type, local.routes[0].table) == ("local", "local")


NCCL_LINE = "gpu2018:59523:59996 [0] init.cc:795 NCCL WARN Duplicate GPU detected : rank 4 and rank 6 both on CUDA dev"


# the last one was found by tests/fuzz: "dev" as its last word, with no device after it, once raised KeyError
@pytest.mark.parametrize(
    "text", ["", "   \n", "Kernel IP routing table\nDestination Gateway Genmask\n", "[{bad json", NCCL_LINE]
)
def test_the_parser_refuses_what_is_not_ip_route_get(text: str) -> None:
    with pytest.raises(ParseError):
        parse_ip_route_get(text)


def test_the_parser_refuses_another_tools_real_output() -> None:
    fixture = Path(__file__).resolve().parents[1] / "fixtures" / "real-outputs" / "ibdev2netdev"
    samples = sorted(fixture.glob("*.txt"))
    assert samples
    for sample in samples:
        with pytest.raises(ParseError):
            parse_ip_route_get(sample.read_text())


@pytest.mark.slow  # stages discovery and network on three rails-16 hosts over SSH: about 10 s
async def test_the_network_stage_verifies_every_rail_route_on_the_switched_demo_fabric(tmp_path: Path) -> None:
    import yaml

    from steps import all_steps
    from steps.network.stage import Network
    from wizard.answers.profiles import demo_answers
    from wizard.engine.events import EventBus
    from wizard.engine.runner import RunOptions
    from wizard.engine.session import open_session, production_targets
    from wizard.lab import Lab

    doc = yaml.safe_load(demo_answers("rails-16").read_text())
    doc["hosts"] = doc["hosts"][:3]
    answers = parse_answers(yaml.safe_dump(doc))
    lab = Lab.rails16([h.name for h in answers.hosts], mgmt_addresses={h.name: h.address for h in answers.hosts})
    lab.time_scale = 0.01
    await lab.start()
    targets = production_targets(answers, None)
    for name, target in targets.items():
        target.address, target.port = lab.endpoint(name)
        target.identity_file, target.known_hosts = str(lab.client_key_path), str(lab.known_hosts_path)
    session = open_session(answers, all_steps(), targets, tmp_path, EventBus(), simulated=True, password=None)
    try:
        options = RunOptions(stages=["discovery", "network"], allow_disruptive=True, demo=True)
        assert await session.runner.run(options) == 0
        checks = Network().cluster_checks(session.runner.view())
    finally:
        await session.close()
        await lab.stop()
    for host in ("gpu-001", "gpu-002", "gpu-003"):
        (item,) = [i for i in checks[host] if i.id == "policy_routes"]
        # 8 rails x (1 same-rail peer, the others on its subnet take the same route + 7 other rails)
        wanted_text = f"{host}: 64 routes from 8 rail addresses each leave by their own rail"
        assert (item.status, item.evidence) == ("pass", wanted_text)
