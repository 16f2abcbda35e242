"""Slow links on a rails-N fabric (wizard/lab/degraded.py): a port trained at a lower rate, a bad cable, and a slow
leaf-spine uplink that every flow hashed over it shares, seen through ethtool, sysfs and simulated ib_write_bw.

Sources of the modelled behaviour are in wizard/lab/degraded.py (mlx5e link settings and PHY counters, mlx5_ib rate
translation, go-back-N under loss); the ECMP hash of a pair's two ports is wizard/lab/rails_plan.py's.
"""

from __future__ import annotations

import asyncio

import pytest

from tests.lab.test_rails16_sim import NETDEVS
from wizard.engine.session import check_faults
from wizard.lab import Lab, SimHost, packages, parse_fault
from wizard.lab.rails_plan import RailPlan
from wizard.parsers import parse

RAIL0, RAIL1 = NETDEVS[0], NETDEVS[1]
PLAN = RailPlan(64)


async def ready(lab: Lab, *names: str, rails: tuple[int, ...] = (0, 1)) -> None:
    """DOCA, the rails' addresses (host k = .k of each rail subnet), jumbo MTU, DSCP trust and PFC on priority 3."""
    lab.time_scale = 0.001
    for name in names:
        host = lab.host(name)
        for pkg in packages.DOCA:
            packages.install_files(host, pkg)
        host.power_on()
        await host.start_units()
        k = lab.names.index(name) + 1
        for rail in rails:
            nd = NETDEVS[rail]
            for cmd in (
                f"ip link set {nd} mtu 9000 up",
                f"ip addr add {PLAN.subnet(rail)[k]}/16 dev {nd}",
                f"mlnx_qos -i {nd} --trust dscp --pfc 0,0,0,1,0,0,0,0",
            ):
                r = await host.run(cmd)
                assert r.status == 0, (cmd, r.stderr)


async def write_bw(lab: Lab, server: str, client: str, rail: int = 0, port: int = 18515, mode: str = "-D 2") -> float:
    """The client's ib_write_bw Gb/s (last row) into the server's port on ``rail``."""
    cmd = f"ib_write_bw -d mlx5_{rail} -p {port} --report_gbits -F --tclass=106 {mode}"
    srv = asyncio.ensure_future(lab.host(server).run(cmd))
    await asyncio.sleep(0.01)
    cli = await lab.host(client).run(f"{cmd} {PLAN.subnet(rail)[lab.names.index(server) + 1]}")
    assert cli.status == 0, cli.stderr
    assert (await asyncio.wait_for(srv, 5)).status == 0
    return parse("ib_write_bw", cli.stdout).last().average.gbps


async def phy(host: SimHost, netdev: str) -> dict[str, int]:
    counters = dict(parse("ethtool_S", (await host.run(f"ethtool -S {netdev}")).stdout).counters)
    return {k: counters[k] for k in ("rx_symbol_err_phy", "rx_crc_errors_phy")}


@pytest.mark.parametrize(
    ("spec", "why"),
    [
        ("gpu-001:degraded=eth9", "'eth9' is not a data port"),
        (f"gpu-001:degraded={RAIL0}:300", "a 400G port trains at 10, 25, 40, 50, 100, 200 Gb/s"),
        ("gpu-001:degraded_uplink", "'gpu-001' is a host, not a leaf switch; degraded_uplink names a leaf: leaf-suNN"),
        (
            "leaf-su03-r0:degraded_uplink",
            "'leaf-su03-r0' is not a leaf switch of this fabric; degraded_uplink names a leaf: leaf-suNN",
        ),
        ("spine-1:degraded_uplink", "'spine-1' is not a leaf switch of this fabric"),
        ("leaf-su01-r0:degraded_uplink=spine-9", "'spine-9' is not a spine (spine-0, spine-1,"),
        ("leaf-su01-r0:degraded_uplink=spine-1:400", "below the uplink's 400"),
    ],
)
def test_bad_degraded_faults_are_refused_naming_the_valid_ports_and_switches(spec: str, why: str) -> None:
    with pytest.raises(ValueError) as err:
        Lab.rails(64, faults=[parse_fault(spec)])
    assert why in str(err.value)


def test_a_switch_side_fault_passes_the_host_check_and_needs_modelled_switches() -> None:
    from wizard.answers.model import load_answers
    from wizard.answers.profiles import demo_answers

    answers = load_answers(demo_answers("rails-16"))
    assert check_faults(answers, ["leaf-r2:degraded_uplink"])[0].host == "leaf-r2"
    with pytest.raises(ValueError, match="needs modelled switches"):
        Lab.reference(["server1", "server2"], faults=[parse_fault("leaf-r0:degraded_uplink")])
    with pytest.raises(ValueError, match="use ib_link_degraded"):
        Lab.ib_seed003(faults=[parse_fault("v100-01:degraded=ibp94s0f0")])


async def test_a_port_trained_at_200g_shows_it_and_carries_at_most_that_in_both_directions() -> None:
    lab = Lab.rails(64, faults=[parse_fault(f"gpu-003:degraded={RAIL0}:200")])
    await ready(lab, "gpu-001", "gpu-002", "gpu-003")
    host = lab.host("gpu-003")
    assert "\tSpeed: 200000Mb/s\n" in (await host.run(f"ethtool {RAIL0}")).stdout
    assert "\tSpeed: 400000Mb/s\n" in (await host.run(f"ethtool {RAIL1}")).stdout
    assert (await host.run(f"cat /sys/class/net/{RAIL0}/speed")).stdout == "200000\n"
    assert (await host.run("cat /sys/class/infiniband/mlx5_0/ports/1/rate")).stdout == "200 Gb/sec (4X HDR)\n"
    healthy = await write_bw(lab, "gpu-001", "gpu-002")
    into, out = await write_bw(lab, "gpu-003", "gpu-001"), await write_bw(lab, "gpu-001", "gpu-003", port=18516)
    swept = await write_bw(lab, "gpu-003", "gpu-002", port=18517, mode="-a")
    for rate in (into, out, swept):
        assert 0.48 < rate / healthy < 0.52, (rate, healthy)
    assert await write_bw(lab, "gpu-003", "gpu-001", rail=1) > 0.98 * healthy, "its other rails are not slowed"


async def test_a_bad_cable_keeps_its_speed_loses_40_percent_and_counts_errors_only_under_traffic() -> None:
    lab = Lab.rails(64, faults=[parse_fault(f"gpu-004:degraded={RAIL0}")])
    await ready(lab, "gpu-001", "gpu-002", "gpu-004")
    bad = lab.host("gpu-004")
    assert "\tSpeed: 400000Mb/s\n" in (await bad.run(f"ethtool {RAIL0}")).stdout
    idle = await phy(bad, RAIL0)
    await asyncio.sleep(0.05)  # 50 s of lab time without traffic
    assert await phy(bad, RAIL0) == idle == {"rx_symbol_err_phy": 0, "rx_crc_errors_phy": 0}
    healthy = await write_bw(lab, "gpu-001", "gpu-002")
    received = await write_bw(lab, "gpu-004", "gpu-001")  # the bad port receives: its PHY counts the errors
    after = await phy(bad, RAIL0)
    assert after["rx_crc_errors_phy"] > 0 and after["rx_symbol_err_phy"] > after["rx_crc_errors_phy"]
    sent = await write_bw(lab, "gpu-001", "gpu-004", port=18516)
    for rate in (received, sent):
        assert 0.57 < rate / healthy < 0.63, (rate, healthy)
    assert await phy(lab.host("gpu-002"), RAIL0) == idle, "the healthy ports count nothing"
    assert await phy(bad, RAIL1) == idle
    hw = "/sys/class/infiniband/mlx5_0/ports/1/hw_counters"
    assert int((await bad.run(f"cat {hw}/out_of_sequence")).stdout) > 0, "the responder saw the gaps"


def cross_su_peers(lab: Lab, leaf_host: str, spine: str) -> tuple[str, str]:
    """A host of SU 02 whose rail-0 flow with ``leaf_host`` hashes over ``spine``, and one hashing elsewhere."""
    sw = lab.fabric.switches
    assert sw is not None
    su2 = lab.names[32:]
    over = next(h for h in su2 if sw.spine_between((leaf_host, 0), (h, 0)) == spine)
    other = next(h for h in su2 if sw.spine_between((leaf_host, 0), (h, 0)) != spine)
    return over, other


async def test_a_slow_uplink_slows_only_the_flows_hashed_over_it_to_a_quarter() -> None:
    lab = Lab.rails(64, faults=[parse_fault("leaf-su01-r0:degraded_uplink")])  # to spine-0, at 100 of 400 Gb/s
    over, other = cross_su_peers(lab, "gpu-001", "spine-0")
    await ready(lab, "gpu-001", "gpu-002", over, other)
    same_leaf = await write_bw(lab, "gpu-002", "gpu-001")
    slow_up = await write_bw(lab, over, "gpu-001", port=18516)
    slow_down = await write_bw(lab, "gpu-001", over, port=18517, mode="-a")  # sweep: the last row is the 8 MiB one
    elsewhere = await write_bw(lab, other, "gpu-001", port=18518)
    for rate in (slow_up, slow_down):
        assert 0.23 < rate / same_leaf < 0.27, (rate, same_leaf)
    assert elsewhere > 0.98 * same_leaf, "a flow hashed over another spine is not slowed"


async def test_a_pairs_rails_run_together_only_the_rail_through_the_slow_uplink_is_slow() -> None:
    lab = Lab.rails(64, faults=[parse_fault("leaf-su01-r0:degraded_uplink=spine-3:200")])
    sw = lab.fabric.switches
    assert sw is not None
    peer = next(h for h in lab.names[32:] if sw.spine_between(("gpu-005", 0), (h, 0)) == "spine-3")
    await ready(lab, "gpu-005", peer)
    rates = await asyncio.gather(*(write_bw(lab, peer, "gpu-005", rail=r, port=18600 + r) for r in (0, 1)))
    assert 0.48 < rates[0] / rates[1] < 0.52, rates
