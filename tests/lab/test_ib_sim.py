"""The simulated InfiniBand cluster of seed 003 (wizard/lab/ib.py): what its hosts report, and what each IB fault
changes, as the real tools and sysfs would show it."""

from __future__ import annotations

import asyncio

from wizard.lab.cluster import Lab
from wizard.lab.faults import parse_fault
from wizard.lab.host import SimHost


def _lab(*faults: str) -> Lab:
    lab = Lab.ib_seed003(faults=[parse_fault(f) for f in faults])
    asyncio.run(_boot(lab))
    return lab


async def _boot(lab: Lab) -> None:
    await asyncio.gather(*(h.start_units() for h in lab.hosts.values()))


def _sys(host: SimHost, attr: str) -> dict[str, str]:
    out = asyncio.run(host.run(f"grep -sH . /sys/class/infiniband/*/ports/1/{attr}")).stdout
    return {line.split("/")[4]: line.split(":", 1)[1] for line in out.splitlines()}


def _run(host: SimHost, command: str) -> tuple[int, str, str]:
    done = asyncio.run(host.run(command))
    return done.status, done.stdout, done.stderr


def test_v100_and_a100_nodes_have_their_cards_in_infiniband_mode_swept_by_the_subnet_manager() -> None:
    lab = _lab()
    v100, a100 = lab.host("v100-01"), lab.host("a100-01")
    assert set(_sys(v100, "rate").values()) == {"100 Gb/sec (4X EDR)"}
    assert set(_sys(a100, "rate").values()) == {"200 Gb/sec (4X HDR)"}
    assert set(_sys(v100, "state").values()) == {"4: ACTIVE"}
    assert set(_sys(v100, "sm_lid").values()) == {"0x1"}
    lids = set(_sys(v100, "lid").values()) | set(_sys(a100, "lid").values())
    assert len(lids) == 4 and "0x0" not in lids
    status, out, _ = _run(v100, "lspci -D -nn -d 15b3:")
    assert status == 0 and out.count("Infiniband controller [0207]") == 2
    status, out, _ = _run(v100, "ip -j link show ibp94s0f0")
    assert '"link_type":"infiniband"' in out and "LOWER_UP" in out


def test_no_sm_leaves_the_ports_initializing_without_ipoib_carrier_and_sminfo_times_out() -> None:
    lab = _lab("v100-02:no_sm")
    host = lab.host("v100-02")
    assert set(_sys(host, "state").values()) == {"2: INIT"}
    assert set(_sys(host, "phys_state").values()) == {"5: LinkUp"}
    assert set(_sys(host, "lid").values()) == {"0xffff"}
    _, out, _ = _run(host, "ip -j link show ibp94s0f0")
    assert "NO-CARRIER" in out
    assert set(_sys(lab.host("v100-01"), "state").values()) == {"4: ACTIVE"}  # the others are untouched


def test_sminfo_and_iblinkinfo_need_the_diags_package_and_root_and_report_the_subnet() -> None:
    lab = _lab("v100-02:no_sm", "a100-01:ib_link_degraded=ibp75s0")
    host = lab.host("v100-01")
    status, _, err = _run(host, "sminfo")
    assert status == 127  # infiniband-diags is not on a bare Ubuntu server
    from wizard.lab import packages

    for h in lab.hosts.values():
        packages.install_files(h, packages.catalog("ubuntu")["infiniband-diags"])
    status, out, _ = _run(host, "sminfo")
    assert status == 0 and "sm lid 1 " in out and "SMINFO_MASTER" in out
    status, _, err = _run(lab.host("v100-02"), "sminfo")
    assert status != 0 and "failed: query" in err
    status, out, _ = _run(host, "iblinkinfo")
    assert status == 0 and "Switch: 0x7cfe900300a1b2c0 ib-sw-1:" in out
    degraded = [line for line in out.splitlines() if '"a100-01 ' in line and "ib-sw-1" not in line]
    assert degraded and " 1X " in degraded[0]


def test_pkey_mismatch_moves_the_port_out_of_the_default_partition_and_away_from_its_peers() -> None:
    lab = _lab("a100-02:pkey_mismatch=ibp177s0")
    host = lab.host("a100-02")
    pkeys = asyncio.run(host.run("grep -sH . /sys/class/infiniband/*/ports/1/pkeys/*")).stdout
    assert "0x8002" in pkeys and pkeys.count("0xffff") == 1
    second = ("a100-02", 1)
    assert lab.fabric.peers(second) == []
    assert ("a100-01", 1) in lab.fabric.peers(("a100-02", 0))


def test_ib_link_degraded_trains_the_port_at_1x_or_at_the_rate_asked() -> None:
    lab = _lab("v100-01:ib_link_degraded", "v100-02:ib_link_degraded=ibp94s0f1:56")
    assert _sys(lab.host("v100-01"), "rate")["ibp94s0f0"] == "25 Gb/sec (1X EDR)"
    assert _sys(lab.host("v100-02"), "rate")["ibp94s0f1"] == "56 Gb/sec (4X FDR)"


def test_mixed_link_layer_leaves_a_vpi_port_in_ethernet_mode_with_no_link() -> None:
    lab = _lab("v100-01:mixed_link_layer")
    host = lab.host("v100-01")
    layers = _sys(host, "link_layer")
    assert sorted(layers.values()) == ["Ethernet", "InfiniBand"]
    _, out, _ = _run(host, "lspci -D -nn -d 15b3:")
    assert "5e:00.1 Ethernet controller [0200]" in out and "5e:00.0 Infiniband controller [0207]" in out
    _, out, _ = _run(host, "ip -j link show ibp94s0f1")
    assert '"link_type":"ether"' in out and "NO-CARRIER" in out


def test_the_simulated_diagnostics_read_like_the_real_tools_to_the_shared_parsers() -> None:
    from wizard.lab import packages
    from wizard.parsers import parse

    lab = _lab("a100-01:ib_link_degraded=ibp75s0")
    for h in lab.hosts.values():
        packages.install_files(h, packages.catalog("ubuntu")["infiniband-diags"])
    host = lab.host("v100-01")
    ibstat = parse("ibstat", _run(host, "ibstat")[1])
    assert [p.state for ca in ibstat.cas for p in ca.ports] == ["Active", "Active"]  # type: ignore[attr-defined]
    sm = parse("sminfo", _run(host, "sminfo")[1])
    assert sm.is_master and sm.sm_lid == 1  # type: ignore[attr-defined]
    links = parse("iblinkinfo", _run(host, "iblinkinfo")[1])
    assert [link.port for link in links.degraded_links()] == [3]  # type: ignore[attr-defined]  # a100-01's 1X port
    uplink = links.find_ca_uplink(host="v100-01", ca="ibp94s0f1")  # type: ignore[attr-defined]
    assert uplink is not None and (uplink.switch_name, uplink.switch_port) == ("ib-sw-2", 1)
