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


def lint(project: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [LINT or "ansible-lint", "--offline", "--nocolor", "--profile", "production"],
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
def test_the_project_passes_ansible_lint_at_the_production_profile(exported: Exported) -> None:
    proc = lint(exported.project)
    assert proc.returncode == 0, proc.stdout[-4000:] + proc.stderr[-4000:]
    assert "Passed" in proc.stdout + proc.stderr


@pytest.mark.skipif(LINT is None, reason="ansible-lint is not installed (pip install ansible-lint)")
def test_ansible_lint_does_reject_a_command_that_would_report_changed_on_every_run(
    exported: Exported, tmp_path: Path
) -> None:
    project = tmp_path / "project"
    shutil.copytree(exported.project, project)
    path = project / "roles" / "network" / "tasks" / "hosts" / "server1.yml"
    tasks = yaml.safe_load(path.read_text())
    tasks.append(
        {"name": "Network | a command nobody guarded", "ansible.builtin.command": {"argv": ["netplan", "apply"]}}
    )
    path.write_text("---\n" + yaml.safe_dump(tasks, sort_keys=False, width=100))
    proc = lint(project)
    assert proc.returncode != 0
    assert "no-changed-when" in proc.stdout + proc.stderr
