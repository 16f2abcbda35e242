"""One exported Ansible project of the simulated reference pair (and its plan as JSON) per test session."""

from __future__ import annotations

import json
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
import yaml

from wizard.cli.export_ansible import main as export_ansible_cmd


@dataclass
class Exported:
    project: Path
    plan: dict[str, Any]
    """`roce-wizard plan --demo --json` of the same simulated hosts: the plans the project must carry."""

    def yaml(self, rel: str) -> Any:
        return yaml.safe_load((self.project / rel).read_text())

    def host_tasks(self, stage: str, host: str) -> list[dict[str, Any]]:
        return self.yaml(f"roles/{stage}/tasks/hosts/{host}.yml")


def flatten(tasks: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Every task, block contents in order (rescue included), blocks themselves too."""
    out = []
    for task in tasks:
        out.append(task)
        out += flatten(task.get("block", [])) + flatten(task.get("rescue", []))
    return out


@pytest.fixture(scope="session")
def exported(tmp_path_factory: pytest.TempPathFactory) -> Exported:
    base = tmp_path_factory.mktemp("ansible-export")
    state = base / "state"
    project = base / "project"
    assert export_ansible_cmd(["--demo", "--state-dir", str(state), "-o", str(project)]) == 0
    proc = subprocess.run(
        [sys.executable, "-m", "wizard", "plan", "--demo", "--json", "--state-dir", str(state)],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert proc.returncode == 0, proc.stderr
    return Exported(project, json.loads(proc.stdout))
