"""A prepared two-host lab (DOCA, rails, jumbo MTU, DSCP trust + PFC 3) and SSH executors for validation tests."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

import pytest

from tests.lab.test_perftest_sim import ready_host
from wizard.answers.model import Answers, load_answers, parse_answers
from wizard.engine.session import production_targets
from wizard.executors.ssh import SshExecutor
from wizard.lab import Lab, parse_fault
from wizard.paths import example_answers
from wizard.validate import perftest
from wizard.validate.model import Report
from wizard.validate.run import Options, Validation


@pytest.fixture(autouse=True)
def quick_start(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(perftest, "START_DELAY_S", 0.1)  # the simulated server listens at once


@asynccontextmanager
async def lab_executors(
    *faults: str, qos: bool = True, hosts: int = 2
) -> AsyncIterator[tuple[Lab, Answers, dict[str, SshExecutor]]]:
    answers = load_answers(example_answers())
    if hosts != 2:  # more hosts: one switch per rail instead of back-to-back cables
        entries = "".join(f"  - {{name: node{i}, address: 10.0.0.{11 + i}}}\n" for i in range(hosts))
        answers = parse_answers(f"version: 1\ncluster: {{name: lab{hosts}}}\nhosts:\n{entries}")
    lab = Lab.reference(
        [h.name for h in answers.hosts],
        mgmt_addresses={h.name: h.address for h in answers.hosts},
        faults=[parse_fault(f) for f in faults],
    )
    lab.time_scale = 0.05  # `timeout 30` around a server still leaves it 1.5 s to meet its client
    for index, host in enumerate(lab.hosts.values(), 1):
        await ready_host(host, index, qos=qos)
    await lab.start()
    if qos:  # what stage roce does once the hosts run: where lldpad runs (pfc_off) it resets PFC right after
        for host in lab.hosts.values():
            for port in host.profile.ports:
                await host.run(f"mlnx_qos -i {port.netdev} --trust dscp --pfc 0,0,0,1,0,0,0,0")
    executors = {}
    for name, target in production_targets(answers, None).items():
        target.address, target.port = lab.endpoint(name)
        target.identity_file, target.known_hosts = str(lab.client_key_path), str(lab.known_hosts_path)
        executors[name] = SshExecutor(target)
    try:
        yield lab, answers, executors
    finally:
        for ex in executors.values():
            await ex.close()
        await lab.stop()


async def validate(
    *faults: str,
    qos: bool = True,
    sweep: bool = False,
    events: list | None = None,
    hosts: int = 2,
    neighbours_only: bool = False,
) -> Report:
    """One validation of the simulated hosts (no NCCL: nccl-tests is not built in these labs)."""
    seen = events if events is not None else []
    async with lab_executors(*faults, qos=qos, hosts=hosts) as (_, answers, executors):
        options = Options(sweep=sweep, together_s=1.0, nccl=False, neighbours_only=neighbours_only)
        return await Validation(answers, executors, simulated=True, options=options,
                                on_event=lambda kind, data: seen.append((kind, data))).run()  # fmt: skip
