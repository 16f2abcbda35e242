"""Stage ofed end to end, refusals and faults: old firmware, no --yes, ConnectX-4 with DOCA 3 (simulated cluster)."""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import Any

import pytest

from tests.steps.test_ofed_demo import cluster, run
from wizard.answers.model import Answers, load_answers

try:
    from wizard.lab.profile import reference_profile
except ImportError as exc:  # pragma: no cover - the lab ships with the wizard; this guards a broken checkout
    pytest.skip(f"the simulated lab cannot be imported: {exc}", allow_module_level=True)

EXAMPLE = Path(__file__).resolve().parents[2] / "assets" / "answers.example.yaml"


@pytest.fixture
def answers() -> Answers:
    return load_answers(EXAMPLE)


def connectx4_profile(index: int) -> Any:
    """The reference server with ConnectX-4 (15b3:1013, non-Lx) cards instead of ConnectX-4 Lx."""
    base = reference_profile(index)
    cx4 = dataclasses.replace(
        base.cards[0].model, device_id="1013", lspci_name="MT27700 Family [ConnectX-4]", ca_type="MT4115",
        vendor_part_id=4115, description="MCX416A-CCAT - ConnectX-4 EN 100GbE",
    )  # fmt: skip
    cards = tuple(dataclasses.replace(c, model=cx4, firmware="12.28.2302") for c in base.cards)
    return dataclasses.replace(base, cards=cards)


async def test_old_firmware_fails_server2_only_naming_its_ports_and_the_fix(answers: Answers, tmp_path: Path) -> None:
    async with cluster(answers, "server2:old_firmware") as lab:
        outcome = await run(lab, answers, tmp_path)
    assert outcome.code == 1
    assert outcome.records["server1"].status == "done"
    assert outcome.records["server2"].status == "failed"
    reason = outcome.records["server2"].reason
    assert "server2: ConnectX-4 Lx firmware 14.20.1010 on ens1f0np0 (0000:3b:00.0)" in reason
    assert "older than the 14.32 line DOCA-OFED 2.9.1 supports" in reason
    assert "mlxup --online -u -d 0000:3b:00.0" in reason and "mlxup --online -u -d 0000:86:00.0" in reason
    # the stack itself was installed on server2: the firmware check is not a blocker for installing
    statuses = {c.id: c.status for c in outcome.records["server2"].checks}
    assert statuses["stack"] == statuses["driver"] == statuses["rdma_devices"] == "pass"


async def test_without_yes_the_disruptive_install_waits_and_changes_nothing(answers: Answers, tmp_path: Path) -> None:
    async with cluster(answers) as lab:
        outcome = await run(lab, answers, tmp_path, yes=False)
        assert outcome.code == 1
        assert outcome.records["server1"].status == "pending"
        assert "re-run with --yes" in outcome.records["server1"].reason
        listed = await lab.host("server1").run("dpkg-query -W doca-ofed")
        assert listed.status == 1


async def test_connectx4_host_with_doca_3_is_refused_before_anything_changes(answers: Answers, tmp_path: Path) -> None:
    answers.ofed.doca_version = "3.0.0"
    async with cluster(answers, profile_factory=connectx4_profile) as lab:
        outcome = await run(lab, answers, tmp_path)
        assert outcome.code == 1
        blockers = outcome.plans["server1"].blockers
        assert blockers[0].startswith("server1: ConnectX-4 (15b3:1013) at 0000:3b:00.0 (ens1f0np0), 0000:3b:00.1")
        assert "DOCA 2.9 LTS is the last release that does" in blockers[0]
        assert outcome.records["server1"].status == "failed"
        assert not (await lab.host("server1").run("test -e /etc/apt/sources.list.d/doca.list")).status == 0
