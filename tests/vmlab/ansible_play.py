"""ansible-playbook as an operator runs it on an exported project, and its recap per host."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
from pathlib import Path

RECAP = re.compile(r"^(\S+)\s*:\s*ok=(\d+)\s+changed=(\d+)\s+unreachable=(\d+)\s+failed=(\d+)", re.M)


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
