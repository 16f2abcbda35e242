"""Lab support for perftest: a server and a client meet over the fabric; rates and errors follow host state."""

from __future__ import annotations

import asyncio

import pytest

from wizard.lab import Lab, SimHost, packages, parse_fault
from wizard.parsers import parse

SERVER = "ib_write_bw -d mlx5_{rail} -x 3 -p {port} --report_gbits -F --tclass=106 {extra}"
CLIENT = SERVER + " {ip}"


async def ready_host(host: SimHost, index: int, *, qos: bool = True) -> None:
    """What stages ofed, network and roce leave behind: DOCA, rail addresses, jumbo MTU, DSCP trust + PFC 3."""
    for pkg in packages.DOCA:
        packages.install_files(host, pkg)
    host.power_on()
    for rail, port in enumerate(host.profile.ports):
        nd = port.netdev
        for command in (f"ip link set {nd} mtu 9000 up", f"ip addr add 192.168.{11 + rail}.{index}/24 dev {nd}"):
            assert (await host.run(command)).status == 0
        if qos:
            r = await host.run(f"mlnx_qos -i {nd} --trust dscp --pfc 0,0,0,1,0,0,0,0")
            assert r.status == 0, r.stderr


async def ready_lab(*faults: str, qos: bool = True) -> Lab:
    lab = Lab.reference(["server1", "server2"], faults=[parse_fault(f) for f in faults])
    lab.time_scale = 0.001
    for index, host in enumerate(lab.hosts.values(), 1):
        await ready_host(host, index, qos=qos)
    return lab


async def pair(lab: Lab, rail: int = 0, extra: str = "-a", port: int = 18515, tool: str = "ib_write_bw"):
    """Run the server on server1 and the client on server2 for one rail; return both results."""
    s1, s2 = lab.hosts["server1"], lab.hosts["server2"]
    server_cmd = SERVER.format(rail=rail, port=port, extra=extra).replace("ib_write_bw", tool)
    server = asyncio.ensure_future(s1.run(server_cmd))
    await asyncio.sleep(0.01)
    client_cmd = CLIENT.format(rail=rail, port=port, extra=extra, ip=f"192.168.{11 + rail}.1").replace(
        "ib_write_bw", tool
    )
    client = await s2.run(client_cmd)
    if client.status != 0:
        server.cancel()
        return None, client
    return await asyncio.wait_for(server, 5), client


async def test_write_bw_sweep_meets_the_server_and_reaches_line_rate_on_a_healthy_rail():
    lab = await ready_lab()
    server, client = await pair(lab)
    bw = parse("ib_write_bw", client.stdout)
    assert client.status == 0 and server.status == 0
    assert client.stdout.splitlines()[0] == "# simulated by the roce-wizard lab: not a measurement"
    assert bw.role == "client" and bw.device == "mlx5_0" and bw.gid_index == 3 and bw.mtu == 4096
    assert bw.link_type == "Ethernet" and len(bw.results) == 23
    assert [r.bytes for r in bw.results][:3] == [2, 4, 8] and bw.results[-1].bytes == 8388608
    assert 23.0 < bw.last().average.gbps < 24.5, "25GbE at RoCE MTU 4096 carries about 23.4 Gb/s of payload"
    assert bw.results[0].average.gbps < 1.0, "2-byte messages are bound by the message rate"
    assert bw.remote_addresses[0].gid_ipv4 == "192.168.11.1" and bw.local_addresses[0].gid_ipv4 == "192.168.11.2"
    srv = parse("ib_write_bw", server.stdout)
    assert srv.role == "server" and srv.results[-1].bytes == 8388608 and not srv.errors


async def test_a_timed_run_prints_one_row_with_iterations_for_its_duration():
    lab = await ready_lab()
    _, client = await pair(lab, extra="-D 2")
    bw = parse("ib_write_bw", client.stdout)
    assert [r.bytes for r in bw.results] == [65536]
    assert bw.results[0].iterations > 80000, "2 s at ~23 Gb/s of 64 KiB messages"


async def test_latency_reports_typical_and_tail_in_the_current_nine_column_layout():
    lab = await ready_lab()
    _, client = await pair(lab, extra="", tool="ib_write_lat")
    row = parse("ib_write_lat", client.stdout).last()
    assert row.bytes == 2 and row.iterations == 1000
    assert 1.0 < row.t_typical_us < 2.5 and row.p99_9_us < 3 * row.t_typical_us


async def test_a_lower_mtu_costs_a_few_percent_and_perftest_reports_mtu_1024():
    lab = await ready_lab()
    for name in ("server1", "server2"):
        assert (await lab.hosts[name].run("ip link set ens1f0np0 mtu 1500")).status == 0
    _, client = await pair(lab)
    bw = parse("ib_write_bw", client.stdout)
    assert bw.mtu == 1024
    assert 21.0 < bw.last().average.gbps < 22.5, "below the 90 % pass mark of 25GbE"


async def test_without_pfc_the_rate_drops_and_the_receiver_counts_discards_not_pauses():
    lab = await ready_lab(qos=False)
    _, client = await pair(lab)
    assert parse("ib_write_bw", client.stdout).last().average.gbps < 20.0
    stats = parse("ethtool_S", (await lab.hosts["server1"].run("ethtool -S ens1f0np0")).stdout).counters
    assert stats["rx_prio0_discards"] > 0 and stats["rx_discards_phy"] > 0, "trust pcp: untagged RoCE lands on prio 0"
    hw = "/sys/class/infiniband/mlx5_0/ports/1/hw_counters"
    resent = await lab.hosts["server2"].run(f"cat {hw}/packet_seq_err {hw}/local_ack_timeout_err")
    received = await lab.hosts["server1"].run(f"cat {hw}/out_of_sequence")
    assert int(resent.stdout.split()[0]) > 0 and int(received.stdout) > 0, "drops show up as retransmissions"


async def test_with_pfc_the_lossless_priority_carries_the_bytes_and_pause_frames_move():
    lab = await ready_lab()
    before = parse("ethtool_S", (await lab.hosts["server1"].run("ethtool -S ens1f0np0")).stdout).counters
    await pair(lab)
    after = parse("ethtool_S", (await lab.hosts["server1"].run("ethtool -S ens1f0np0")).stdout).counters
    assert after["rx_prio3_bytes"] - before["rx_prio3_bytes"] > 10**9
    assert after["tx_prio3_pause"] > before["tx_prio3_pause"] and after["rx_prio3_discards"] == 0


async def test_a_crosswired_cable_makes_the_client_fail_to_connect_like_perftest():
    lab = await ready_lab("server2:crosswire")
    server, client = await pair(lab)
    assert server is None and client.status == 1
    assert "Couldn't connect to 192.168.11.1:18515" in client.stderr
    assert parse("ib_write_bw", client.stdout + client.stderr).errors


async def test_a_link_down_port_refuses_to_start_with_the_device_port_error():
    lab = await ready_lab("server2:link_down=ens1f0np0")
    r = await lab.hosts["server2"].run(CLIENT.format(rail=0, port=18515, extra="", ip="192.168.11.1"))
    assert r.status == 1 and "Port number 1 state is Down" in r.stderr
    assert "Couldn't get context for the device" in parse("ib_write_bw", r.stderr).errors


async def test_an_unknown_device_and_a_missing_driver_fail_like_perftest():
    lab = await ready_lab()
    r = await lab.hosts["server1"].run("ib_write_bw -d mlx5_9")
    assert r.status == 1 and "IB device mlx5_9 not found" in r.stderr
    inbox = Lab.reference(["server1"]).hosts["server1"]  # inbox rdma-core names devices rocep<bus>s<slot>f<fn>
    assert (await inbox.run("env DEBIAN_FRONTEND=noninteractive apt-get install -y perftest")).status == 0
    r = await inbox.run("ib_write_bw -d mlx5_0")
    assert r.status == 1 and "IB device mlx5_0 not found" in r.stderr
    assert (await inbox.run("modprobe -r mlx5_ib")).status == 0
    r = await inbox.run("ib_write_bw -d rocep59s0f0")
    assert r.status == 1 and "Did not detect devices" in r.stderr, r.stderr


async def test_the_simulated_client_prints_the_same_header_fields_as_a_real_roce_client():
    from tests.fixture_files import real_output

    real = parse("ib_write_bw", real_output("ib_write_bw", "k8s-multus-roce-client-a-gbits-10.txt"))
    lab = await ready_lab()
    _, client = await pair(lab)
    simulated = parse("ib_write_bw", client.stdout)
    assert set(simulated.header) == set(real.header)
    assert (simulated.link_type, simulated.transport_type, simulated.connection_type) == ("Ethernet", "IB", "RC")
    assert simulated.role == real.role == "client" and not simulated.warnings and not simulated.errors


async def test_help_prints_the_usage_of_a_perftest_built_without_cuda():
    lab = await ready_lab()
    r = await lab.hosts["server1"].run("ib_write_bw --help")
    assert r.status == 1 and "--report_gbits" in r.stdout and "--tclass=<value>" in r.stdout
    assert "--use_cuda" not in r.stdout


@pytest.mark.parametrize(("tool", "title"), [("ib_read_bw", "RDMA_Read BW Test"), ("ib_send_bw", "Send BW Test"),
                                             ("ib_send_lat", "Send Latency Test")])  # fmt: skip
async def test_read_send_and_send_latency_tests_run_in_their_own_formats(tool: str, title: str):
    lab = await ready_lab()
    server, client = await pair(lab, extra="", tool=tool)
    result = parse(tool, client.stdout)
    assert client.status == 0 and server.status == 0 and result.test == title and result.results
