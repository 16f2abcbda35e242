"""Stage inference end to end: the real runner over SSH against the simulated reference cluster (two L20 x 8 hosts)."""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from steps.discovery.stage import Discovery
from steps.inference.stage import Inference
from wizard.answers.model import Answers, load_answers
from wizard.engine.events import EventBus
from wizard.engine.runner import RunOptions
from wizard.engine.session import Session, open_session, production_targets
from wizard.engine.state import StageRecord

try:
    from wizard.lab import Lab, parse_fault
except ImportError as exc:  # pragma: no cover - the lab ships with the wizard; this guards a broken checkout
    pytest.skip(f"the simulated lab cannot be imported: {exc}", allow_module_level=True)

EXAMPLE = Path(__file__).resolve().parents[2] / "assets" / "answers.example.yaml"
RAILS = ("192.168.11", "192.168.12", "192.168.13", "192.168.14")


async def prepare_rails(lab: Lab) -> None:
    """What the network stage leaves behind (done directly until that stage lands): rail IPs, MTU 9000."""
    for i, name in enumerate(lab.names):
        host = lab.host(name)
        steps = [
            f"ip link set {p.netdev} mtu 9000 up && ip addr add {RAILS[j]}.{i + 1}/24 dev {p.netdev}"
            for j, p in enumerate(host.profile.ports)
        ]
        assert (await host.run(" && ".join(steps))).status == 0


@pytest.fixture
def answers() -> Answers:
    loaded = load_answers(EXAMPLE)
    loaded.inference.probe_requests, loaded.inference.ready_timeout_s = 8, 60
    return loaded


@contextlib.asynccontextmanager
async def cluster(answers: Answers, *faults: str) -> AsyncIterator[Lab]:
    lab = Lab.reference(
        [h.name for h in answers.hosts],
        mgmt_addresses={h.name: h.address for h in answers.hosts},
        faults=[parse_fault(f) for f in faults],
    )
    lab.time_scale = 0.2
    await lab.start()
    try:
        await prepare_rails(lab)
        yield lab
    finally:
        await lab.stop()


def demo_session(lab: Lab, answers: Answers, state: Path) -> Session:
    """A session of stages discovery and inference whose targets are the lab's hosts on 127.0.0.1."""
    targets = production_targets(answers, None)
    for name, target in targets.items():
        target.address, target.port = lab.endpoint(name)
        target.identity_file, target.known_hosts = str(lab.client_key_path), str(lab.known_hosts_path)
    return open_session(answers, [Discovery(), Inference()], targets, state, EventBus(), simulated=True, password=None)


async def run(lab: Lab, answers: Answers, state: Path) -> tuple[int, dict[str, StageRecord], dict[str, object]]:
    session = demo_session(lab, answers, state)
    try:
        code = await session.runner.run(RunOptions(stages=["discovery", "inference"], allow_disruptive=True, demo=True))
        outcome = session.runner.steps["inference"]
        records = {h: session.store.host(h).stage("inference") for h in lab.names}
        plans = {h: outcome.plan(session.runner.view(), h) for h in lab.names}
        return code, records, plans
    finally:
        await session.close()


def check(record: StageRecord, item: str) -> str:
    found = next(c for c in record.checks if c.id == item)
    return f"{found.status}: {found.evidence}"


async def test_the_reference_demo_serves_llama_70b_as_two_replicas_and_a_second_run_plans_nothing(
    answers: Answers, tmp_path: Path
) -> None:
    async with cluster(answers) as lab:
        code, records, _ = await run(lab, answers, tmp_path)
        assert code == 0, {h: r.reason for h, r in records.items()}
        probe = check(records["server1"], "probe")
        assert probe.startswith("pass: 8/8 /v1/completions requests to meta-llama/Llama-3.1-70B-Instruct")
        assert (
            " p50 " in probe and " p90 " in probe and " tokens/s " in probe and probe.endswith("[simulated endpoint]")
        )
        # Llama-3.1-70B in BF16 fits one 8 x L20 node: each node serves it alone (inference.layout auto).
        assert check(records["server2"], "health").startswith("pass: http://127.0.0.1:8000/health on server2")
        assert check(records["server2"], "probe").startswith("pass: 8/8 /v1/completions requests")
        code, records, plans = await run(lab, answers, tmp_path)
        assert code == 0
        assert all(p.changes == [] and p.noop_reason for p in plans.values())  # type: ignore[attr-defined]
        assert records["server1"].reason.startswith("verified; roce-wizard-inference.service active")
        assert "TP 8 x PP 1, replica 1 of 2, rank 0" in records["server1"].reason
        assert lab.host("server1").fs.lookup("/etc/systemd/system/roce-wizard-ray.service") is None


async def test_a_model_that_cannot_fit_is_refused_with_the_numbers(answers: Answers, tmp_path: Path) -> None:
    answers.inference.model = "deepseek-ai/DeepSeek-V3"
    async with cluster(answers) as lab:
        code, records, _ = await run(lab, answers, tmp_path)
        assert code == 1
        reason = records["server1"].reason
        assert records["server1"].status == "failed" and "671 GB of weights" in reason and "40.5 GiB" in reason
        assert lab.host("server1").fs.lookup("/etc/systemd/system/roce-wizard-inference.service") is None


async def test_a_host_refusing_sudo_fails_the_group_naming_it(answers: Answers, tmp_path: Path) -> None:
    answers.inference.layout = "span"
    async with cluster(answers, "server2:sudo_refused") as lab:
        code, records, _ = await run(lab, answers, tmp_path)
        assert code == 1
        assert records["server2"].status == "skipped"
        assert "server2 cannot join the serving group: sudo is refused" in records["server1"].reason


async def test_with_replicas_a_host_refusing_sudo_leaves_the_other_replica_serving(
    answers: Answers, tmp_path: Path
) -> None:
    async with cluster(answers, "server2:sudo_refused") as lab:
        code, records, _ = await run(lab, answers, tmp_path)
        assert code == 1
        assert records["server2"].status == "skipped"
        assert records["server1"].status == "done"
        assert check(records["server1"], "health").startswith("pass: http://127.0.0.1:8000/health on server1")
