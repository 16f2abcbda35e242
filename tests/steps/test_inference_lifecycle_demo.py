"""A serving group that heals itself: a rebooted Ray worker takes the engine down, and the units bring it back.

vLLM on Ray shuts its API server down with exit status 0 when a worker of its placement group dies; with
Restart=on-failure that leaves the replica down for good. The units use Restart=always (with a start limit), bind the
engine to its Ray node (BindsTo=), and hold the head's start (ExecStartPre=, assets/inference/ray-wait-gpus.py) until
the group's GPUs have joined again. Sources: systemd.service(5) Restart=, ExecStartPre=; systemd.unit(5) BindsTo=,
StartLimitBurst=.
"""

from __future__ import annotations

import asyncio
import time
from pathlib import Path

from steps.inference.units import ENGINE_UNIT
from tests.steps.test_inference_demo import RAILS, answers, cluster, run  # noqa: F401 - answers is a fixture
from wizard.answers.model import Answers
from wizard.lab import Lab


async def persist_rails(lab: Lab) -> None:
    """The rail addresses in a netplan file, as the network stage leaves them: they survive the reboot."""
    for i, name in enumerate(lab.names):
        host = lab.host(name)
        ports = "".join(
            f"    {p.netdev}:\n      mtu: 9000\n      addresses: [{RAILS[j]}.{i + 1}/24]\n"
            for j, p in enumerate(host.profile.ports)
        )
        host.fs.install("/etc/netplan/60-rails.yaml", f"network:\n  version: 2\n  ethernets:\n{ports}", 0o600)


async def healthy(lab: Lab, host: str) -> bool:
    return (await lab.host(host).run("curl -sf --max-time 5 http://127.0.0.1:8000/health")).status == 0


async def wait_for(lab: Lab, host: str, want: bool, limit_s: float) -> float:
    start = time.monotonic()
    while await healthy(lab, host) != want:
        assert time.monotonic() - start < limit_s, f"{host} /health still {'down' if want else 'up'}"
        await asyncio.sleep(0.2)
    return time.monotonic() - start


async def test_a_rebooted_worker_takes_the_group_down_and_it_comes_back_by_itself(
    answers: Answers,  # noqa: F811 - the fixture
    tmp_path: Path,
) -> None:
    answers.inference.layout = "span"  # one vLLM group over Ray: server1 the head, server2 a worker
    async with cluster(answers) as lab:
        await persist_rails(lab)
        code, records, _ = await run(lab, answers, tmp_path)
        assert code == 0, {h: r.reason for h, r in records.items()}
        assert await healthy(lab, "server1")
        lab.host("server2").request_reboot()
        await wait_for(lab, "server1", False, 30)  # the engine core died with the worker: the API went away
        await wait_for(lab, "server1", True, 60)  # nobody ran the wizard: systemd brought the group back
        journal = "\n".join(e.message for e in lab.host("server1").journal if e.unit == ENGINE_UNIT)
        assert "status=0/SUCCESS" in journal and "Scheduled restart job" in journal
        assert "the Ray cluster has 16 GPUs (this group needs 16); starting the engine" in journal
