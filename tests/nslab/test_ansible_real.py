"""The exported Ansible project against real OpenSSH hosts, for what namespace hosts can carry.

A namespace host has real sshd, sudo and host keys but no ConnectX card, and it shares the machine's /var and /usr:
nothing may be installed there. What it carries is the reach (the inventory's user, key, strict known_hosts and the
bastion hop) and the wizard's verdict: a host the wizard refuses at discovery is refused by every role with the
wizard's own words, before any task changes it. The qemu lab carries the network stage for real
(tests/vmlab/test_real_kernel.py).
"""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest

from tests.nslab.conftest import NsCluster
from tests.nslab.test_jump_host import answers as bastion_answers
from tests.nslab.test_jump_host import jump_lab  # noqa: F401 - the bastion fixture
from tests.vmlab.ansible_play import playbook
from wizard.cli.export_ansible import main as export_ansible_cmd

pytestmark = [
    pytest.mark.nslab,
    pytest.mark.skipif(shutil.which("ansible-playbook") is None, reason="ansible-core is not installed"),
]
REFUSAL = "ConnectX ports: none found by lspci"
MARKERS = Path("/var/lib/roce-wizard/ansible")  # the project's "this change ran" markers (shared /var here)


def export(answers: Path, workdir: Path, capsys: pytest.CaptureFixture[str]) -> Path:
    project = workdir / "ansible"
    code = export_ansible_cmd(["--answers", str(answers), "--state-dir", str(workdir / "state"), "-o", str(project)])
    assert code == 1, "hosts the wizard refuses are named, and the export says so"
    return project


def assert_reached_as_root(project: Path, hosts: list[str]) -> None:
    """An ad-hoc command through the project's inventory and ansible.cfg: each host answers, as root under become
    (the refusal below is decided on the controller and would pass without ever reaching a host)."""
    proc = subprocess.run(
        [shutil.which("ansible") or "ansible", "roce_wizard", "-b", "-m", "ansible.builtin.command", "-a", "id -un"],
        cwd=project, capture_output=True, text=True, timeout=180, env={**os.environ, "ANSIBLE_NOCOLOR": "1"},
    )  # fmt: skip
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-2000:]
    for host in hosts:
        assert f"{host} | CHANGED | rc=0 >>\nroot" in proc.stdout, proc.stdout


def assert_refused_untouched(project: Path, hosts: list[str]) -> None:
    assert_reached_as_root(project, hosts)
    before = sorted(MARKERS.iterdir()) if MARKERS.exists() else []
    proc, recap = playbook(project, timeout_s=300)
    assert proc.returncode != 0
    assert set(recap) == set(hosts), proc.stdout[-3000:] + proc.stderr[-2000:]
    for host in hosts:
        # Reached (not unreachable) and failed by the refusal, with nothing changed.
        assert recap[host] == {"ok": recap[host]["ok"], "changed": 0, "unreachable": 0, "failed": 1}, proc.stdout
        assert f'fatal: [{host}]: FAILED! => {{"changed": false, "msg": "{REFUSAL}"}}' in proc.stdout
    assert "apt-get" not in proc.stdout, "no task of a refused host ran"
    assert (sorted(MARKERS.iterdir()) if MARKERS.exists() else []) == before


@pytest.mark.hosts(2)
def test_the_inventory_reaches_real_hosts_and_a_refused_host_is_failed_with_the_wizards_reason(
    ns_cluster: NsCluster, capsys: pytest.CaptureFixture[str]
) -> None:
    project = export(ns_cluster.answers(), ns_cluster.workdir, capsys)
    assert f"roce-wizard: h1: not planned: {REFUSAL}\n" in capsys.readouterr().err
    assert_refused_untouched(project, ["h1", "h2"])


def test_hosts_behind_a_bastion_are_reached_with_the_key_and_known_hosts_of_the_answers(
    jump_lab: NsCluster,  # noqa: F811
    capsys: pytest.CaptureFixture[str],
) -> None:
    # The hosts drop SSH from this machine and accept it from the bastion; no ~/.ssh/config names the bastion, so
    # the hop must carry the answers' key and known_hosts itself (a bare ProxyJump would not).
    answers = bastion_answers(jump_lab, jump_host=f"ops@{jump_lab.lab.hosts[0].address}")
    project = export(answers, jump_lab.workdir, capsys)
    assert_refused_untouched(project, [h.name for h in jump_lab.lab.hosts[1:]])
