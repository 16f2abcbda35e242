"""`roce-wizard plan --out` on bare hosts: every stage planned ahead, one runnable script per stage, predictions true.

A driver install renames the RDMA devices (inbox rdma-core `rocep59s0f0`, DOCA-OFED `mlx5_0`) and the network stage
gives each port the address its RoCE v2 GID comes from, so the later stages can only be planned ahead from predicted
facts. These tests hold the predictions to what the simulated hosts really show after the real run.
"""

from __future__ import annotations

import base64
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from steps.discovery.facts import DiscoveryFacts, NicPort
from steps.ofed.predict import predicted_device_names
from wizard.engine.predict import ipv4_mapped_gid, rename_everywhere

REPO = Path(__file__).resolve().parents[2]
EXAMPLE = REPO / "assets" / "answers.example.yaml"
STAGE_SCRIPTS = ["01-ofed.sh", "02-network.sh", "03-roce.sh", "04-gpudirect.sh", "05-nccl.sh", "06-inference.sh"]


ENV = {**os.environ, "ROCE_WIZARD_LAB_TIME_SCALE": "0.01"}


def cli(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "wizard", *args], capture_output=True, text=True, timeout=600, cwd=REPO, env=ENV
    )


def events(stdout: str) -> list[dict]:
    return [json.loads(line) for line in stdout.splitlines()]


def lab_file(state: Path, host: str, path: str) -> str | None:
    """A file on a simulated host's saved disk (the lab keeps disks as JSON under <state>/lab/)."""
    node = json.loads((state / "lab" / f"{host}.json").read_text())["tree"]
    parts = path.strip("/").split("/")
    for part in parts[:-1]:
        node = node.get(part, {}).get("c", {})
    leaf = node.get(parts[-1])
    return base64.b64decode(leaf["data"]).decode() if leaf else None


Runs = dict[str, subprocess.CompletedProcess[str]]


@pytest.fixture(scope="module")
def runs(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path, Runs]:
    """Plan the bare reference cluster, then run every stage for real on the same simulated hosts (headless, JSON
    events), then run again: one bring-up serves the plan's predictions and the headless run's promises."""
    base = tmp_path_factory.mktemp("ahead")
    state, out = base / "state", base / "plan"
    done: Runs = {}
    done["plan"] = cli("plan", "--demo", "--answers", str(EXAMPLE), "--out", str(out), "--state-dir", str(state))
    assert done["plan"].returncode == 0, done["plan"].stderr[-2000:]
    for run in ("first", "second"):
        done[run] = cli("--demo", "--answers", str(EXAMPLE), "--yes", "--json", "--state-dir", str(state))
    return state, out, done


@pytest.fixture(scope="module")
def planned_then_run(runs: tuple[Path, Path, Runs]) -> tuple[Path, Path, str]:
    state, out, done = runs
    assert done["first"].returncode == 0, done["first"].stderr[-3000:]
    return state, out, done["plan"].stdout


def test_the_demo_json_run_verifies_and_a_second_run_changes_nothing(runs: tuple[Path, Path, Runs]) -> None:
    state, _, done = runs
    first = done["first"]
    assert first.returncode == 0, first.stderr[-3000:]
    stream = events(first.stdout)  # every stdout line is one JSON event
    assert stream[0]["event"] == "run_started" and stream[0]["demo"] is True
    assert stream[-1] == {**stream[-1], "event": "run_finished", "exit_code": 0}
    assert "[simulated]" in first.stderr and "SIMULATED CLUSTER" in first.stderr
    second = done["second"]
    assert second.returncode == 0, second.stderr[-3000:]
    applied = [e for e in events(second.stdout) if e["event"] == "change_started"]
    assert applied == [], "a second run must plan nothing"
    status = cli("status", "--state-dir", str(state), "--json")
    doc = json.loads(status.stdout)
    assert doc["run"]["demo"] is True
    assert doc["hosts"]["server1"]["stages"]["discovery"]["status"] == "done"


def test_bare_hosts_get_one_script_per_stage_and_every_script_parses(planned_then_run: tuple[Path, Path, str]) -> None:
    _, out, _ = planned_then_run
    for host in ("server1", "server2"):
        scripts = sorted(p.name for p in (out / host).glob("*.sh"))
        assert scripts == STAGE_SCRIPTS
        for name in scripts:
            assert subprocess.run(["bash", "-n", str(out / host / name)]).returncode == 0, name
            assert "REFUSED" not in (out / host / name).read_text(), f"{host} {name} refuses on bare hosts"
    assert "server1: 01-ofed.sh 02-network.sh" in (out / "README.txt").read_text()
    assert "# server1" in planned_then_run[2]


def test_the_plan_writes_nccl_conf_and_the_inference_units_for_both_hosts(
    planned_then_run: tuple[Path, Path, str],
) -> None:
    _, out, _ = planned_then_run
    for host in ("server1", "server2"):
        files = out / host / "files" / "etc"
        assert "NCCL_IB_HCA==mlx5_0:1,mlx5_1:1,mlx5_2:1,mlx5_3:1" in (files / "nccl.conf").read_text()
        assert (files / "roce-wizard" / "inference.env").is_file()
        unit = (files / "systemd" / "system" / "roce-wizard-inference.service").read_text()
        assert "Requires=roce-wizard-qos.service" in unit, "one replica per node, started only on a lossless class"
        assert (
            "install -D -o root -g root -m 0644 files/etc/nccl.conf /etc/nccl.conf"
            in (out / host / "05-nccl.sh").read_text()
        )


def test_later_scripts_say_what_they_predict_and_stop_when_it_did_not_come_true(
    planned_then_run: tuple[Path, Path, str],
) -> None:
    _, out, stdout = planned_then_run
    ofed = (out / "server1" / "01-ofed.sh").read_text()
    roce = (out / "server1" / "03-roce.sh").read_text()
    assert "PREDICTED" not in ofed, "the first stage is planned from what the host shows now"
    assert "#   predicted: RDMA device rocep59s0f0 -> mlx5_0" in roce
    assert "test -e /sys/class/infiniband/mlx5_0 ||" in roce
    assert "RoCE v2 IPv4 GID index 3" in roce
    assert "cma_roce_tos -d mlx5_0 -p 1 -t 106" in roce, "RDMA-CM ToS goes to the device names DOCA gives"
    assert "roce: planned from PREDICTED facts" in stdout


def test_every_predicted_file_is_what_the_real_run_wrote(planned_then_run: tuple[Path, Path, str]) -> None:
    state, out, _ = planned_then_run
    compared = 0
    for host in ("server1", "server2"):
        for planned in (out / host / "files").rglob("*"):
            if not planned.is_file():
                continue
            path = "/" + str(planned.relative_to(out / host / "files"))
            written = lab_file(state, host, path)
            assert written == planned.read_text(), f"{host}:{path} differs from its plan"
            compared += 1
    assert compared >= 16, "netplan, sysctl, QoS script and unit, nccl.conf and inference units on both hosts"


def test_device_names_are_predicted_in_pci_order_and_only_physical_functions_count() -> None:
    ports = [
        NicPort(pci="0000:86:00.0", model="ConnectX-4 Lx", netdev="ens2f0np0", rdma_device="rocep134s0f0"),
        NicPort(pci="0000:3b:00.1", model="ConnectX-4 Lx", netdev="ens1f1np1", rdma_device="rocep59s0f1"),
        NicPort(pci="0000:3b:00.0", model="ConnectX-4 Lx", netdev="ens1f0np0", rdma_device="rocep59s0f0"),
        NicPort(pci="0000:3b:00.2", model="ConnectX-4 Lx VF", netdev="ens1f0v0", rdma_device="rocep59s0f2"),
    ]
    names = predicted_device_names(DiscoveryFacts(ports=ports))
    assert names == {"rocep59s0f0": "mlx5_0", "rocep59s0f1": "mlx5_1", "rocep134s0f0": "mlx5_2"}


def test_renaming_touches_whole_names_and_hca_tokens_but_not_prose() -> None:
    facts = {"a": ["rocep59s0f0", "rocep59s0f0:1"], "note": "rocep59s0f0 has no GID", "rocep59s0f0": 1}
    renamed = rename_everywhere(facts, {"rocep59s0f0": "mlx5_0"})
    assert renamed == {"a": ["mlx5_0", "mlx5_0:1"], "note": "rocep59s0f0 has no GID", "mlx5_0": 1}


def test_an_ipv4_gid_is_the_ipv4_mapped_address_as_sysfs_prints_it() -> None:
    assert ipv4_mapped_gid("192.168.11.1") == "0000:0000:0000:0000:0000:ffff:c0a8:0b01"


def test_rail_addresses_predict_the_next_free_roce_v2_gid_and_every_stage_sees_them() -> None:
    from tests.steps.facts_builder import view
    from tests.steps.test_network import RAILS, STEP, two_hosts
    from wizard.engine.predict import predicted_facts

    ans, facts = two_hosts(RAILS)
    v = view(ans, facts)
    prediction = STEP.predict(v, "server1", STEP.plan(v, "server1"))
    assert prediction is not None
    after = predicted_facts(v.facts["server1"], [prediction])
    port = next(p for p in after["discovery"]["ports"] if p["netdev"] == "ens1f0np0")
    v2 = [g for g in port["gids"] if g["version"] == "v2" and g["ipv4"]]
    assert [(g["ipv4"], g["gid"]) for g in v2] == [("192.168.11.1", "0000:0000:0000:0000:0000:ffff:c0a8:0b01")]
    assert port["ipv4"] == ["192.168.11.1/24"] and port["mtu"] == 9000
    assert v.facts["server1"]["discovery"]["ports"][0]["ipv4"] == [], "the real facts are never changed"
    assert any("cat /sys/class/infiniband/" in line and "/gids/" in line for line in prediction.guards)


def test_roce_lag_device_names_are_never_guessed_so_later_scripts_stop_until_re_planned() -> None:
    from tests.steps.facts_builder import view
    from tests.steps.test_network import LAG, STEP, two_hosts

    ans, facts = two_hosts(LAG)
    v = view(ans, facts)
    prediction = STEP.predict(v, "server1", STEP.plan(v, "server1"))
    assert prediction is not None and "not predicted" in prediction.values[0]
    assert prediction.guards[-1].endswith("exit 1")
