"""rails-N labs (wizard/lab/rails_plan.py): 32 hosts per leaf per rail (a DGX SuperPOD scalable unit), 8 spines past
one SU, each rail one subnet over its leaves with an anycast gateway, and answers made for N from the rails-16 file.

Built without SSH where the lab object answers the question; only rails-64 (two SUs) and a few booted hosts.
"""

from __future__ import annotations

import argparse
import ipaddress
from pathlib import Path

import pytest

from tests.lab.test_rails16_sim import NETDEVS, neighbours
from wizard.answers.model import load_answers, parse_answers
from wizard.answers.profiles import demo_answers, profile_arg, rails_hosts
from wizard.lab import Lab, SimHost
from wizard.lab.rails_plan import RailPlan, ecmp_spine, host_names
from wizard.lab.serve import rails16_answers
from wizard.lab.switches import SwitchFabric


@pytest.fixture(autouse=True)
def _state_root(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Generated answers go under the state root: a temporary one, not the user's."""
    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path / "state"))


def switches(lab: Lab) -> SwitchFabric:
    assert lab.fabric.switches is not None
    return lab.fabric.switches


def test_rails_64_is_two_scalable_units_of_32_hosts_with_a_leaf_per_rail_and_8_spines() -> None:
    lab = Lab.for_profile("rails-64", host_names(64))
    sw = switches(lab)
    leaves = [f"leaf-su{su:02d}-r{rail}" for su in (1, 2) for rail in range(8)]
    spines = [f"spine-{j}" for j in range(8)]
    assert sorted(sw.switches) == sorted([*leaves, *spines, "mgmt-sw-0"])
    assert lab.names[0] == "gpu-001" and lab.names[-1] == "gpu-064"
    assert sw.attach[("gpu-032", 3)].switch == "leaf-su01-r3" and sw.attach[("gpu-032", 3)].port == "swp32"
    assert sw.attach[("gpu-033", 3)].switch == "leaf-su02-r3" and sw.attach[("gpu-033", 3)].port == "swp1"
    for leaf in leaves:  # every leaf has one uplink to every spine (ports 65-72), every spine one port per leaf
        assert [sw.links[(leaf, s)].leaf_port.port for s in spines] == [f"swp{65 + j}" for j in range(8)]
    assert all(len(sw.switches[s].uplinks) == len(leaves) for s in spines)
    assert sw.switches["leaf-su02-r3"].gateway == ipaddress.IPv4Interface("10.19.255.254/16")


def test_host_names_take_four_digits_past_999_and_profiles_outside_16_1024_are_refused() -> None:
    assert host_names(1000)[0] == "gpu-0001" and host_names(999)[-1] == "gpu-999"
    assert [rails_hosts(p) for p in ("rails-16", "rails-1024", "rails-8", "rails-1025", "rails-064")] == [
        16, 1024, None, None, None
    ]  # fmt: skip
    assert profile_arg("rails-200") == "rails-200"
    with pytest.raises(argparse.ArgumentTypeError, match="rails-N with N from 16 to 1024"):
        profile_arg("rails-2000")
    with pytest.raises(ValueError, match="unknown lab profile 'rails-2000'"):
        Lab.for_profile("rails-2000", ["a", "b"])


def test_every_command_taking_profile_accepts_rails_n(capsys: pytest.CaptureFixture[str]) -> None:
    from wizard.cli.lab import parser as lab_parser
    from wizard.cli.main import main

    assert lab_parser().parse_args(["serve", "--profile", "rails-1024"]).profile == "rails-1024"
    assert main(["plan", "--demo", "--profile", "rails-7"]) == 2
    assert "unknown profile 'rails-7' (reference, rails-N with N from 16 to 1024, or ib-seed003)" in (
        capsys.readouterr().err
    )


async def booted(lab: Lab, *names: str) -> list[SimHost]:
    lab.time_scale = 0.001
    hosts = [lab.host(n) for n in names]
    for host in hosts:
        await host.start_units()
    return hosts


async def test_lldp_of_every_rail_names_the_hosts_own_su_leaf_and_its_place_in_the_su() -> None:
    lab = Lab.rails(64)
    (host,) = await booted(lab, "gpu-040")
    seen = neighbours((await host.run("lldpctl -f json")).stdout)
    assert seen["eno1"][:2] == ("mgmt-sw-0", "swp40")
    expected = {dev: (f"leaf-su02-r{i}", "swp8") for i, dev in enumerate(NETDEVS)}  # gpu-040: 8th host of SU 02
    assert {dev: seen[dev][:2] for dev in NETDEVS} == expected


def test_a_path_between_leaves_crosses_one_spine_chosen_by_the_ecmp_hash_of_the_two_ports() -> None:
    sw = switches(Lab.rails(64))
    a, b = ("gpu-001", 0), ("gpu-040", 0)
    spine = f"spine-{ecmp_spine(a, b, 8)}"
    path = sw.path(a, b)
    assert [(p.switch, p.port) for p in path] == [
        ("leaf-su01-r0", "swp1"),
        ("leaf-su01-r0", sw.links[("leaf-su01-r0", spine)].leaf_port.port),
        (spine, "swp1"),  # spine port toward leaf 1 (leaves numbered SU by SU, rail by rail)
        ("leaf-su02-r0", sw.links[("leaf-su02-r0", spine)].leaf_port.port),
        (spine, "swp9"),
        ("leaf-su02-r0", "swp8"),
    ]
    assert sw.spine_between(b, a) == spine, "both directions of a pair cross the same spine"
    assert [p.port for p in sw.path(a, ("gpu-032", 0))] == ["swp1", "swp32"], "one leaf: no spine"
    used = {sw.spine_between(a, (f"gpu-{k:03d}", 0)) for k in range(33, 65)}
    assert len(used) >= 6, "the hash spreads one host's 32 cross-SU peers over the spines"


def fabric_netplan(k: int) -> str:
    """Rails 0 and 1 of host k as stage network writes them on a switched fabric: per-rail tables and rules."""
    plan, lines = RailPlan(64), ["network:", "  version: 2", "  ethernets:"]
    for i, dev in enumerate(NETDEVS[:2]):
        table, other = 100 + i, 1 - i
        lines += [f"    {dev}:", "      mtu: 9000", "      addresses:", f"        - {plan.subnet(i)[k]}/16"]
        lines += ["      routes:", f"        - to: {plan.subnet(i)}", f"          table: {table}"]
        lines += [f"        - to: {plan.subnet(other)}", f"          via: {plan.gateway(i).ip}"]
        lines += [f"          table: {table}"]
        lines += ["      routing-policy:", f"        - from: {plan.subnet(i)[k]}", f"          table: {table}"]
        lines += [f"          priority: {table}"]
    return "\n".join(lines) + "\n"


async def test_a_rail_is_one_subnet_across_sus_and_every_leaf_answers_on_its_anycast_gateway() -> None:
    lab = Lab.rails(64)
    a, b = await booted(lab, "gpu-001", "gpu-040")
    for host, k in ((a, 1), (b, 40)):
        host.fs.install("/etc/netplan/60-roce-wizard.yaml", fabric_netplan(k), 0o600)
        assert (await host.run("netplan apply")).status == 0
    same_rail = await a.run("ping -c 1 -M do -s 8972 -I enp24s0np0 10.16.0.40")  # bridged leaf -> spine -> leaf
    assert same_rail.status == 0, same_rail.stdout
    routed = await a.run("ping -c 1 -M do -s 8972 -I 10.16.0.1 10.17.0.40")  # via 10.16.255.254 on leaf-su01-r0
    assert routed.status == 0, routed.stdout
    assert (await b.run("ping -c 1 -I 10.17.0.40 10.16.0.1")).status == 0  # and back via leaf-su02-r1's anycast


def test_rails_n_answers_are_made_from_the_rails16_file_and_sized_for_n() -> None:
    for n in (64, 1024):
        answers = load_answers(demo_answers(f"rails-{n}"))
        assert answers.cluster.name == f"rails-{n}"
        assert [h.name for h in answers.hosts] == host_names(n)
        assert [(r.subnet, r.gateway) for r in answers.network.rails] == [
            (f"10.{16 + i}.0.0/16", f"10.{16 + i}.255.254") for i in range(8)
        ]
        assert answers.hosts[32].address == "10.0.2.1", "SU 02's hosts on 10.0.2.x"
    text = demo_answers("rails-64").read_text()
    assert "# 2 scalable units (SU) of 32 hosts" in text and "all 64 hosts" in text
    assert demo_answers("rails-16").name == "answers.rails-16.yaml", "rails-16's answers are the shipped file"
    small = load_answers(demo_answers("rails-24"))  # one SU: rails-16's addressing
    assert small.network.rails[2].subnet == "10.10.2.0/24" and small.hosts[23].address == "10.0.0.34"


def test_lab_serve_answers_for_rails_n_reach_the_served_hosts_and_keep_the_rails() -> None:
    endpoints = {name: ("127.0.0.1", 30000 + i) for i, name in enumerate(host_names(64))}
    doc = rails16_answers(endpoints, Path("/tmp/k"), Path("/tmp/kh"), "rails-64")
    answers = parse_answers(__import__("yaml").safe_dump(doc), "served")
    assert len(answers.hosts) == 64 and answers.hosts[63].port == 30063
    assert answers.network.rails[7].gateway == "10.23.255.254"


def test_the_demo_lab_of_rails_n_answers_puts_the_management_network_in_one_16() -> None:
    answers = load_answers(demo_answers("rails-64"))
    mgmt = {h.name: h.address for h in answers.hosts}
    lab = Lab.for_profile("rails-64", [h.name for h in answers.hosts], mgmt_addresses=mgmt)
    eno1 = lab.host("gpu-040").netdevs["eno1"].ipv4[0]
    assert str(eno1) == "10.0.2.8/16"


def test_rails16_is_unchanged() -> None:
    lab = Lab.for_profile("rails-16", host_names(16))
    sw = switches(lab)
    assert list(sw.switches) == [
        "spine-0", *[f"leaf-r{i}" for i in range(8)], "mgmt-sw-0"
    ]  # fmt: skip
    leaf = sw.switches["leaf-r3"]
    assert (leaf.mgmt_ip, leaf.chassis_id, leaf.uplinks) == ("10.0.255.4", "1c:34:da:00:04:00", ["swp64"])
    assert leaf.gateway == ipaddress.IPv4Interface("10.10.3.254/24")
    assert (sw.switches["spine-0"].mgmt_ip, sw.switches["spine-0"].uplinks) == (
        "10.0.255.100", [f"swp{i}" for i in range(1, 9)]
    )  # fmt: skip
    crossing = sw.path(("gpu-001", 0), ("gpu-002", 1))
    assert [p.port for p in crossing] == ["swp1", "swp64", "swp1", "swp64", "swp2", "swp2"]
    assert str(lab.host("gpu-016").netdevs["eno1"].ipv4[0]) == "10.0.0.26/24"
