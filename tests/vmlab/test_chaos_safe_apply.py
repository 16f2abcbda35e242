"""Crash anywhere during safe apply: a wizard SIGKILLed mid-change and resumed loses nothing, doubles nothing and
leaves no revert armed, on real kernels (bench/chaos_vm.py, a CI-sized sample) and in the bookkeeping behind it."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import pytest

from wizard.engine.apply import REVERT_DIR
from wizard.engine.apply_resume import record_intent, record_written, settle_reverts
from wizard.engine.state import StageRecord
from wizard.engine.step import Change, FileWrite, Impact, RemoteCommand
from wizard.executors.base import CommandResult

ROOT = Path(__file__).resolve().parents[2]
NETPLAN = "/etc/netplan/60-roce-wizard.yaml"
SYSCTL = "/etc/sysctl.d/90-x.conf"


def bond_change(before: str | None = None) -> Change:
    return Change(
        summary="write netplan",
        impact=Impact.DISRUPTIVE,
        files=[FileWrite(path=NETPLAN, content="bond\n", before=before)],
        commands=[RemoteCommand(argv=["netplan", "apply"])],
        creates_links=["bond0"],
    )


def test_a_created_file_and_its_bond_are_on_record_before_the_change_runs() -> None:
    record = StageRecord()
    record_intent(record, bond_change(), "/var/lib/roce-wizard/backups/r1/network")
    # A kill from here on still leaves rollback knowing to remove the file and delete the bond.
    assert (record.created, record.created_links, record.backups) == ([NETPLAN], ["bond0"], [])


def test_a_resumed_run_never_records_a_backup_of_the_file_an_interrupted_run_created() -> None:
    record = StageRecord()
    record_intent(record, bond_change(), "/var/lib/roce-wizard/backups/r1/network")  # run 1 died after writing
    change = bond_change(before="bond, half applied\n")
    intent = record_intent(record, change, "/var/lib/roce-wizard/backups/r2/network")
    check = record_written(record, [(NETPLAN, f"/var/lib/roce-wizard/backups/r2/network{NETPLAN}")], intent)
    assert record.backups == [] and record.created == [NETPLAN] and check == []


def test_the_original_backup_is_recorded_before_the_change_and_kept_first() -> None:
    record = StageRecord()
    first = f"/var/lib/roce-wizard/backups/r1/network{SYSCTL}"
    change = Change(summary="sysctl", files=[FileWrite(path=SYSCTL, content="b\n", before="a\n")])
    intent = record_intent(record, change, "/var/lib/roce-wizard/backups/r1/network")
    assert record.backups == [first], "on record before write_file copies it"
    assert record_written(record, [(SYSCTL, first)], intent) == [] and record.backups == [first]
    # A later run that rewrites it again: its backup (of the wizard's version) comes second; the first one is
    # checked on the host, since a run killed before its copy recorded a backup that was never taken.
    later = f"/var/lib/roce-wizard/backups/r2/network{SYSCTL}"
    intent = record_intent(record, change, "/var/lib/roce-wizard/backups/r2/network")
    assert record_written(record, [(SYSCTL, later)], intent) == [first]
    assert record.backups == [first, later]


def test_a_file_the_step_thought_new_but_was_there_is_recorded_as_replaced() -> None:
    record = StageRecord()
    intent = record_intent(record, bond_change(), "/b/r1/network")
    record_written(record, [(NETPLAN, f"/b/r1/network{NETPLAN}")], intent)
    assert (record.created, record.backups) == ([], [f"/b/r1/network{NETPLAN}"])


class RevertHost:
    """A host's revert directory as the settle step sees it (``ls``, ``mkdir`` claims, markers, timers)."""

    def __init__(self, entries: set[str]) -> None:
        self.entries = entries
        self.commands: list[str] = []

    async def run(self, argv: list[str], **_: Any) -> CommandResult:
        self.commands.append(" ".join(argv))
        name = argv[-1].rsplit("/", 1)[-1]
        if argv[0] == "ls":
            return CommandResult("ls", 0, "\n".join(sorted(self.entries)), "", 0.0)
        if argv[0] == "mkdir":
            ok = name not in self.entries
            self.entries.add(name)
            return CommandResult("mkdir", 0 if ok else 1, "", "", 0.0)
        if argv[0] == "test":
            return CommandResult("test", 0 if name in self.entries else 1, "", "", 0.0)
        if argv[0] == "rm":
            self.entries -= {a.rsplit("/", 1)[-1] for a in argv[2:]}
        return CommandResult(" ".join(argv), 0 if argv[:2] != ["systemctl", "is-active"] else 3, "", "", 0.0)


async def test_a_resume_disarms_a_revert_the_killed_run_left_armed() -> None:
    host = RevertHost({"roce-wizard-revert-aa.sh"})
    done = await settle_reverts(host)  # type: ignore[arg-type]
    assert done == ["roce-wizard-revert-aa: disarmed (left armed by an interrupted run)"]
    assert "systemctl stop roce-wizard-revert-aa.timer" in host.commands
    assert host.entries == {"roce-wizard-revert-aa.claimed"}, "claimed (the timer can never win), script gone"


async def test_a_revert_that_already_ran_leaves_only_its_marker() -> None:
    host = RevertHost({"roce-wizard-revert-bb.sh", "roce-wizard-revert-bb.claimed", "roce-wizard-revert-bb.reverted"})
    done = await settle_reverts(host)  # type: ignore[arg-type]
    assert done == ["roce-wizard-revert-bb: had rolled the host back; the stage re-plans"]
    assert host.entries == {"roce-wizard-revert-bb.reverted"}
    assert f"mkdir -- {REVERT_DIR}/roce-wizard-revert-bb.claimed" in host.commands


@pytest.mark.vmlab
def test_two_kills_during_safe_apply_on_the_vms_are_survived(tmp_path: Path) -> None:
    from tests.vmlab.vms import missing_requirements

    reason = missing_requirements()
    if reason:
        pytest.skip(reason)
    sys.path.insert(0, str(ROOT / "bench"))
    from chaos_vm import run_vm_chaos

    result = run_vm_chaos(2, seed=7, workdir=tmp_path, per_round=2, clean_run=False, say=lambda _m: None)
    assert result.problems == [], result.problems
    assert result.kills == 2 and sum(result.phases.values()) == 2
    assert result.runs == result.kills + result.rounds, "each round ends with the one resume that finished"
