"""Seed 003's InfiniBand cluster brought up end to end (`--demo --profile ib-seed003`): IPoIB rails, no RoCE QoS,
NCCL and perftest over IB judged against each group's IB link rate."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import pytest

from wizard.cli.main import main
from wizard.engine.state import StateStore
from wizard.lab.cluster import Lab
from wizard.lab.disk import load_disk
from wizard.validate.model import RailEnd
from wizard.validate.perftest import Spec, side_argv

HOSTS = ("v100-01", "v100-02", "a100-01", "a100-02")
ROOT = Path(__file__).resolve().parents[2]


def _file(state: Path, host: str, path: str) -> str:
    lab = Lab.ib_seed003()
    sim = lab.host(host)
    assert load_disk(sim, state / "lab" / f"{host}.json")
    return sim.fs.read_text(path)


def _checks(state: Path, host: str, stage: str) -> dict[str, str]:
    return {c.id: c.evidence for c in StateStore(state).host(host).stage(stage).checks}


@pytest.fixture(scope="module")
def brought_up(tmp_path_factory: pytest.TempPathFactory) -> Path:
    state = tmp_path_factory.mktemp("ib")
    assert main(["--demo", "--profile", "ib-seed003", "--yes", "--state-dir", str(state)]) == 0
    return state


def test_every_stage_verifies_with_ipoib_rails_and_no_roce_qos(brought_up: Path) -> None:
    store = StateStore(brought_up)
    for host in HOSTS:
        record = store.host(host)
        assert all(s.status == "done" for s in record.stages.values()), host
        assert "InfiniBand: lossless by credit-based flow control" in record.stage("roce").reason
    netplan = _file(brought_up, "a100-01", "/etc/netplan/60-roce-wizard.yaml")
    assert "ibp75s0:" in netplan and "10.20.0.3/24" in netplan and "ibp177s0:" in netplan
    assert "ib_port:mlx5_0" in _checks(brought_up, "a100-01", "network")


def test_nccl_conf_names_the_ib_ports_without_traffic_class_or_gid_index(brought_up: Path) -> None:
    conf = _file(brought_up, "v100-01", "/etc/nccl.conf")
    assert "NCCL_IB_HCA==mlx5_0:1,mlx5_1:1" in conf
    assert "NCCL_IB_TC" not in conf and "NCCL_IB_GID_INDEX" not in conf and "NCCL_IB_SL" not in conf
    transport = _checks(brought_up, "v100-01", "nccl")["transport"]
    assert "network IB" in transport and "NET/IB" in transport


def test_bwtest_over_ib_passes_each_rail_against_its_groups_ib_rate(brought_up: Path) -> None:
    assert main(["bwtest", "--demo", "--profile", "ib-seed003", "--state-dir", str(brought_up), "--no-sweep"]) == 0
    report = json.loads((brought_up / "validation" / "latest.json").read_text(encoding="utf-8"))
    expected = {(r["server"]["host"], r["client"]["host"]): r["expected_gbps"] for r in report["together"]}
    assert expected[("a100-01", "a100-02")] == 200.0  # HDR between A100 nodes
    assert all(e == 100.0 for pair, e in expected.items() if any(h.startswith("v100") for h in pair))
    assert all("-x" not in r["command"].split() and "--tclass" not in r["command"] for r in report["together"])
    lint = {c["id"]: c["status"] for c in report["lint"]}
    assert lint["trust"] == lint["pfc"] == lint["gid"] == "skip"


def test_a_port_trained_at_1x_fails_its_rail_in_bwtest(tmp_path: Path, brought_up: Path) -> None:
    state = tmp_path / "state"
    import shutil

    shutil.copytree(brought_up, state)
    args = ["bwtest", "--demo", "--profile", "ib-seed003", "--state-dir", str(state), "--no-sweep", "--no-nccl"]
    assert main([*args, "--fault", "a100-02:ib_link_degraded=ibp75s0"]) == 1
    report = json.loads((state / "validation" / "latest.json").read_text(encoding="utf-8"))
    bad = [r for r in report["together"] if r["status"] == "fail"]
    assert bad and all("a100-02" in (r["server"]["host"], r["client"]["host"]) and r["rail"] == 0 for r in bad)


def test_perftest_on_ib_connects_by_lid_with_the_service_level_asked() -> None:
    end = RailEnd(host="a", netdev="ibp75s0", device="mlx5_0", ib=True, ib_sl=3, ipv4="10.20.0.3")
    argv = side_argv(Spec("ib_write_bw", end, end, 18516, 106), end)
    assert "-x" not in argv and not any(a.startswith("--tclass") for a in argv) and "--sl=3" in argv
    roce = RailEnd(host="a", netdev="ens1f0np0", device="mlx5_0", gid_index=3, ipv4="10.0.0.1")
    assert "--tclass=106" in side_argv(Spec("ib_write_bw", roce, roce, 18516, 106), roce)


def test_the_ib_lab_answers_ib_queries_without_any_roce_gid() -> None:
    lab = Lab.ib_seed003()
    host = lab.host("v100-01")
    asyncio.run(host.start_units())
    gids = asyncio.run(host.run("grep -sH . /sys/class/infiniband/*/ports/1/gid_attrs/types/*")).stdout
    assert "RoCE v2" not in gids


def test_the_seeds_model_is_served_as_fp16_because_v100_has_no_bf16(brought_up: Path) -> None:
    unit = _file(brought_up, "v100-01", "/etc/systemd/system/roce-wizard-inference.service")
    assert "DeepSeek-R1-Distill-Qwen-32B" in unit and "--dtype half" in unit
    for host in HOSTS:  # one replica per node (the model fits one), all behind the entry point
        assert StateStore(brought_up).host(host).stage("inference").status == "done"


def test_a_replica_spanning_two_v100_nodes_runs_its_nccl_over_ib(tmp_path: Path, brought_up: Path) -> None:
    import shutil

    import yaml

    state = tmp_path / "state"
    shutil.copytree(brought_up, state)
    answers = yaml.safe_load((ROOT / "assets" / "answers.ib-seed003.yaml").read_text(encoding="utf-8"))
    answers["inference"].update(layout="span", pipeline_parallel_size=2)  # the seed's multi-node serving
    path = tmp_path / "span.yaml"
    path.write_text(yaml.safe_dump(answers), encoding="utf-8")
    args = ["--demo", "--profile", "ib-seed003", "--answers", str(path), "--yes", "--state-dir", str(state)]
    assert main([*args, "--only", "inference"]) == 0
    engine = _checks(state, "v100-01", "inference")["engine_nccl"]
    assert "over NET/IB" in engine and "mlx5_0:1/IB mlx5_1:1/IB" in engine


def _v100_pair(tmp_path: Path, mode: str) -> Path:
    import yaml

    answers = yaml.safe_load((ROOT / "assets" / "answers.ib-seed003.yaml").read_text(encoding="utf-8"))
    answers["hosts"] = answers["hosts"][:2]
    answers["fabric"]["groups"] = answers["fabric"]["groups"][:1]
    answers["discovery"]["expect_rdma_ports"] = 2
    answers["network"].update(topology="bond", rails=[], fabric="switched")
    answers["network"]["bonds"] = [
        {"name": "bond0", "mode": mode, "members": ["ibp94s0f0", "ibp94s0f1"], "subnet": "10.30.0.0/24"}
    ]
    answers["inference"]["enabled"] = False
    path = tmp_path / f"bond-{mode}.yaml"
    path.write_text(yaml.safe_dump(answers), encoding="utf-8")
    return path


def test_an_ipoib_bond_is_active_backup_for_ip_while_nccl_keeps_the_ports_own_hcas(tmp_path: Path) -> None:
    state = tmp_path / "state"
    args = ["--demo", "--profile", "ib-seed003", "--answers", str(_v100_pair(tmp_path, "active-backup")), "--yes"]
    assert main([*args, "--state-dir", str(state), "--only", "discovery,ofed,network,gpudirect,nccl"]) == 0
    netplan = _file(state, "v100-01", "/etc/netplan/60-roce-wizard.yaml")
    assert "mode: active-backup" in netplan and "fail-over-mac-policy: active" in netplan
    assert "10.30.0.1/24" in netplan
    conf = _file(state, "v100-01", "/etc/nccl.conf")
    assert "NCCL_IB_HCA==mlx5_0:1,mlx5_1:1" in conf  # never a bond device: there is no LAG on InfiniBand


def test_an_ipoib_bond_in_another_mode_is_refused_with_the_reason(tmp_path: Path) -> None:
    state = tmp_path / "state"
    args = ["--demo", "--profile", "ib-seed003", "--answers", str(_v100_pair(tmp_path, "802.3ad")), "--yes"]
    assert main([*args, "--state-dir", str(state), "--only", "discovery,ofed,network"]) == 1
    reason = StateStore(state).host("v100-01").stage("network").reason
    assert "IPoIB" in reason and "active-backup only" in reason


def test_a_service_level_lands_on_an_operating_lane_and_reaches_nccl_and_perftest(tmp_path: Path) -> None:
    import yaml

    answers = yaml.safe_load((ROOT / "assets" / "answers.ib-seed003.yaml").read_text(encoding="utf-8"))
    answers["fabric"]["ib_sl"] = 3
    answers["inference"]["enabled"] = False
    path = tmp_path / "sl.yaml"
    path.write_text(yaml.safe_dump(answers), encoding="utf-8")
    state = tmp_path / "state"
    args = ["--demo", "--profile", "ib-seed003", "--answers", str(path), "--yes", "--state-dir", str(state)]
    assert main([*args, "--only", "discovery,ofed,network,roce,gpudirect,nccl"]) == 0
    roce = {c.id: (c.status, c.evidence) for c in StateStore(state).host("a100-01").stage("roce").checks}
    assert roce == {"ib_sl": ("pass", "SL 3 -> mlx5_0 VL 3, mlx5_1 VL 3")}  # no RoCE QoS item on IB hosts
    assert "NCCL_IB_SL=3" in _file(state, "a100-01", "/etc/nccl.conf")


def test_a_service_level_the_sm_maps_to_the_drop_lane_fails_with_the_fix() -> None:
    from steps.roce.ib_sl import IbLane, lane_check, parse_oper_vls, parse_sl2vl

    table = (
        "# SL2VL table: Lid 3\n#                 SL: | 0| 1|\nports: in  0, out  0: "
        + "|".join(f"{v:2d}" for v in [0, 1, 2, 15] + [0] * 12)
        + "|\n"
    )
    table = table.replace("ports: in  0, out  0: ", "ports: in  0, out  0: |")
    vls = parse_sl2vl(table)
    assert vls is not None and vls[3] == 15 and parse_oper_vls("OperVLs:.........................VL0-3") == 4
    item = lane_check(3, [IbLane(device="mlx5_0", lid=3, sl=3, vl=15, oper_vls=4)])
    assert item.status == "fail" and "VL 15: dropped" in item.evidence and "qos_sl2vl" in (item.fix or "")
    beyond = lane_check(2, [IbLane(device="mlx5_0", lid=3, sl=2, vl=5, oper_vls=4)])
    assert beyond.status == "fail" and "only VL0-3 operate" in beyond.evidence


def test_the_lab_perftest_takes_a_service_level_and_refuses_one_out_of_range() -> None:
    from wizard.lab import packages

    lab = Lab.ib_seed003()
    host = lab.host("v100-01")
    asyncio.run(host.start_units())
    packages.install_files(host, packages.catalog("ubuntu")["perftest"])
    done = asyncio.run(host.run("ib_write_bw -d ibp94s0f0 --sl=16 -F 10.20.0.2"))
    assert done.status != 0 and "SL must be between 0 and 15" in done.stderr
