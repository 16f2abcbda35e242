"""Incast on the modelled leaves: senders into one receiver port share it; PFC pauses, missing PFC drops, ECN CNPs.

Behaviour modelled (see wizard/lab/congestion.py for the sources): IEEE 802.1Qbb PFC pauses the senders hop by hop
when the congested queue's ports run PFC on the priority; a port without it tail-drops and RC go-back-N resends
(``out_of_sequence`` at the responder, ``packet_seq_err`` / ``local_ack_timeout_err`` at the requester); ECN marking
on the congested port makes the receiver (DCQCN NP) send CNPs that the senders (RP) handle, which leaves fewer
pauses. mlx5 counter names: kernel Documentation/networking/device_drivers/ethernet/mellanox/mlx5/counters.rst.
"""

from __future__ import annotations

import asyncio

from tests.lab.test_rails16_sim import NETDEVS, address_rail
from wizard.lab import Lab, congestion, packages, parse_fault
from wizard.lab.switch_load import configure_fabric
from wizard.parsers import parse

RAIL0 = NETDEVS[0]
HOSTS = [f"gpu-00{i}" for i in range(1, 6)]
HW = "/sys/class/infiniband/mlx5_0/ports/1/hw_counters"
HW_NAMES = ("out_of_sequence", "packet_seq_err", "local_ack_timeout_err", "np_ecn_marked_roce_packets", "np_cnp_sent",
            "rp_cnp_handled", "rp_cnp_ignored")  # fmt: skip
PERFTEST = "ib_write_bw -d mlx5_0 -p {port} -D 3 --report_gbits -F --tclass=106"


async def incast_lab(*faults: str, ecn: bool = True) -> Lab:
    """Five rails-16 hosts with DOCA on configured leaves, rail 0 addressed (10.10.0.k), DSCP trust + PFC 3 and
    ECN as stage roce sets."""
    lab = Lab.rails16(HOSTS, faults=[parse_fault(f) for f in faults])
    configure_fabric(lab)  # the leaves run what switch-config writes (the faults act on top of it)
    lab.time_scale = 0.001
    for host in lab.hosts.values():
        for pkg in packages.DOCA:
            packages.install_files(host, pkg)
        host.power_on()
        await host.start_units()
    await address_rail(lab, 0)
    for host in lab.hosts.values():
        assert (await host.run(f"mlnx_qos -i {RAIL0} --trust dscp --pfc 0,0,0,1,0,0,0,0")).status == 0
        for side in ("np", "rp") if ecn else ():
            assert (await host.run(f"tee /sys/class/net/{RAIL0}/ecn/roce_{side}/enable/3", stdin="1\n")).status == 0
    return lab


async def counters(lab: Lab, name: str) -> dict[str, int]:
    """ethtool -S of rail 0 and its RDMA hw_counters, as a host shows them."""
    host = lab.host(name)
    values = dict(parse("ethtool_S", (await host.run(f"ethtool -S {RAIL0}")).stdout).counters)
    for counter in HW_NAMES:
        values[counter] = int((await host.run(f"cat {HW}/{counter}")).stdout)
    return values


async def incast(lab: Lab, receiver: str, senders: list[str]) -> tuple[dict[str, float], dict[str, dict[str, int]]]:
    """Every sender's ib_write_bw -D 3 into the receiver's rail 0 at once: (Gb/s per sender, counter deltas)."""
    before = {h: await counters(lab, h) for h in [receiver, *senders]}
    ip = f"10.10.0.{HOSTS.index(receiver) + 1}"
    ports = {s: 18600 + k for k, s in enumerate(senders)}
    servers = [asyncio.ensure_future(lab.host(receiver).run(PERFTEST.format(port=p))) for p in ports.values()]
    await asyncio.sleep(0.01)
    runs = await asyncio.gather(*(lab.host(s).run(PERFTEST.format(port=p) + f" {ip}") for s, p in ports.items()))
    await asyncio.gather(*servers)
    rates = {}
    for s, r in zip(senders, runs, strict=True):
        assert r.status == 0, r.stderr
        rates[s] = parse("ib_write_bw", r.stdout).last().average.gbps
    after = {h: await counters(lab, h) for h in before}
    moved = {h: {k: v - before[h].get(k, 0) for k, v in after[h].items()} for h in before}
    return rates, moved


async def test_four_senders_share_the_receivers_line_rate_and_pfc_pauses_them_without_drops() -> None:
    lab = await incast_lab()
    rates, moved = await incast(lab, "gpu-001", HOSTS[1:])
    total = sum(rates.values())
    assert 360 < total < 390, "400GbE at RoCE MTU 4096: about 374 Gb/s of payload in all"
    assert max(rates.values()) / min(rates.values()) < 1.02, "PFC shares the port evenly"
    for s in HOSTS[1:]:
        assert moved[s]["rx_prio3_pause"] > 0 and moved[s]["rx_prio3_pause_duration"] > 0
        assert moved[s]["packet_seq_err"] == 0 and moved[s]["local_ack_timeout_err"] == 0
    assert moved["gpu-001"]["out_of_sequence"] == 0 and moved["gpu-001"]["rx_discards_phy"] == 0


async def test_a_sender_on_a_leaf_port_without_pfc_is_dropped_and_resends_instead_of_pausing() -> None:
    healthy, _ = await incast(await incast_lab(), "gpu-001", HOSTS[1:])
    lab = await incast_lab(f"gpu-003:switch_pfc_off={RAIL0}")
    rates, moved = await incast(lab, "gpu-001", HOSTS[1:])
    assert moved["gpu-003"]["rx_prio3_pause"] == 0 and moved["gpu-003"]["rx_prio3_pause_duration"] == 0
    assert moved["gpu-003"]["packet_seq_err"] > 0 and moved["gpu-003"]["local_ack_timeout_err"] > 0
    assert moved["gpu-001"]["out_of_sequence"] > 0, "the responder sees the gaps the drops leave"
    assert moved["gpu-001"]["rx_discards_phy"] == 0, "the switch dropped them, not the receiver NIC"
    assert moved["gpu-002"]["rx_prio3_pause"] > 0 and moved["gpu-002"]["packet_seq_err"] == 0
    assert rates["gpu-003"] < 0.7 * rates["gpu-002"] and sum(rates.values()) < 0.95 * sum(healthy.values())


async def test_a_receiver_leaf_port_without_pfc_drops_every_sender_and_pauses_none() -> None:
    lab = await incast_lab(f"gpu-001:switch_pfc_off={RAIL0}")
    _, moved = await incast(lab, "gpu-001", HOSTS[1:])
    for s in HOSTS[1:]:
        assert moved[s]["rx_prio3_pause"] == 0 and moved[s]["packet_seq_err"] > 0
    assert moved["gpu-001"]["out_of_sequence"] > 0


async def test_a_sender_host_without_pfc_has_no_per_priority_pause_counter_and_resends() -> None:
    lab = await incast_lab()
    assert (await lab.host("gpu-004").run(f"mlnx_qos -i {RAIL0} --pfc 0,0,0,0,0,0,0,0")).status == 0
    _, moved = await incast(lab, "gpu-001", HOSTS[1:])
    assert "rx_prio3_pause" not in moved["gpu-004"], "mlx5e lists per-priority pause counters only with PFC on"
    assert moved["gpu-004"]["packet_seq_err"] > 0 and moved["gpu-002"]["packet_seq_err"] == 0


async def test_ecn_marking_makes_the_receiver_send_cnps_and_dcqcn_leaves_fewer_pauses() -> None:
    _, marked = await incast(await incast_lab(), "gpu-001", HOSTS[1:])
    _, unmarked = await incast(await incast_lab(f"gpu-001:switch_ecn_off={RAIL0}"), "gpu-001", HOSTS[1:])
    assert marked["gpu-001"]["np_ecn_marked_roce_packets"] > 0 and marked["gpu-001"]["np_cnp_sent"] > 0
    assert all(marked[s]["rp_cnp_handled"] > 0 for s in HOSTS[1:])
    assert unmarked["gpu-001"]["np_cnp_sent"] == 0 and unmarked["gpu-001"]["np_ecn_marked_roce_packets"] == 0
    assert all(unmarked[s]["rp_cnp_handled"] == 0 for s in HOSTS[1:])
    for s in HOSTS[1:]:
        assert 0 < marked[s]["rx_prio3_pause"] < unmarked[s]["rx_prio3_pause"] / 2, "DCQCN: fewer, not no, pauses"


async def test_a_sender_without_dcqcn_ignores_the_cnps() -> None:
    lab = await incast_lab()
    assert (await lab.host("gpu-005").run(f"tee /sys/class/net/{RAIL0}/ecn/roce_rp/enable/3", stdin="0\n")).status == 0
    _, moved = await incast(lab, "gpu-001", HOSTS[1:])
    assert moved["gpu-005"]["rp_cnp_ignored"] > 0 and moved["gpu-005"]["rp_cnp_handled"] == 0
    assert moved["gpu-002"]["rp_cnp_handled"] > 0


async def test_one_sender_alone_is_not_congested() -> None:
    lab = await incast_lab()
    rates, moved = await incast(lab, "gpu-001", ["gpu-002"])
    assert rates["gpu-002"] > 360 and moved["gpu-002"]["rx_prio3_pause_duration"] == 0
    assert moved["gpu-001"]["np_cnp_sent"] == 0 and moved["gpu-001"]["out_of_sequence"] == 0
    assert congestion._flows(lab.host("gpu-001")) == {("gpu-001", "mlx5_0"): set()}, "the flow left the port"
