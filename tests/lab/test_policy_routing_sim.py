"""Per-rail policy routing on the rails-16 fabric: `ip route get ... from ...`, pings through the spine, RoCE QPs.

Modelled on: the kernel's rule and table lookup (net/ipv4/fib_rules.c, fib_trie.c, route.c rt_fill_info), iproute2
5.15 ip/iproute.c print_route and lib/utils.c do_batch (formats), rp_filter (Documentation/networking/
ip-sysctl.rst: the larger of conf/all and conf/<dev>), RoCE address resolution bound to the GID's netdev
(drivers/infiniband/core/addr.c) and perftest's messages (write_bw.c, perftest_resources.c).
"""

from __future__ import annotations

import asyncio
import json

from wizard.lab import Lab, packages, parse_fault
from wizard.lab.host import SimHost

NAMES = ["gpu-001", "gpu-002", "gpu-003"]
NETDEVS = ["enp24s0np0", "enp64s0np0", "enp79s0np0"]
DEVICES = ["rocep24s0f0", "rocep64s0f0", "rocep79s0f0"]


def netplan(k: int, *, policy: bool = True) -> str:
    """Rails 0..2 as the network stage writes them on a switched fabric (steps/network/render.py _policy)."""
    lines = ["network:", "  version: 2", "  ethernets:"]
    for i, dev in enumerate(NETDEVS):
        lines += [f"    {dev}:", "      mtu: 9000", "      addresses:", f"        - 10.10.{i}.{k}/24"]
        if not policy:
            continue
        table = 100 + i
        lines += ["      routes:", f"        - to: 10.10.{i}.0/24", f"          table: {table}"]
        for j in range(len(NETDEVS)):
            if j != i:
                lines += [f"        - to: 10.10.{j}.0/24", f"          via: 10.10.{i}.254", f"          table: {table}"]
        lines += ["      routing-policy:", f"        - from: 10.10.{i}.{k}", f"          table: {table}"]
        lines += [f"          priority: {table}"]
    return "\n".join(lines) + "\n"


async def fabric(*faults: str, without_policy: tuple[str, ...] = (), doca: bool = False) -> Lab:
    lab = Lab.rails16(NAMES, faults=[parse_fault(f) for f in faults])
    lab.time_scale = 0.001
    for k, host in enumerate(lab.hosts.values(), start=1):
        await host.start_units()
        if doca:
            for pkg in packages.DOCA:
                packages.install_files(host, pkg)
        host.fs.install("/etc/netplan/60-roce-wizard.yaml", netplan(k, policy=host.name not in without_policy), 0o600)
        r = await host.run("netplan apply")
        assert r.status == 0, r.stderr
    return lab


async def test_route_get_from_a_rail_address_uses_that_rails_table_in_iproute2s_text_form() -> None:
    host = (await fabric()).host("gpu-001")
    same = await host.run("ip route get 10.10.1.2 from 10.10.1.1")
    assert same.stdout == "10.10.1.2 from 10.10.1.1 dev enp64s0np0 table 101 uid 0 \n    cache \n"
    other = await host.run("ip route get 10.10.2.3 from 10.10.1.1")
    assert other.stdout == "10.10.2.3 from 10.10.1.1 via 10.10.1.254 dev enp64s0np0 table 101 uid 0 \n    cache \n"


async def test_route_get_json_has_from_and_table_and_no_prefsrc_when_the_source_is_given() -> None:
    host = (await fabric()).host("gpu-001")
    r = await host.run("ip -j route get 10.10.2.3 from 10.10.1.1")
    assert json.loads(r.stdout) == [
        {
            "dst": "10.10.2.3",
            "from": "10.10.1.1",
            "gateway": "10.10.1.254",
            "dev": "enp64s0np0",
            "table": "101",
            "flags": [],
            "uid": 0,
            "cache": [],
        }
    ]


async def test_without_a_source_the_main_table_answers_and_an_own_address_is_local() -> None:
    host = (await fabric()).host("gpu-001")
    main = await host.run("ip route get 10.10.2.3")
    assert main.stdout == "10.10.2.3 dev enp79s0np0 src 10.10.2.1 uid 0 \n    cache \n"
    local = await host.run("ip route get 10.10.1.1")
    assert local.stdout == "local 10.10.1.1 dev lo table local src 10.10.1.1 uid 0 \n    cache <local> \n"


async def test_without_the_rules_another_rail_is_reached_by_its_own_port_not_the_sources() -> None:
    host = (await fabric(without_policy=("gpu-001",))).host("gpu-001")
    r = await host.run("ip route get 10.10.2.3 from 10.10.1.1")
    assert r.stdout == "10.10.2.3 from 10.10.1.1 dev enp79s0np0 uid 0 \n    cache \n"


async def test_a_foreign_source_is_refused_and_a_bound_port_without_route_assumes_on_link() -> None:
    host = (await fabric()).host("gpu-001")
    refused = await host.run("ip route get 10.10.2.3 from 10.10.9.1")
    assert (refused.status, refused.stderr) == (2, "RTNETLINK answers: Invalid argument\n")
    bound = await host.run("ip route get 10.10.2.3 from 10.10.1.1 oif enp24s0np0")
    assert bound.stdout == "10.10.2.3 from 10.10.1.1 dev enp24s0np0 uid 0 \n    cache \n"


async def test_batch_prints_one_json_array_per_line_and_force_goes_on_after_a_failed_line() -> None:
    host = (await fabric()).host("gpu-001")
    lines = "".join(f"route get {dst} from {src}\n" for dst, src in (("10.10.0.2", "10.10.0.1"), ("10.10.0.2",
                    "10.10.9.9"), ("10.10.2.2", "10.10.0.1")))  # fmt: skip
    forced = await host.run("ip -force -j -batch -", stdin=lines)
    assert forced.status == 1
    docs = [json.loads(line) for line in forced.stdout.splitlines()]
    assert [(d[0]["dst"], d[0]["dev"], d[0].get("gateway")) for d in docs] == [
        ("10.10.0.2", "enp24s0np0", None),
        ("10.10.2.2", "enp24s0np0", "10.10.0.254"),
    ]
    assert forced.stderr == "RTNETLINK answers: Invalid argument\nCommand failed -:2\n"
    stopped = await host.run("ip -j -batch -", stdin=lines)
    assert len(stopped.stdout.splitlines()) == 1 and stopped.stderr.endswith("Command failed -:2\n")


async def test_a_ping_from_one_rail_to_another_hosts_other_rail_crosses_the_spine_with_jumbo_frames() -> None:
    host = (await fabric()).host("gpu-001")
    r = await host.run("ping -c 1 -M do -s 8972 -I 10.10.1.1 10.10.2.3")
    assert r.status == 0, r.stdout
    assert r.stdout.startswith("PING 10.10.2.3 (10.10.2.3) from 10.10.1.1 : 8972(9000) bytes of data.")


async def test_strict_rp_filter_drops_the_request_when_the_receiver_would_answer_by_another_port() -> None:
    lab = await fabric(without_policy=("gpu-003",))
    sender, receiver = lab.host("gpu-001"), lab.host("gpu-003")
    # Ubuntu's loose mode (2) accepts it: the answer leaves gpu-003 by its rail-1 port, straight on leaf-r1
    assert (await sender.run("ping -c 1 -I 10.10.1.1 10.10.2.3")).status == 0
    for key in ("all", "enp79s0np0"):
        assert (await receiver.run(f"sysctl -w net.ipv4.conf.{key}.rp_filter=1")).status == 0
    lost = await sender.run("ping -c 2 -I 10.10.1.1 10.10.2.3")
    assert lost.status == 1 and "2 packets transmitted, 0 received, 100% packet loss" in lost.stdout


async def test_a_port_cabled_to_another_leaf_cannot_reach_its_rail_gateway() -> None:
    host = (await fabric("gpu-001:wrong_leaf=enp64s0np0")).host("gpu-001")
    r = await host.run("ping -c 1 -I 10.10.1.1 10.10.2.3")
    assert r.status == 1 and "From 10.10.1.1 icmp_seq=1 Destination Host Unreachable" in r.stdout


async def write_bw(client: SimHost, server: SimHost, i: int, j: int, port: int = 18600):
    """ib_write_bw from the client's rail-i GID to the server's rail-j GID (GID index 3: RoCE v2 IPv4)."""
    srv = asyncio.ensure_future(server.run(f"ib_write_bw -d {DEVICES[j]} -x 3 -p {port} -D 1 --report_gbits"))
    await asyncio.sleep(0.01)
    k = NAMES.index(server.name) + 1
    cli = await client.run(f"ib_write_bw -d {DEVICES[i]} -x 3 -p {port} -D 1 --report_gbits 10.10.{j}.{k}")
    return cli, await asyncio.wait_for(srv, 5)


async def test_roce_from_rail_1_to_another_hosts_rail_2_runs_through_the_spine_with_the_rules() -> None:
    lab = await fabric(doca=True)
    client, server = await write_bw(lab.host("gpu-001"), lab.host("gpu-002"), 1, 2)
    assert client.status == 0 and server.status == 0, client.stderr + server.stderr
    assert "BW average[Gb/sec]" in client.stdout


async def test_roce_without_the_clients_rules_fails_to_reach_rtr_as_perftest_says() -> None:
    lab = await fabric(doca=True, without_policy=("gpu-001",))
    client, server = await write_bw(lab.host("gpu-001"), lab.host("gpu-002"), 1, 2)
    assert client.status == 1 and client.stderr.startswith("Failed to modify QP ")
    assert client.stderr.endswith(" to RTR\n Unable to Connect the HCA's through the link\n")
    assert (server.status, server.stderr) == (1, " Failed to exchange data between server and clients\n")


async def test_roce_without_the_servers_rules_fails_on_the_server_side() -> None:
    lab = await fabric(doca=True, without_policy=("gpu-002",))
    client, server = await write_bw(lab.host("gpu-001"), lab.host("gpu-002"), 1, 2)
    assert (client.status, client.stderr) == (1, " Failed to exchange data between server and clients\n")
    assert server.status == 1 and "Unable to Connect the HCA's through the link" in server.stderr
