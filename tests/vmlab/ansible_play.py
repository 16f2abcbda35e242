"""ansible-playbook as an operator runs it on an exported project, and its recap per host."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
from pathlib import Path

RECAP = re.compile(r"^(\S+)\s*:\s*ok=(\d+)\s+changed=(\d+)\s+unreachable=(\d+)\s+failed=(\d+)", re.M)


def export_network_role(answers: Path, workdir: Path) -> Path:
    """`roce-wizard export ansible --only network` for ``answers`` into WORKDIR/ansible (its own state directory,
    so it can run beside a wizard using the lab's); the project folder."""
    from wizard.cli.export_ansible import main as export_ansible_cmd

    project = workdir / "ansible"
    argv = ["--answers", str(answers), "--only", "network", "--state-dir", str(workdir / "ansible-state")]
    assert export_ansible_cmd([*argv, "-o", str(project)]) == 0
    return project


def playbook(
    project: Path, timeout_s: float = 900
) -> tuple[subprocess.CompletedProcess[str], dict[str, dict[str, int]]]:
    """ansible-playbook site.yml in the project (its ansible.cfg applies); the recap per host."""
    env = {**os.environ, "ANSIBLE_NOCOLOR": "1", "ANSIBLE_FORCE_COLOR": "0"}
    proc = subprocess.run(
        [shutil.which("ansible-playbook") or "ansible-playbook", "site.yml"],
        cwd=project,
        capture_output=True,
        text=True,
        timeout=timeout_s,
        env=env,
    )
    recap = {
        m[1]: {"ok": int(m[2]), "changed": int(m[3]), "unreachable": int(m[4]), "failed": int(m[5])}
        for m in RECAP.finditer(proc.stdout)
    }
    return proc, recap
