"""Pod address pools: every node gets a block of its own with addresses no host or gateway has, as nv-ipam of
network-operator v25.7.0 hands the blocks out; a rail subnet too small for that fails the export."""

from __future__ import annotations

import ipaddress
from typing import Any

import yaml

from tests.handoff.k8s.conftest import schema_errors
from wizard.answers.model import Answers
from wizard.cli.export_k8s import main as k8s_cmd
from wizard.export.k8s_checks import check
from wizard.export.k8s_inputs import HostRail, Rail, gather
from wizard.export.k8s_pools import needed, pool_plan, refusal
from wizard.export.k8s_write import build


def _nv_ipam_blocks(spec: dict[str, Any], nodes: int) -> list[list[Any]]:
    """The addresses nv-ipam (tag network-operator-v25.7.0) can give each of ``nodes`` nodes from an IPPool spec:
    consecutive blocks of perNodeBlockSize from the subnet's first host address, none reaching the broadcast
    address; inside a block the node skips the exclusions and the gateway. Written from the allocator's source,
    independently of the export's own plan."""
    net = ipaddress.ip_network(spec["subnet"])
    size = spec["perNodeBlockSize"]
    excluded = set()
    for r in spec.get("exclusions", []):
        start, end = ipaddress.ip_address(r["startIP"]), ipaddress.ip_address(r["endIP"])
        excluded.update(ipaddress.ip_address(i) for i in range(int(start), int(end) + 1))
    if spec.get("gateway"):
        excluded.add(ipaddress.ip_address(spec["gateway"]))
    blocks = []
    for n in range(nodes):
        first = net.network_address + 1 + n * size
        last = first + size - 1
        assert last in net and last != net.broadcast_address, f"node {n}: no free range left in {net}"
        blocks.append([first + i for i in range(size) if first + i not in excluded])
    return blocks


def test_rails16_gives_every_node_its_own_pod_addresses(rails16_answers, rails16_facts):
    inputs = gather(rails16_answers, rails16_facts)
    assert check(inputs).refusals == []
    pools = [o for m in build(inputs) for o in m.objects if o["kind"] == "IPPool"]
    assert [p["metadata"]["name"] for p in pools] == [f"rail{i}" for i in range(8)]
    for pool, rail in zip(pools, inputs.rails, strict=True):
        assert schema_errors(pool) == []
        assert ipaddress.ip_network(pool["spec"]["subnet"]).subnet_of(rail.subnet)
        hosts = {ipaddress.ip_interface(e.address).ip for e in rail.ends}
        assert len(hosts) == 16
        gateway = ipaddress.ip_address(rail.gateway)
        blocks = _nv_ipam_blocks(pool["spec"], len(inputs.hosts))
        seen: set[Any] = set()
        for block in blocks:
            assert block, f"{rail.name}: a node without pod addresses"
            assert not set(block) & hosts and gateway not in block
            assert not set(block) & seen  # no two nodes share an address
            seen.update(block)


def test_rails16_pool_uses_the_part_of_the_rail_clear_of_the_hosts(rails16_answers, rails16_facts):
    inputs = gather(rails16_answers, rails16_facts)
    plan = pool_plan(inputs.rails[0], 16)
    assert str(plan.subnet) == "10.10.0.128/25" and plan.block == 7 and plan.free_per_node == [7] * 16
    assert plan.gateway == "10.10.0.254" and plan.exclusions == [("10.10.0.254", "10.10.0.254")]
    assert any(w.startswith("rail0: pods get addresses in 10.10.0.128/25") for w in check(inputs).warnings)


def test_a_rail_subnet_too_small_fails_the_export_with_one_line(rails16_answers, rails16_facts, tmp_path, capsys):
    from wizard.engine.state import StateStore

    data = rails16_answers.model_dump(mode="json", exclude_none=True)
    for n, rail in enumerate(data["network"]["rails"]):
        rail["subnet"], rail["gateway"] = f"10.10.{n}.0/27", f"10.10.{n}.30"
    small = Answers.model_validate(data)
    answers_file = tmp_path / "answers.yaml"
    answers_file.write_text(yaml.safe_dump(data))
    store = StateStore(tmp_path / "state")
    for host, host_facts in rails16_facts.items():
        store.save_facts(host, host_facts)
    inputs = gather(small, rails16_facts)
    assert refusal(inputs.rails[0], 16) == (
        "rail0: subnet 10.10.0.0/27 (32 addresses) cannot give each of 16 nodes a per-node block of pod addresses "
        "outside the 16 hosts' own and the gateway: it would need 64 addresses (a /26); give the rail a larger subnet"
    )
    out = tmp_path / "k8s"
    argv = ["--answers", str(answers_file), "--state-dir", str(tmp_path / "state"), "-o", str(out)]
    assert k8s_cmd(argv) == 1
    assert not out.exists()
    refused = [line for line in capsys.readouterr().err.splitlines() if "refused" in line]
    assert len(refused) == 8
    assert refused[0].startswith("roce-wizard: export k8s refused: rail0: subnet 10.10.0.0/27 (32 addresses)")


def test_a_subnet_that_fits_whole_keeps_its_blocks():
    ends = [HostRail(f"h{i}", "eth0", f"10.10.0.{i}/24", "mlx5_0", "101d") for i in (1, 2)]
    plan = pool_plan(Rail(0, "rail0", ipaddress.ip_network("10.10.0.0/24"), None, ends), 2)
    assert str(plan.subnet) == "10.10.0.0/24" and plan.block == 127 and plan.free_per_node == [125, 127]


def test_hosts_filling_the_first_blocks_move_the_pool_and_a_tiny_subnet_says_what_it_needs():
    ends = [HostRail(f"h{i}", "eth0", f"10.10.0.{i}/24", "mlx5_0", "101d") for i in range(1, 17)]
    rail = Rail(0, "rail0", ipaddress.ip_network("10.10.0.0/24"), None, ends)
    plan = pool_plan(rail, 16)
    assert str(plan.subnet) == "10.10.0.128/25" and plan.free_per_node == [7] * 16 and plan.exclusions == []
    tiny_ends = [HostRail(f"h{i}", "eth0", f"10.10.0.{i}/28", "mlx5_0", "101d") for i in range(1, 14)]
    tiny = Rail(0, "rail0", ipaddress.ip_network("10.10.0.0/28"), None, tiny_ends)
    assert not pool_plan(tiny, 16).fits
    assert str(needed(tiny, 16)) == "10.10.0.0/26"  # a /27 still hands the first 13 blocks of 1 to the hosts
