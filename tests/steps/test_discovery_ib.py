"""Discovery on InfiniBand (seed 003): the ports' state, rate, LIDs and P_Keys are read from sysfs, the subnet manager
from sminfo, and each IB fault fails the item that explains it, naming host and port."""

from __future__ import annotations

from pathlib import Path

import pytest

from steps.discovery import facts as df
from steps.discovery.ib_checks import infiniband_checks
from steps.discovery.infiniband import probe_infiniband
from wizard.cli.main import main
from wizard.engine.state import StateStore
from wizard.executors.base import CommandResult

SYSFS = """\
/sys/class/infiniband/mlx5_0/ports/1/state:4: ACTIVE
/sys/class/infiniband/mlx5_0/ports/1/phys_state:5: LinkUp
/sys/class/infiniband/mlx5_0/ports/1/rate:100 Gb/sec (4X EDR)
/sys/class/infiniband/mlx5_0/ports/1/lid:0x3
/sys/class/infiniband/mlx5_0/ports/1/sm_lid:0x1
/sys/class/infiniband/mlx5_0/ports/1/sm_sl:0
/sys/class/infiniband/mlx5_0/ports/1/link_layer:InfiniBand
/sys/class/infiniband/mlx5_1/ports/1/state:2: INIT
/sys/class/infiniband/mlx5_1/ports/1/rate:25 Gb/sec (1X EDR)
/sys/class/infiniband/mlx5_1/ports/1/link_layer:InfiniBand
/sys/class/infiniband/mlx5_0/ports/1/pkeys/0:0xffff
/sys/class/infiniband/mlx5_0/ports/1/pkeys/1:0x0000
/sys/class/infiniband/mlx5_1/ports/1/pkeys/0:0x8002
"""


SMINFO_OK = "sminfo: sm lid 1 sm guid 0x7cfe900300a1b2c0, activity count 48211 priority 15 state 3 SMINFO_MASTER\n"
IBLINKINFO = (
    "Switch: 0x7cfe900300a1b2c0 ib-sw-1:\n"
    '          1    7[  ] ==( 4X       25.78125 Gbps Active/  LinkUp)==>       3    1[  ] "gpu-01 mlx5_0" ( )\n'
    '          1    8[  ] ==(                Down/ Polling)==>             [  ] "" ( )\n'
)


class Diags:
    """sminfo and iblinkinfo as a host with infiniband-diags answers them (with sudo)."""

    def __init__(self, sminfo: tuple[int, str, str]) -> None:
        self.sminfo = sminfo

    async def run(self, argv: list[str], sudo: bool = False) -> CommandResult:
        status, out, err = self.sminfo if argv == ["sminfo"] else (0, IBLINKINFO, "")
        return CommandResult(" ".join(argv), status, out, err, 0.0, out)


def _facts() -> df.DiscoveryFacts:
    ports = [df.NicPort(pci=f"0000:5e:00.{i}", model="ConnectX-5", netdev=f"ibp94s0f{i}", rdma_device=f"mlx5_{i}",
                        rdma_port=1) for i in (0, 1)]  # fmt: skip
    return df.DiscoveryFacts(hostname="gpu-01", ports=ports)


async def _sysfs(argv: object) -> str:
    return SYSFS  # both reads (port attributes, P_Key tables) from one listing; each parser takes its own lines


async def test_sysfs_sminfo_and_iblinkinfo_give_each_port_its_state_rate_partitions_and_switch_port() -> None:
    facts = _facts()
    await probe_infiniband(Diags((0, SMINFO_OK, "")), facts, _sysfs)  # type: ignore[arg-type]
    first, second = facts.ports[0].ib, facts.ports[1].ib
    assert first is not None and second is not None
    assert (first.state, first.rate_gbps, first.width, first.speed, first.lid, first.sm_lid) == (
        "ACTIVE", 100.0, 4, "EDR", 3, 1)  # fmt: skip
    assert first.pkeys == ["0xffff"] and second.pkeys == ["0x8002"]  # the empty slot (0x0000) is no partition
    assert (second.state, second.width) == ("INIT", 1)
    assert (first.switch, first.switch_port) == ("ib-sw-1", 7)
    assert facts.ib_sm is not None and (facts.ib_sm.lid, facts.ib_sm.state) == (1, "SMINFO_MASTER")


async def test_an_sminfo_with_no_sm_answering_is_said_plainly() -> None:
    facts = _facts()
    failed = (255, "", "ibwarn: [1] mad_rpc: _do_madrpc failed; dport (DR path slid 0; dlid 0; 0)\n"
                       "sminfo: iberror: failed: query\n")  # fmt: skip
    await probe_infiniband(Diags(failed), facts, _sysfs)  # type: ignore[arg-type]
    assert facts.ib_sm is None and facts.ib_sm_error == "no subnet manager answered (SubnGet(SMInfo) failed)"


def _port(name: str, state: str, rate: float, width: int, pkeys: list[str], layer: str = "InfiniBand") -> df.NicPort:
    ib = df.IbPortState(state=state, rate_gbps=rate, width=width, speed="EDR", lid=3, sm_lid=1, pkeys=pkeys)
    return df.NicPort(pci="0000:5e:00.0", model="ConnectX-5", netdev=name, rdma_device="mlx5_0", rdma_port=1,
                      link_layer=layer, ib=ib if layer == "InfiniBand" else None)  # fmt: skip


def test_a_healthy_ib_host_passes_and_each_defect_fails_its_own_item() -> None:
    good = df.DiscoveryFacts(ports=[_port("ibp94s0f0", "ACTIVE", 100, 4, ["0xffff"])])
    assert {c.id: c.status for c in infiniband_checks(good, "infiniband", 100, None)} == {
        "link_layer": "pass", "subnet_manager": "pass", "ib_links": "pass", "pkeys": "pass"}  # fmt: skip
    bad = df.DiscoveryFacts(ports=[_port("ibp94s0f0", "INIT", 25, 1, ["0x8002"])])
    failed = {c.id: c.evidence for c in infiniband_checks(bad, "infiniband", 100, None) if c.status == "fail"}
    assert set(failed) == {"subnet_manager", "ib_links", "pkeys"}
    assert "ibp94s0f0" in failed["subnet_manager"] and "Initializing" in failed["subnet_manager"]
    assert "1X" in failed["ib_links"] and "expected 100 Gb/s" in failed["ib_links"]
    # a full member (0xffff) and a limited one (0x7fff) are in the same partition
    limited = df.DiscoveryFacts(ports=[_port("ibp94s0f0", "ACTIVE", 100, 4, ["0x7fff"])])
    assert {c.id: c.status for c in infiniband_checks(limited, "infiniband", 100, None)}["pkeys"] == "pass"


def test_a_port_in_the_other_mode_fails_the_link_layer_with_the_mlxconfig_fix_and_auto_accepts_it() -> None:
    facts = df.DiscoveryFacts(ports=[_port("ibp94s0f1", "DOWN", 0, 4, [], layer="Ethernet")])
    item = infiniband_checks(facts, "infiniband", None, None)[0]
    assert item.status == "fail" and "runs Ethernet" in item.evidence and "LINK_TYPE_P1=IB" in (item.fix or "")
    assert infiniband_checks(facts, "auto", None, None) == []
    roce = infiniband_checks(facts, "ethernet", None, None)
    assert [c.status for c in roce] == ["pass"]


def _discover(tmp_path: Path, fault: str | None) -> dict[str, dict[str, tuple[str, str]]]:
    args = ["--demo", "--profile", "ib-seed003", "--only", "discovery", "--yes", "--state-dir", str(tmp_path)]
    main(args + (["--fault", fault] if fault else []))
    store = StateStore(tmp_path)
    hosts = ("v100-01", "v100-02", "a100-01", "a100-02")
    return {h: {c.id: (c.status, c.evidence) for c in store.host(h).stage("discovery").checks} for h in hosts}


def test_the_simulated_seed003_cluster_passes_discovery_with_groups_compared_within_themselves(tmp_path: Path) -> None:
    checks = _discover(tmp_path, None)
    for host, items in checks.items():
        assert all(status != "fail" for status, _ in items.values()), host
        assert not any(key.startswith("diff_") for key in items), host  # V100 vs A100 differ by design
        assert items["ib_links"][0] == "pass"


@pytest.mark.parametrize(
    ("fault", "host", "item", "port"),
    [
        ("v100-02:no_sm", "v100-02", "subnet_manager", "ibp94s0f0"),
        ("a100-02:pkey_mismatch=ibp177s0", "a100-02", "pkeys", "ibp177s0"),
        ("a100-01:ib_link_degraded=ibp75s0", "a100-01", "ib_links", "ibp75s0"),
        ("v100-01:mixed_link_layer", "v100-01", "link_layer", "ibp94s0f1"),
    ],
)
def test_each_ib_fault_fails_the_item_that_explains_it_naming_the_port(
    tmp_path: Path, fault: str, host: str, item: str, port: str
) -> None:
    checks = _discover(tmp_path, fault)
    status, evidence = checks[host][item]
    assert status == "fail" and port in evidence
    others = [h for h in checks if h != host]
    assert all(checks[h][item][0] == "pass" for h in others if item in checks[h])
