"""Crash anywhere, resume: a CI sample of bench/chaos.py (SIGKILL the headless demo, resume, check the hosts)."""

from __future__ import annotations

import base64
import importlib.util
import json
import subprocess
import sys
from pathlib import Path
from types import ModuleType

import pytest

ROOT = Path(__file__).resolve().parents[2]


def load_chaos() -> ModuleType:
    spec = importlib.util.spec_from_file_location("bench_chaos", ROOT / "bench" / "chaos.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules["bench_chaos"] = module
    spec.loader.exec_module(module)
    return module


chaos = load_chaos()


def image(files: dict[str, str], dirs: tuple[str, ...] = ()) -> dict:
    """A disk image in wizard/lab/disk.py's format holding ``files`` (and empty ``dirs``)."""
    tree: dict = {}

    def folder(path: str) -> dict:
        node = {"c": tree}
        for part in path.strip("/").split("/"):
            node = node["c"].setdefault(part, {"t": "d", "mode": 0o755, "uid": 0, "gid": 0, "c": {}})
        return node

    for path in dirs:
        folder(path)
    for path, text in files.items():
        parent, name = path.rsplit("/", 1)
        data = base64.b64encode(text.encode()).decode()
        folder(parent)["c"][name] = {"t": "f", "mode": 0o644, "uid": 0, "gid": 0, "data": data}
    return {"version": 2, "host": "h1", "tree": tree}


def write_disk(tmp_path: Path, files: dict[str, str]) -> Path:
    lab = tmp_path / "lab"
    lab.mkdir()
    (lab / "h1.json").write_text(json.dumps(image(files)))
    return lab


def test_a_line_repeated_beyond_the_clean_runs_count_is_reported_and_legit_repeats_are_not() -> None:
    clean = "a:\n  mtu: 9000\nb:\n  mtu: 9000\n"
    assert chaos.doubled_lines("/etc/x", clean, clean) == []
    doubled = chaos.doubled_lines("/etc/x", clean + "b:\n  mtu: 9000\n", clean)
    assert doubled == ["/etc/x: '  mtu: 9000' x3 (clean run: 2)", "/etc/x: 'b:' x2 (clean run: 1)"]


def test_without_a_clean_copy_only_a_line_repeated_at_once_counts_and_comments_never_do() -> None:
    assert chaos.doubled_lines("/etc/y", "#\n#\nx=1\nx=1\n\n\n", None) == ["/etc/y: 'x=1' twice in a row"]


def test_disks_the_wizard_changed_are_checked_against_the_bare_host(tmp_path: Path) -> None:
    bare = {"h1": {"/etc/hosts": b"127.0.0.1 localhost\n"}}
    lab = write_disk(
        tmp_path,
        {
            "/etc/hosts": "127.0.0.1 localhost\n",
            "/etc/sysctl.d/60-roce-wizard.conf": "net.ipv4.tcp_ecn = 1\nnet.ipv4.tcp_ecn = 1\n",
            "/var/lib/roce-wizard/backups/20261125T101010Z/network/etc/hosts": "127.0.0.1 localhost\n",
            "/var/lib/roce-wizard/backups/20261125T101011Z/network/etc/hosts": "wizard version\n",
            "/var/lib/roce-wizard/revert/roce-wizard-revert-ab12.sh": "#!/bin/bash\n",
            "/var/lib/roce-wizard/revert/roce-wizard-revert-cd34.reverted": "",
        },
    )
    reference = {"h1": {"/etc/sysctl.d/60-roce-wizard.conf": b"net.ipv4.tcp_ecn = 1\n"}}
    problems = chaos.check_disks(lab, bare, reference)
    assert problems == [
        "h1: doubled line /etc/sysctl.d/60-roce-wizard.conf: 'net.ipv4.tcp_ecn = 1' x2 (clean run: 1)",
        "h1: revert left armed: /var/lib/roce-wizard/revert/roce-wizard-revert-ab12.sh",
    ], "the older backup holds the original, so the newer one (the wizard's version) is fine"


def test_a_first_backup_of_the_wizards_own_version_is_reported() -> None:
    files = {
        "/var/lib/roce-wizard/backups/20261125T101010Z/network/etc/hosts": b"wizard version\n",
        "/var/lib/roce-wizard/backups/20261125T101010Z/network/etc/netplan/60-roce-wizard.yaml": b"network: {}\n",
    }
    originals = {"/etc/hosts": b"127.0.0.1 localhost\n"}
    assert chaos.check_backups(files, originals, ["20261125T101010Z"]) == [
        "first backup /var/lib/roce-wizard/backups/20261125T101010Z/network/etc/hosts is not the original "
        "/etc/hosts (the wizard's own version?)",
        "first backup /var/lib/roce-wizard/backups/20261125T101010Z/network/etc/netplan/60-roce-wizard.yaml is of "
        "a file the wizard created (no original existed)",
    ]


def test_a_state_that_does_not_load_is_reported(tmp_path: Path) -> None:
    (tmp_path / "run.json").write_text('{"schema_version": ')
    problems, _ = chaos.check_state(tmp_path)
    assert len(problems) == 1 and problems[0].startswith("state does not load:") and "not valid JSON" in problems[0]


@pytest.mark.slow
def test_eight_kills_spread_over_the_bring_up_each_resume_and_every_host_ends_verified(tmp_path: Path) -> None:
    done = subprocess.run(
        [sys.executable, "bench/chaos.py", "--kills", "8", "--seed", "1", "--workdir", str(tmp_path), "--json"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=600,  # a guard against a hang, not a time limit: 110-140 s here, more on a loaded machine
    )
    result = json.loads(done.stdout.strip().splitlines()[-1])
    assert result["problems"] == [], f"seed {result['seed']}; state and logs in {tmp_path}"
    assert done.returncode == 0
    assert result["kills_survived"] == 8 and result["seed"] == 1
    assert result["runs"] > result["kills"], "every kill was followed by a resume, and a round ended with exit 0"
    assert result["checked"]["written files"] > 20, "the disk checks looked at the files the wizard wrote"
