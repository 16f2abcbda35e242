"""Stage ofed end to end: the real runner over SSH against the simulated reference cluster (two L20 x 8 hosts)."""

from __future__ import annotations

import contextlib
import dataclasses
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest

from steps.discovery.stage import Discovery
from steps.ofed.stage import Ofed
from wizard.answers.model import Answers, load_answers
from wizard.engine.events import EventBus
from wizard.engine.runner import RunOptions
from wizard.engine.session import open_session, production_targets
from wizard.engine.state import StageRecord
from wizard.engine.step import HostPlan

try:
    from wizard.lab import Lab, parse_fault
except ImportError as exc:  # pragma: no cover - the lab ships with the wizard; this guards a broken checkout
    pytest.skip(f"the simulated lab cannot be imported: {exc}", allow_module_level=True)

EXAMPLE = Path(__file__).resolve().parents[2] / "assets" / "answers.example.yaml"
STAGES = ["discovery", "ofed"]


@pytest.fixture
def answers() -> Answers:
    return load_answers(EXAMPLE)


@contextlib.asynccontextmanager
async def cluster(answers: Answers, *faults: str, **lab_args: Any) -> AsyncIterator[Lab]:
    lab = Lab(
        [h.name for h in answers.hosts],
        mgmt_addresses={h.name: h.address for h in answers.hosts},
        faults=[parse_fault(f) for f in faults],
        **lab_args,
    )
    lab.time_scale = 0.001
    lab.reboot_seconds = 0.3
    await lab.start()
    try:
        yield lab
    finally:
        await lab.stop()


@dataclasses.dataclass
class Outcome:
    code: int
    records: dict[str, StageRecord]
    plans: dict[str, HostPlan]
    facts: dict[str, dict[str, Any]]


async def run(lab: Lab, answers: Answers, state: Path, *, yes: bool = True) -> Outcome:
    targets = production_targets(answers, None)
    for name, target in targets.items():
        target.address, target.port = lab.endpoint(name)
        target.identity_file, target.known_hosts = str(lab.client_key_path), str(lab.known_hosts_path)
    session = open_session(answers, [Discovery(), Ofed()], targets, state, EventBus(), simulated=True, password=None)
    plans: dict[str, HostPlan] = {}
    original = session.runner._plan

    def remember(stage: str, view: Any, host: str) -> HostPlan:
        plans[host] = plan = original(stage, view, host)
        return plan

    session.runner._plan = remember  # type: ignore[method-assign]
    try:
        code = await session.runner.run(RunOptions(stages=STAGES, allow_disruptive=yes, demo=True))
        records = {h: session.store.host(h).stage("ofed") for h in lab.names}
        return Outcome(code, records, {h: p for h, p in plans.items() if p.stage == "ofed"}, session.runner.facts)
    finally:
        await session.close()


async def test_reference_cluster_gets_doca_ofed_new_device_names_and_a_second_run_plans_nothing(
    answers: Answers, tmp_path: Path
) -> None:
    async with cluster(answers) as lab:
        first = await run(lab, answers, tmp_path)
        assert first.code == 0, {h: r.reason for h, r in first.records.items()}
        assert [c.summary.split(" (")[0] for c in first.plans["server1"].changes] == [
            "Install prerequisites: linux-headers-5.15.0-125-generic",
            "Import NVIDIA's package signing key",
            "Add NVIDIA's online DOCA repository https://linux.mellanox.com/public/repo/doca/2.9.1/ubuntu22.04/x86_64/",
            "Install DOCA-OFED 2.9.1",
            "Restart the driver with the DOCA-OFED 2.9.1 modules",
        ]
        # the driver restart renamed rocep59s0f0.. to mlx5_N and discovery's facts follow for the later stages
        ports = first.facts["server1"]["discovery"]["ports"]
        assert [p["rdma_device"] for p in ports] == ["mlx5_0", "mlx5_1", "mlx5_2", "mlx5_3"]
        assert {c.id: c.status for c in first.records["server2"].checks}["firmware"] == "pass"
        second = await run(lab, answers, tmp_path)
        assert second.code == 0
        for host in lab.names:
            assert second.plans[host].changes == []
            assert second.records[host].changes_applied == 0
            assert second.plans[host].noop_reason == (
                "DOCA-OFED 2.9.1 (doca-ofed 2.9.1-018000-24.10-ubuntu2204) is installed; its driver is loaded"
                " (mlx5_core 24.10-1.1.4); RDMA tools present; time sync: systemd-timesyncd active"
            )
