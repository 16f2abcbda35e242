"""Stages ofed and gpudirect on the reference hosts as delivered: the NVIDIA driver was DKMS-built before DOCA-OFED,
so nvidia-peermem cannot load until the driver is rebuilt (NVIDIA driver README, "GPUDirect RDMA Peer Memory
Client"); the wizard rebuilds it, GPUDirect is verified and a second run changes nothing."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path

from steps.discovery.stage import Discovery
from steps.gpudirect.stage import GpuDirect
from steps.ofed.stage import Ofed
from tests.steps.test_roce_demo import EXAMPLE, Lab, prepare, rerun, run, stage_status
from wizard.answers.model import Answers, load_answers
from wizard.engine.events import EventBus
from wizard.engine.session import open_session, production_targets


@asynccontextmanager
async def bare_lab_runner(tmp_path: Path, answers: Answers) -> AsyncIterator[tuple]:
    """Reference hosts as delivered (inbox RDMA stack, NVIDIA 550 already installed), rails addressed, with a
    runner for stages discovery, ofed and gpudirect."""
    lab = Lab.reference([h.name for h in answers.hosts], mgmt_addresses={h.name: h.address for h in answers.hosts})
    lab.reboot_seconds, lab.time_scale = 0.2, 0.001
    for index, name in enumerate(lab.names):
        prepare(lab.host(name), index, doca=False)
    await lab.start()
    targets = production_targets(answers, None)
    for name, target in targets.items():
        target.address, target.port = lab.endpoint(name)
        target.identity_file, target.known_hosts = str(lab.client_key_path), str(lab.known_hosts_path)
    steps = [Discovery(), Ofed(), GpuDirect()]
    session = open_session(answers, steps, targets, tmp_path / "state", EventBus(), simulated=True, password=None)
    try:
        yield lab, session.runner
    finally:
        await session.close()
        await lab.stop()


async def test_driver_installed_before_doca_is_rebuilt_then_peermem_loads_and_a_rerun_changes_nothing(tmp_path):
    """The reference hosts have NVIDIA 550 DKMS-built before stage ofed installs DOCA-OFED, so nvidia-peermem is
    built without the peer-memory API and modprobe fails with EINVAL (NVIDIA driver README "GPUDirect RDMA Peer
    Memory Client": a GPU driver installed before MLNX_OFED must be installed again). Stage gpudirect reinstalls
    nvidia-dkms-550-server (DKMS rebuilds against /usr/src/ofa_kernel), loads the module and verifies; a second run
    plans nothing in either stage."""
    answers = load_answers(EXAMPLE)
    async with bare_lab_runner(tmp_path, answers) as (lab, runner):
        assert await run(runner, ["discovery", "ofed", "gpudirect"]) == 0, stage_status(runner, "gpudirect")
        plan = runner.store.host("server1").stage("gpudirect")
        server1 = lab.host("server1")
        assert "nvidia_peermem" in server1.modules
        assert any("apt-get install --reinstall -y nvidia-dkms-550-server" in line for line in server1.history)
        rebuild = [i for i, line in enumerate(server1.history) if "--reinstall" in line]
        load = [i for i, line in enumerate(server1.history) if "modprobe nvidia-peermem" in line]
        assert rebuild and load and rebuild[0] < load[-1]
        assert plan.status == "done", plan.reason
        # item 7: NVIDIA's key is a keyring only doca.list trusts (Debian wiki DebianRepository/UseThirdParty)
        assert server1.fs.listdir("/etc/apt/keyrings") == ["GPG-KEY-Mellanox.gpg"]
        assert not [n for n in server1.fs.listdir("/etc/apt/trusted.gpg.d") if "Mellanox" in n]
        assert "[signed-by=/etc/apt/keyrings/GPG-KEY-Mellanox.gpg]" in server1.fs.read_text(
            "/etc/apt/sources.list.d/doca.list"
        )
        for stage in ("ofed", "gpudirect"):
            again = await rerun(runner, stage)
            assert {h: (s, c) for h, (s, _, c) in again.items()} == {"server1": ("done", []), "server2": ("done", [])}
