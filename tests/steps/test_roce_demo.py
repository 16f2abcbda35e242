"""Stages roce and gpudirect against the simulated lab over real SSH: configure, re-run, reboot, faults.

The hosts are prepared as stages ofed and network leave them (DOCA-OFED installed, rails addressed with MTU 9000),
so these tests do not depend on those stages.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path

import pytest

from steps.discovery.stage import Discovery
from steps.gpudirect.stage import GpuDirect
from steps.roce.stage import Roce
from wizard.answers.model import Answers, load_answers
from wizard.engine.events import EventBus
from wizard.engine.runner import Runner, RunOptions
from wizard.engine.session import open_session, production_targets

lab_module = pytest.importorskip("wizard.lab", reason="the simulated lab (wizard.lab) is not importable")
Lab, parse_fault = lab_module.Lab, lab_module.parse_fault
from wizard.lab import packages  # noqa: E402

EXAMPLE = Path(__file__).resolve().parents[2] / "assets" / "answers.example.yaml"
RAILS = ("192.168.11", "192.168.12", "192.168.13", "192.168.14")


def prepare(host, index: int, *, doca: bool = True) -> None:
    """What stages ofed and network leave behind: DOCA-OFED installed and booted (unless the inbox stack is
    kept), one subnet per port with MTU 9000."""
    for pkg in packages.DOCA if doca else []:
        packages.install_files(host, pkg)
    ethernets = "".join(
        f"    {port.netdev}:\n      mtu: 9000\n      addresses: [{rail}.{index + 1}/24]\n"
        for port, rail in zip(host.profile.ports, RAILS, strict=True)
    )
    host.fs.install("/etc/netplan/60-roce-rails.yaml", f"network:\n  version: 2\n  ethernets:\n{ethernets}", 0o600)
    host.power_on()


@asynccontextmanager
async def lab_runner(
    tmp_path: Path, answers: Answers, faults: tuple[str, ...] = (), *, lab=None, doca: bool = True
) -> AsyncIterator[tuple]:
    """A started lab of prepared hosts (or ``lab``, left running) and a runner reaching it over SSH."""
    own = lab is None
    if own:
        lab = Lab.reference([h.name for h in answers.hosts], mgmt_addresses={h.name: h.address for h in answers.hosts},
                            faults=[parse_fault(f) for f in faults])  # fmt: skip
        lab.reboot_seconds = 0.2
        lab.time_scale = 0.001  # simulated delays (driver reloads, sleeps) nearly vanish
        for index, name in enumerate(lab.names):
            prepare(lab.host(name), index, doca=doca)
        await lab.start()
    targets = production_targets(answers, None)
    for name, target in targets.items():
        target.address, target.port = lab.endpoint(name)
        target.identity_file, target.known_hosts = str(lab.client_key_path), str(lab.known_hosts_path)
    session = open_session(answers, [Discovery(), Roce(), GpuDirect()], targets, tmp_path / "state", EventBus(),
                           simulated=True, password=None)  # fmt: skip
    try:
        yield lab, session.runner
    finally:
        await session.close()
        if own:
            await lab.stop()


async def run(runner: Runner, stages: list[str]) -> int:
    return await runner.run(RunOptions(stages=stages, allow_disruptive=True, demo=True, reboot_timeout_s=30))


def stage_status(runner: Runner, stage: str) -> dict[str, tuple[str, str]]:
    return {h: (runner.store.host(h).stage(stage).status, runner.store.host(h).stage(stage).reason)
            for h in ("server1", "server2")}  # fmt: skip


async def rerun(runner: Runner, stage: str) -> dict[str, tuple[str, str, list]]:
    """Run one stage again on the hosts still in the run: (status, reason, planned changes) per host."""
    outcome = await runner.run_stage(stage, RunOptions(stages=[stage], allow_disruptive=True, demo=True))
    record = runner.store.host
    return {h: (s, record(h).stage(stage).reason, outcome.plans[h].changes) for h, s in outcome.statuses.items()}


async def reboot(lab, *names: str) -> None:
    for name in names:
        lab.host(name).request_reboot()
    for name in names:
        await lab.host(name).wait_running()


async def test_roce_configures_every_port_then_plans_nothing_and_survives_a_reboot(tmp_path):
    async with lab_runner(tmp_path, load_answers(EXAMPLE)) as (lab, runner):
        assert await run(runner, ["discovery", "roce"]) == 0, stage_status(runner, "roce")
        server1 = lab.host("server1")
        qos = server1.netdevs["ens2f1np1"].qos
        assert (qos.trust, qos.pfc, qos.ecn_np[3], qos.ecn_rp[3]) == ("dscp", [0, 0, 0, 1, 0, 0, 0, 0], 1, 1)
        assert server1.rdma_cfg["mlx5_3"]["tos"] == 106

        second = await rerun(runner, "roce")
        assert {h: (s, changes) for h, (s, _, changes) in second.items()} == {
            "server1": ("done", []),
            "server2": ("done", []),
        }

        # roce-wizard-qos.service re-applies everything at boot: nothing to change, every check green
        await reboot(lab, "server1", "server2")
        assert server1.netdevs["ens1f0np0"].qos.pfc == [0, 0, 0, 1, 0, 0, 0, 0]
        after = await rerun(runner, "roce")
        for host, (status, reason, changes) in after.items():
            assert (status, changes) == ("done", []), (host, reason)
            assert reason.startswith("verified; mlnx_qos already trusts DSCP with PFC on priority 3 on all 4 port(s)")


async def test_qos_comes_back_by_itself_after_openibd_restart_and_the_next_run_changes_nothing(tmp_path):
    """Issue 13 item 2. `/etc/init.d/openibd restart` (a DOCA upgrade, troubleshooting) reloads mlx5_core: the
    netdevs are re-created with driver defaults (trust pcp, no PFC, ECN off, RDMA-CM ToS 0; NVIDIA DOCA/MLNX_OFED
    "RoCE Configuration": mlnx_qos/cma_roce_tos settings are not persistent). A boot-only oneshot unit does not run
    again; the wizard's udev rule (udev(7) SYSTEMD_WANTS on the mlx5 netdev "add" event, systemd.device(5)) starts
    roce-wizard-qos@PORT.service for every re-created port, so QoS is back before anyone re-runs the wizard.
    With 30 m cables the headroom goes back to the driver's 7 m on a reload: the unit sizes it again."""
    answers = load_answers(EXAMPLE)
    answers.roce.cable_length_m = 30
    async with lab_runner(tmp_path, answers) as (lab, runner):
        assert await run(runner, ["discovery", "roce"]) == 0, stage_status(runner, "roce")
        server1 = lab.host("server1")
        assert server1.netdevs["ens2f1np1"].qos.cable_len == 30
        assert "mlnx_qos -i ens2f1np1 --cable_len=30" in server1.fs.read_text("/usr/local/sbin/roce-wizard-qos.sh")
        assert (await server1.run("/etc/init.d/openibd restart")).status == 0
        qos = server1.netdevs["ens2f1np1"].qos
        assert (qos.trust, qos.pfc, qos.ecn_np[3], qos.ecn_rp[3]) == ("dscp", [0, 0, 0, 1, 0, 0, 0, 0], 1, 1)
        assert qos.cable_len == 30
        assert server1.rdma_cfg["mlx5_3"]["tos"] == 106

        after = await rerun(runner, "roce")
        for host, (status, reason, changes) in after.items():
            assert (status, changes) == ("done", []), (host, reason)
