"""The rails-16 lab: 16 HGX H100 hosts, 8 ConnectX-7 400GbE rails on leaf switches, seen through host tools.

Sources of the modelled behaviour: lldpd's display/JSON writer (src/client/display.c, json_writer.c) and its
integration tests (tests/integration/test_lldpcli.py), lldpd issue #236 (one interface is an object, several a list),
IEEE 802.1Qaz PFC/APP TLV layouts (lldpd files them under unknown-tlvs), Cumulus Linux RoCE defaults (MTU 9216,
trust DSCP, PFC priority 3), mlx5e ``link_down_events_phy`` and the kernel's sysfs carrier_changes.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from wizard.lab import Lab, parse_fault
from wizard.lab.switch_load import configure_fabric

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "real-outputs" / "lldpctl"
RAIL0 = "enp24s0np0"
RAIL1 = "enp64s0np0"
NETDEVS = [RAIL0, RAIL1, "enp79s0np0", "enp94s0np0", "enp154s0np0", "enp192s0np0", "enp206s0np0", "enp220s0np0"]


async def booted(*faults: str, configured: bool = True) -> Lab:
    """The 16-host lab, its leaves and spine loaded with switch-config's Cumulus files unless told otherwise."""
    lab = Lab.rails16(faults=[parse_fault(f) for f in faults])
    if configured:
        configure_fabric(lab)
    lab.time_scale = 0.001
    for host in lab.hosts.values():
        await host.start_units()
    return lab


async def address_rail(lab: Lab, rail: int, mtu: int = 9000) -> None:
    """Rail ``rail`` of every host gets 10.10.<rail>.<host number>/24, as the network stage's rail design does."""
    for k, host in enumerate(lab.hosts.values(), start=1):
        dev = NETDEVS[rail]
        for cmd in (
            f"ip link set {dev} mtu {mtu}",
            f"ip addr add 10.10.{rail}.{k}/24 dev {dev}",
            f"ip link set {dev} up",
        ):
            r = await host.run(cmd)
            assert r.status == 0, r.stderr


def neighbours(stdout: str) -> dict[str, tuple[str, str, dict]]:
    """local interface -> (switch, switch port, interface object) from lldpctl -f json."""
    doc = json.loads(stdout)["lldp"]["interface"]
    items = doc if isinstance(doc, list) else [doc]
    out = {}
    for item in items:
        ((iface, body),) = item.items()
        ((switch, _chassis),) = body["chassis"].items()
        out[iface] = (switch, body["port"]["id"]["value"], body)
    return out


async def test_the_profile_is_16_hgx_h100_hosts_with_eight_connectx7_400g_rails() -> None:
    lab = await booted()
    assert lab.names == [f"gpu-{i:03d}" for i in range(1, 17)]
    host = lab.host("gpu-016")
    lspci = (await host.run("lspci -nn -d 15b3:")).stdout
    assert lspci.count("[15b3:1021]") == 8 and "ConnectX-7" in lspci
    ethtool = (await host.run(f"ethtool {RAIL0}")).stdout
    assert "Speed: 400000Mb/s" in ethtool and "Lanes: 4" in ethtool
    assert "firmware-version: 28." in (await host.run(f"ethtool -i {RAIL0}")).stdout
    topo = (await host.run("nvidia-smi topo -m")).stdout
    gpu0 = next(line for line in topo.splitlines() if line.startswith("GPU0\t")).split("\t")
    assert gpu0[2:9] == ["NV18"] * 7 and gpu0[9] == "PIX" and gpu0[10] == "NODE"
    assert (await host.run("nvidia-smi -L")).stdout.count("NVIDIA H100 80GB HBM3") == 8
    assert lab.fabric.switches is not None
    assert sorted(lab.fabric.switches.switches) == sorted([f"leaf-r{i}" for i in range(8)] + ["spine-0", "mgmt-sw-0"])


async def test_lldpctl_json_names_leaf_ri_port_swpk_for_rail_i_of_host_k() -> None:
    lab = await booted()
    host = lab.host("gpu-007")
    r = await host.run("sudo lldpctl -f json")
    assert r.status == 0, r.stderr
    seen = neighbours(r.stdout)
    assert seen["eno1"][:2] == ("mgmt-sw-0", "swp7")
    for rail, dev in enumerate(NETDEVS):
        switch, port, body = seen[dev]
        assert (switch, port) == (f"leaf-r{rail}", "swp7")
        pfc = next(t for t in body["unknown-tlvs"]["unknown-tlv"] if t["subtype"] == "11")
        assert (pfc["oui"], pfc["value"]) == ("00,80,C2", "08,08")  # not willing, 8 TCs, PFC on priority 3
        app = next(t for t in body["unknown-tlvs"]["unknown-tlv"] if t["subtype"] == "12")
        # Cumulus's RoCE profile sends the APP TLV "UDP, Protocol 4791, Priority 3" (selector 3)
        assert app["value"] == "00,63,12,B7"


async def test_an_unconfigured_cumulus_leaf_sends_no_dcbx_tlvs_and_trusts_pcp() -> None:
    lab = await booted(configured=False)
    seen = neighbours((await lab.host("gpu-007").run("sudo lldpctl -f json")).stdout)
    assert all("unknown-tlvs" not in seen[dev][2] for dev in NETDEVS)  # dcbx TLVs are off by default
    sp = lab.fabric.switches.port_of(("gpu-007", 0))  # type: ignore[union-attr]
    assert sp is not None and not sp.lossless(26) and sp.priority(26) == 0  # trust l2: untagged RoCE is priority 0


async def test_one_interface_is_an_object_several_are_a_list_as_in_real_lldpd_json() -> None:
    lab = await booted()
    host = lab.host("gpu-001")
    one = json.loads((await host.run(f"lldpctl -f json {RAIL0}")).stdout)
    real_one = json.loads((FIXTURES / "lldpd-test-lldpcli-json-neighbors-1.txt").read_text())
    assert isinstance(one["lldp"]["interface"], dict) and isinstance(real_one["lldp"]["interface"], dict)
    ours = one["lldp"]["interface"][RAIL0]
    theirs = real_one["lldp"]["interface"]["eth0"]
    assert set(theirs) <= set(ours) and set(theirs["port"]) <= set(ours["port"])
    several = json.loads((await host.run("lldpcli -f json show neighbors details")).stdout)
    assert isinstance(several["lldp"]["interface"], list) and len(several["lldp"]["interface"]) == 9
    real_several = (FIXTURES / "suzieq-issue259-sonic-multi-interface-partial-1.txt").read_text()
    assert real_several.startswith('{\n  "lldp": {\n    "interface": [\n      {\n')
    assert (await host.run("lldpcli -f json show neighbors")).stdout.startswith(real_several[:40])


async def test_lldpctl_needs_a_running_lldpd_and_its_socket_permission() -> None:
    lab = await booted()
    host = lab.host("gpu-002")
    denied = await host.run("lldpctl -f json", user="operator")
    assert denied.status == 1 and "Permission denied" in denied.stderr
    assert (await host.run("systemctl stop lldpd")).status == 0
    r = await host.run("lldpctl -f json")
    assert r.status == 1 and "unable to connect to socket /run/lldpd.socket" in r.stderr


async def test_same_rail_hosts_reach_each_other_through_their_leaf_with_jumbo_frames() -> None:
    lab = await booted()
    await address_rail(lab, 0)
    r = await lab.host("gpu-001").run(f"ping -c 1 -W 1 -M do -s 8972 -I {RAIL0} 10.10.0.16")
    assert r.status == 0, r.stdout + r.stderr


async def test_wrong_leaf_shows_the_other_leaf_in_lldp_and_the_rail_reaches_nobody() -> None:
    lab = await booted(f"gpu-003:wrong_leaf={RAIL0}")
    await address_rail(lab, 0)
    host = lab.host("gpu-003")
    seen = neighbours((await host.run("lldpctl -f json")).stdout)
    assert seen[RAIL0][:2] == ("leaf-r1", "swp19")  # a spare port of the next rail's leaf
    assert seen[RAIL1][:2] == ("leaf-r1", "swp3")
    assert (await host.run(f"ping -c 1 -W 1 -I {RAIL0} 10.10.0.4")).status != 0
    assert (await lab.host("gpu-004").run(f"ping -c 1 -W 1 -I {RAIL0} 10.10.0.3")).status != 0
    assert (await lab.host("gpu-004").run(f"ping -c 1 -W 1 -I {RAIL0} 10.10.0.5")).status == 0


async def test_switch_pfc_off_shows_an_empty_pfc_bitmap_in_the_leafs_tlv() -> None:
    lab = await booted(f"gpu-004:switch_pfc_off={RAIL1}")
    seen = neighbours((await lab.host("gpu-004").run("lldpctl -f json")).stdout)
    pfc = {dev: next(t for t in seen[dev][2]["unknown-tlvs"]["unknown-tlv"] if t["subtype"] == "11") for dev in NETDEVS}
    assert pfc[RAIL1]["value"] == "08,00"
    assert pfc[RAIL0]["value"] == "08,08"


async def test_switch_mtu_1500_drops_jumbo_frames_but_passes_small_ones() -> None:
    lab = await booted("gpu-005:switch_mtu")
    await address_rail(lab, 0)
    host = lab.host("gpu-006")
    assert (await host.run(f"ping -c 1 -W 1 -M do -s 1472 -I {RAIL0} 10.10.0.5")).status == 0
    assert (await host.run(f"ping -c 1 -W 1 -M do -s 8972 -I {RAIL0} 10.10.0.5")).status != 0
    assert (await host.run(f"ping -c 1 -W 1 -M do -s 8972 -I {RAIL0} 10.10.0.7")).status == 0
    seen = neighbours((await lab.host("gpu-005").run("lldpctl -f json")).stdout)
    assert "mfs" not in seen[RAIL0][2]["port"]  # lldpd-based leaves send no maximum-frame-size TLV


async def test_switch_ecn_off_clears_ecn_marking_on_that_leaf_port_only() -> None:
    lab = await booted(f"gpu-008:switch_ecn_off={RAIL1}")
    sw = lab.fabric.switches
    assert sw is not None
    assert sw.port_of(("gpu-008", 1)).marks(26) is False  # type: ignore[union-attr]
    assert sw.port_of(("gpu-008", 0)).marks(26) is True  # type: ignore[union-attr]
    assert sw.port_of(("gpu-009", 1)).marks(26) is True  # type: ignore[union-attr]


async def test_a_flapping_port_shows_rising_link_down_events_and_carrier_changes() -> None:
    lab = await booted(f"gpu-010:flap={RAIL1}")
    host = lab.host("gpu-010")
    host.time_scale_override = 0.00001  # 10 s of lab time per 0.1 ms
    first = int((await host.run(f"cat /sys/class/net/{RAIL1}/carrier_changes")).stdout)
    stats = (await host.run(f"ethtool -S {RAIL1}")).stdout
    downs = int(stats.split("link_down_events_phy: ")[1].split()[0])
    assert downs >= 1 and first >= 4
    import asyncio

    await asyncio.sleep(0.01)
    assert int((await host.run(f"cat /sys/class/net/{RAIL1}/carrier_changes")).stdout) > first
    later = (await host.run(f"ethtool -S {RAIL1}")).stdout
    assert int(later.split("link_down_events_phy: ")[1].split()[0]) > downs
    assert "link_down_events_phy: 0\n" in (await host.run(f"ethtool -S {RAIL0}")).stdout
    assert "Link down" in (await host.run("dmesg")).stdout


def test_switch_faults_need_the_switched_profile() -> None:
    with pytest.raises(ValueError, match="rails-16"):
        Lab.reference(["server1", "server2"], faults=[parse_fault("server1:switch_mtu")])
    with pytest.raises(ValueError, match="not a data port"):
        Lab.rails16(faults=[parse_fault("gpu-001:wrong_leaf=eth9")])
