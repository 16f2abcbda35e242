"""Plans for people: printed, exported as files plus one script per stage, and never leaking a secret."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest

from wizard.engine.plan_export import print_plans, write_plan_dir
from wizard.engine.runner import StageOutcome
from wizard.engine.step import Change, FileWrite, HostPlan, Impact, RemoteCommand

TOKEN = "s3cr3t-token-value"


def outcome() -> StageOutcome:
    change = Change(
        summary="write units",
        impact=Impact.DISRUPTIVE,
        files=[
            FileWrite(path="/etc/demo/unit.conf", content="A=1\n", mode=0o600, before="A=0\n"),
            FileWrite(path="/etc/demo/token", content=TOKEN + "\n", mode=0o600, secret=True),
        ],
        commands=[RemoteCommand(argv=["systemctl", "restart", "demo service"])],
    )
    plans = {
        "h1": HostPlan(stage="demo", host="h1", changes=[change]),
        "h2": HostPlan(stage="demo", host="h2", noop_reason="already current"),
    }
    return StageOutcome("demo", plans=plans)


def test_export_writes_files_and_a_script_that_parses(tmp_path: Path) -> None:
    write_plan_dir(tmp_path, [outcome()], simulated=False)
    assert (tmp_path / "h1" / "files" / "etc" / "demo" / "unit.conf").read_text() == "A=1\n"
    script = (tmp_path / "h1" / "99-demo.sh").read_text()
    assert "sudo install -D -o root -g root -m 0600 files/etc/demo/unit.conf /etc/demo/unit.conf" in script
    assert "sudo systemctl restart 'demo service'" in script
    assert "# [disruptive] write units" in script
    assert subprocess.run(["bash", "-n", str(tmp_path / "h1" / "99-demo.sh")]).returncode == 0
    assert "nothing to change (already current)" in (tmp_path / "h2" / "99-demo.sh").read_text()


def test_secrets_are_never_exported_or_printed(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    write_plan_dir(tmp_path, [outcome()], simulated=False)
    exported = "".join(p.read_text() for p in tmp_path.rglob("*") if p.is_file())
    assert TOKEN not in exported
    script = (tmp_path / "h1" / "99-demo.sh").read_text()
    assert "/etc/demo/token holds a secret" in script
    assert ': "${TOKEN_FILE:?set TOKEN_FILE' in script, "the operator supplies the secret; the script says how"
    print_plans([outcome()], {}, as_json=False, simulated=False)
    print_plans([outcome()], {}, as_json=True, simulated=False)
    printed = capsys.readouterr().out
    assert TOKEN not in printed
    assert "-A=0" in printed and "+A=1" in printed, "ordinary files show a diff"


def test_json_plans_keep_the_structure(capsys: pytest.CaptureFixture[str]) -> None:
    print_plans([outcome()], {"h3": "unreachable"}, as_json=True, simulated=True)
    doc = json.loads(capsys.readouterr().out)
    assert doc["simulated"] is True and doc["failed_hosts"] == {"h3": "unreachable"}
    files = doc["stages"]["demo"]["h1"]["changes"][0]["files"]
    assert [f["path"] for f in files] == ["/etc/demo/unit.conf", "/etc/demo/token"]
    assert files[1]["content"] is None


def test_a_host_that_could_not_be_planned_is_named_in_the_plan_readme(tmp_path: Path) -> None:
    write_plan_dir(tmp_path, [outcome()], simulated=False, failures={"h3": "cannot connect to 10.0.0.3:22"})
    readme = (tmp_path / "README.txt").read_text()
    assert "h3: NOT PLANNED: cannot connect to 10.0.0.3:22" in readme
    assert "h1: 99-demo.sh" in readme
