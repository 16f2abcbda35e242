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

import pytest

from steps.inference.units import ENGINE_UNIT, LOCK_PATH
from tests.steps.test_inference_demo import RAILS, answers, cluster, run  # noqa: F401 - answers is a fixture
from wizard.answers.model import Answers
from wizard.lab import Lab, inference_sim


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


async def test_a_worker_installed_after_a_new_release_gets_the_heads_versions_from_its_lock_file(
    answers: Answers,  # noqa: F811 - the fixture
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """server1 got vLLM 0.33.0 earlier; 0.34.0 is out when server2 is installed. pip alone would give the group two
    releases (Ray and vLLM refuse mixed nodes); the head's pip freeze, copied, gives server2 exactly server1's."""
    answers.inference.layout = "span"
    async with cluster(answers) as lab:
        head = lab.host("server1")
        indexes = "--extra-index-url https://wheels.vllm.ai/0.33.0/cu129 --extra-index-url https://download.pytorch.org/whl/cu129"
        venv = "/opt/roce-wizard/venv"
        pip = f"{venv}/bin/python -m pip install {indexes} vllm==0.33.0+cu129 'ray[cgraph]>=2.52'"
        setup = f"apt-get install -y python3-venv && python3 -m venv {venv} && {pip}"
        assert (await head.run(setup)).status == 0
        monkeypatch.setitem(inference_sim.LATEST, "vllm", "0.34.0")
        code, records, _ = await run(lab, answers, tmp_path)
        assert code == 0, {h: r.reason for h, r in records.items()}
        lock = head.fs.read_text(LOCK_PATH)
        assert "vllm==0.33.0+cu129" in lock and lab.host("server2").fs.read_text(LOCK_PATH) == lock
        assert "vllm-0.33.0+cu129.dist-info" in lab.host("server2").fs.listdir(f"{venv}/lib/python3.10/site-packages")
