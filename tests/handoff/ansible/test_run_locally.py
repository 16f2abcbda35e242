"""Pieces of the project run by Ansible itself on this machine (connection local, nothing outside a temp dir changes).

The revert script Ansible renders is exactly the one apply.py arms; the verification asserts pass on a port that is as
planned and fail, naming host and port, on one that is not.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import yaml

from tests.handoff.ansible.conftest import Exported
from wizard.engine.apply import ArmedRevert, revert_script
from wizard.engine.step import Change, FileWrite, Impact, RemoteCommand
from wizard.export.ansible_guard import revert_template

PLAYBOOK = shutil.which("ansible-playbook")
pytestmark = pytest.mark.skipif(PLAYBOOK is None, reason="ansible-core is not installed (pip install ansible-core)")
ENV = {**os.environ, "ANSIBLE_NOCOLOR": "1", "ANSIBLE_LOCAL_TEMP": "/tmp/.ansible-roce-wizard-tests"}


def run_local(
    tmp_path: Path, tasks: list[dict[str, Any]], variables: dict[str, Any]
) -> subprocess.CompletedProcess[str]:
    play = [
        {
            "name": "Local test",
            "hosts": "localhost",
            "connection": "local",
            "gather_facts": False,
            "vars": variables,
            "tasks": tasks,
        }
    ]
    (tmp_path / "play.yml").write_text(yaml.safe_dump(play, sort_keys=False))
    return subprocess.run(
        [PLAYBOOK or "", "-i", "localhost,", "-e", f"ansible_python_interpreter={sys.executable}", "play.yml"],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        env=ENV,
        timeout=120,
    )


CHANGE = Change(
    summary="write /etc/netplan/60-roce-wizard.yaml (bond0 10.78.0.1/24) and apply it",
    impact=Impact.DISRUPTIVE,
    files=[
        FileWrite(path="/etc/netplan/60-roce-wizard.yaml", content="network: {}\n", mode=0o600),
        FileWrite(path="/etc/sysctl.d/60-roce-wizard.conf", content="x = 1\n"),
    ],
    commands=[RemoteCommand(argv=["netplan", "apply"])],
    creates_links=["bond0"],
)


def render(tmp_path: Path, results: dict[str, Any]) -> str:
    (tmp_path / "revert.sh.j2").write_text(revert_template(CHANGE, "network_c0"))
    out = tmp_path / "revert.sh"
    proc = run_local(
        tmp_path,
        [
            {
                "name": "Render",
                "ansible.builtin.template": {"src": str(tmp_path / "revert.sh.j2"), "dest": str(out), "mode": "0700"},
            }
        ],
        {"network_c0_revert": "0badcafe", **results},
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr
    return out.read_text()


def test_the_rendered_revert_script_is_apply_pys_own_for_the_files_that_changed(tmp_path: Path) -> None:
    backup = "/etc/netplan/60-roce-wizard.yaml.4242.2026-01-01@10:00:00~"
    text = render(
        tmp_path, {"network_c0_f0": {"changed": True, "backup_file": backup}, "network_c0_f1": {"changed": True}}
    )
    armed = ArmedRevert("roce-wizard-revert-0badcafe", "", 0.0)
    expected = revert_script(CHANGE, [(CHANGE.files[0].path, backup), (CHANGE.files[1].path, None)], armed)
    assert text == expected
    assert (
        "cp -a -- '/etc/netplan/60-roce-wizard.yaml.4242.2026-01-01@10:00:00~' /etc/netplan/60-roce-wizard.yaml" in text
    )
    assert "rm -f -- /etc/sysctl.d/60-roce-wizard.conf" in text
    assert "ip link delete dev bond0" in text and text.rstrip().endswith("roce-wizard-revert-0badcafe.reverted")


def test_the_revert_leaves_alone_a_file_this_run_did_not_change(tmp_path: Path) -> None:
    text = render(tmp_path, {"network_c0_f0": {"changed": True}, "network_c0_f1": {"changed": False}})
    assert "rm -f -- /etc/netplan/60-roce-wizard.yaml" in text
    assert "60-roce-wizard.conf" not in text


def _lo() -> dict[str, Any]:
    shown = json.loads(
        subprocess.run(["ip", "-j", "addr", "show", "dev", "lo"], capture_output=True, text=True).stdout
    )[0]
    inet = next(a for a in shown["addr_info"] if a["family"] == "inet")
    arp = Path("/proc/sys/net/ipv4/conf/lo/arp_ignore").read_text().strip()
    return {
        "interfaces": [{"netdev": "lo", "address": f"{inet['local']}/{inet['prefixlen']}", "mtu": shown["mtu"]}],
        "bonds": [],
        "sysctls": [
            {"key": "net.ipv4.conf.lo.arp_ignore", "path": "/proc/sys/net/ipv4/conf/lo/arp_ignore", "value": arp}
        ],
    }


@pytest.mark.skipif(shutil.which("ip") is None, reason="iproute2 is not installed")
def test_the_network_asserts_pass_on_a_port_as_planned(exported: Exported, tmp_path: Path) -> None:
    verify = exported.project / "roles" / "network" / "tasks" / "verify.yml"
    tasks = [{"name": "Verify", "ansible.builtin.include_tasks": str(verify)}]
    proc = run_local(tmp_path, tasks, {"roce_wizard_network": _lo()})
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "failed=0" in proc.stdout


@pytest.mark.skipif(shutil.which("ip") is None, reason="iproute2 is not installed")
def test_the_network_asserts_fail_naming_host_and_port_when_the_mtu_or_address_differs(
    exported: Exported, tmp_path: Path
) -> None:
    verify = exported.project / "roles" / "network" / "tasks" / "verify.yml"
    tasks = [{"name": "Verify", "ansible.builtin.include_tasks": str(verify)}]
    wrong = _lo()
    wrong["interfaces"][0].update(mtu=9000)
    proc = run_local(tmp_path, tasks, {"roce_wizard_network": wrong})
    assert proc.returncode != 0
    assert "localhost port lo: expected MTU 9000" in proc.stdout
    wrong = _lo()
    wrong["interfaces"][0].update(address="192.168.11.1/24")
    proc = run_local(tmp_path, tasks, {"roce_wizard_network": wrong})
    assert proc.returncode != 0
    assert "localhost port lo: expected MTU" in proc.stdout and "and address 192.168.11.1/24" in proc.stdout
    wrong = _lo()
    wrong["sysctls"][0]["value"] = "7"
    proc = run_local(tmp_path, tasks, {"roce_wizard_network": wrong})
    assert proc.returncode != 0
    assert "net.ipv4.conf.lo.arp_ignore should be 7" in proc.stdout


def test_hosts_run_their_own_task_files_at_the_same_time_not_one_after_another(tmp_path: Path) -> None:
    """The play the export writes, with two hosts whose task files each wait for the other to have started: under
    the default linear strategy Ansible runs the two include groups one after another and host a waits in vain."""
    from wizard.export.ansible_project import GROUP, site

    role = tmp_path / "roles" / "both" / "tasks"
    (role / "hosts").mkdir(parents=True)
    (role / "main.yml").write_text(
        yaml.safe_dump([{"name": "Own file", "ansible.builtin.include_tasks": "hosts/{{ inventory_hostname }}.yml"}])
    )
    for me, peer in (("a", "b"), ("b", "a")):
        tasks = [
            {"name": "Started", "ansible.builtin.file": {"path": str(tmp_path / f"{me}.started"), "state": "touch"}},
            {"name": "The peer runs too", "ansible.builtin.wait_for": {"path": str(tmp_path / f"{peer}.started"),
                                                                       "timeout": 20}},
        ]  # fmt: skip
        (role / "hosts" / f"{me}.yml").write_text(yaml.safe_dump(tasks))
    (tmp_path / "site.yml").write_text(yaml.safe_dump(site(["both"]), sort_keys=False))
    local = {"ansible_connection": "local", "ansible_python_interpreter": sys.executable}
    inventory = {"all": {"children": {GROUP: {"hosts": {"a": local, "b": local}}}}}
    (tmp_path / "inventory.yml").write_text(yaml.safe_dump(inventory))
    proc = subprocess.run(
        [PLAYBOOK or "", "-i", "inventory.yml", "site.yml"], cwd=tmp_path, capture_output=True, text=True, env=ENV,
        timeout=120,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stdout[-3000:]


@pytest.mark.skipif(shutil.which("ip") is None, reason="iproute2 is not installed")
def test_the_bond_assert_reads_ip_details_and_names_a_link_that_is_not_the_planned_bond(
    exported: Exported, tmp_path: Path
) -> None:
    """A bond's mode and hash policy come from the same `ip -j -d addr show` read as the ports (a real bond's
    linkinfo: tests/fixtures/real-outputs/ip_json/vmlab-debian12-bond-rail-rxe.txt; the qemu lab passes it)."""
    verify = exported.project / "roles" / "network" / "tasks" / "verify.yml"
    assert "/proc/net/bonding" not in verify.read_text(), "no module run per bond"
    tasks = [{"name": "Verify", "ansible.builtin.include_tasks": str(verify)}]
    planned = _lo()
    planned["bonds"] = [{"name": "lo", "mode": "balance-xor", "transmit_hash_policy": "layer3+4"}]
    proc = run_local(tmp_path, tasks, {"roce_wizard_network": planned})
    assert proc.returncode != 0
    assert "localhost bond lo: expected mode balance-xor, hash layer3+4; ip -d shows:" in proc.stdout


def test_a_hosts_directories_are_made_in_one_task_that_reports_changed_only_when_it_made_one(tmp_path: Path) -> None:
    from wizard.export.ansible_guard import dirs_task

    there, missing = tmp_path / "etc" / "netplan", tmp_path / "etc" / "sysctl.d"
    there.mkdir(parents=True)
    (there / "keep").write_text("old\n")
    task = dirs_task("Network", [str(there), str(missing)], "network_dirs")
    task.pop("become")  # a temporary directory of this user's
    first = run_local(tmp_path, [task], {})
    assert first.returncode == 0, first.stdout + first.stderr
    assert "changed=1" in first.stdout and missing.is_dir() and (there / "keep").read_text() == "old\n"
    assert oct(missing.stat().st_mode & 0o777) == "0o755"
    again = run_local(tmp_path, [task], {})
    assert again.returncode == 0 and "changed=0" in again.stdout, again.stdout
