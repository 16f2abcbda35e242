"""`roce-wizard rollback`: the first backup of each file wins, new files go, services and netplan follow."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from wizard.engine.rollback import original_path, rollback_change
from wizard.engine.state import StateStore

ENV = {**os.environ, "ROCE_WIZARD_LAB_TIME_SCALE": "0.02"}


def cli(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "wizard", *args], capture_output=True, text=True, timeout=300, env=ENV)


def test_backup_paths_map_back_to_the_original_file() -> None:
    assert original_path("/var/lib/roce-wizard/backups/20261122T1/network/etc/netplan/a.yaml") == "/etc/netplan/a.yaml"


def test_the_oldest_backup_is_restored_and_created_files_are_removed(tmp_path: Path) -> None:
    store = StateStore(tmp_path)
    record = store.host("h1")
    record.stage("network").backups += [
        "/var/lib/roce-wizard/backups/r1/network/etc/netplan/00-x.yaml",
        "/var/lib/roce-wizard/backups/r2/network/etc/netplan/00-x.yaml",
    ]
    record.stage("roce").created += ["/etc/systemd/system/roce-wizard-qos.service"]
    change = rollback_change(store, "h1", ["roce", "network"])
    assert change is not None
    shells = [c.shell() for c in change.commands]
    assert (
        "sudo cp -a -- /var/lib/roce-wizard/backups/r1/network/etc/netplan/00-x.yaml /etc/netplan/00-x.yaml" in shells
    )
    assert not any("/r2/" in s for s in shells), "the first backup holds the state before the wizard"
    assert shells[0] == "sudo systemctl disable --now roce-wizard-qos.service"
    assert "sudo rm -f -- /etc/systemd/system/roce-wizard-qos.service" in shells
    assert shells[-1] == "sudo netplan apply" and "sudo systemctl daemon-reload" in shells
    assert rollback_change(store, "h1", ["nccl"]) is None


def test_a_rollback_deletes_the_bonds_the_stage_created_then_reapplies_netplan(tmp_path: Path) -> None:
    store = StateStore(tmp_path)
    network = store.host("h1").stage("network")
    network.created += ["/etc/netplan/60-roce-wizard.yaml"]
    network.created_links += ["bond0"]
    change = rollback_change(store, "h1", ["network"])
    assert change is not None
    shells = [c.shell() for c in change.commands]
    assert shells[-2:] == ["sudo ip link delete dev bond0", "sudo netplan apply"]
    delete = change.commands[-2]
    assert 1 in delete.ok_exit_codes, "a bond already gone (reboot, earlier rollback) is not an error"


def test_rollback_on_the_demo_undoes_the_network_stage_and_it_can_be_applied_again(tmp_path: Path) -> None:
    state = tmp_path / "state"
    assert cli("--demo", "--only", "discovery,ofed,network", "--yes", "--state-dir", str(state)).returncode == 0
    shown = cli("rollback", "--demo", "--state-dir", str(state), "--stage", "network", "--host", "server2")
    assert shown.returncode == 1 and "add --yes" in shown.stderr
    assert "$ sudo rm -f -- /etc/netplan/60-roce-wizard.yaml" in shown.stdout
    done = cli("rollback", "--demo", "--state-dir", str(state), "--stage", "network", "--host", "server2", "--yes")
    assert done.returncode == 0, done.stdout + done.stderr
    status = json.loads(cli("status", "--state-dir", str(state), "--json").stdout)
    assert status["hosts"]["server2"]["stages"]["network"]["status"] == "pending"
    assert status["hosts"]["server1"]["stages"]["network"]["status"] == "done"
    again = cli("--demo", "--only", "network", "--yes", "--json", "--state-dir", str(state))
    assert again.returncode == 0
    applied = {json.loads(ln)["host"] for ln in again.stdout.splitlines() if '"change_started"' in ln}
    assert applied == {"server2"}
