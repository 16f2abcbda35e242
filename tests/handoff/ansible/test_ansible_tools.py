"""Ansible's own tools accept the exported project: ansible-playbook --syntax-check and ansible-lint (production)."""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest
import yaml

from tests.handoff.ansible.conftest import Exported

PLAYBOOK = shutil.which("ansible-playbook")
LINT = shutil.which("ansible-lint")
ENV = {**os.environ, "ANSIBLE_NOCOLOR": "1", "NO_COLOR": "1", "ANSIBLE_LOCAL_TEMP": "/tmp/.ansible-roce-wizard-tests"}


def lint(project: Path, *extra: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [LINT or "ansible-lint", "--offline", "--nocolor", "--profile", "production", *extra],
        cwd=project,
        capture_output=True,
        text=True,
        timeout=300,
        env=ENV,
    )


@pytest.mark.skipif(PLAYBOOK is None, reason="ansible-core is not installed (pip install ansible-core)")
def test_the_playbook_passes_ansible_playbooks_syntax_check(exported: Exported) -> None:
    proc = subprocess.run(
        [PLAYBOOK or "", "--syntax-check", "site.yml"], cwd=exported.project, capture_output=True, text=True, env=ENV
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "playbook: site.yml" in proc.stdout


@pytest.mark.skipif(LINT is None, reason="ansible-lint is not installed (pip install ansible-lint)")
def test_ansible_lint_at_the_production_profile_finds_only_a_command_added_unguarded(
    exported: Exported, tmp_path: Path
) -> None:
    """One ansible-lint run (tens of seconds each) proves both: the exported project passes the production profile,
    and the linter does fail it: the one violation it reports is the command added here, which would report
    changed on every run."""
    project = tmp_path / "project"
    shutil.copytree(exported.project, project)
    path = project / "roles" / "network" / "tasks" / "hosts" / "server1.yml"
    added = (
        "- name: Network | a command nobody guarded\n"
        "  ansible.builtin.command:\n    argv:\n      - netplan\n      - apply\n"
    )
    path.write_text(path.read_text() + added)  # appended as written, in the file's own layout
    assert yaml.safe_load(path.read_text())[-1]["name"] == "Network | a command nobody guarded"
    proc = lint(project, "--format", "pep8")
    assert proc.returncode != 0
    found = [line for line in proc.stdout.splitlines() if line.strip()]
    assert len(found) == 1, proc.stdout[-4000:] + proc.stderr[-2000:]
    assert "roles/network/tasks/hosts/server1.yml" in found[0] and "no-changed-when" in found[0], found
