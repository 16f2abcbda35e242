"""Stage nccl end to end: the real runner over SSH against the simulated reference cluster (2 x L20 x 8).

The hosts are prepared as stages ofed, network and gpudirect leave them (DOCA-OFED, one subnet per rail with MTU
9000, nvidia-peermem loaded at boot), so these tests do not depend on those stages.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import pytest

from steps.discovery.stage import Discovery
from steps.nccl.stage import Nccl
from wizard.answers.model import Answers, load_answers
from wizard.engine.events import EventBus
from wizard.engine.runner import RunOptions
from wizard.engine.session import open_session, production_targets

lab_module = pytest.importorskip("wizard.lab", reason="the simulated lab (wizard.lab) is not importable")
Lab, parse_fault = lab_module.Lab, lab_module.parse_fault
from wizard.lab import packages  # noqa: E402

EXAMPLE = Path(__file__).resolve().parents[2] / "assets" / "answers.example.yaml"
RAILS = ("192.168.11", "192.168.12", "192.168.13", "192.168.14")


def prepare(host: Any, index: int) -> None:
    """DOCA-OFED installed, rails addressed with MTU 9000, nvidia-peermem loaded at boot; then boot."""
    for pkg in packages.DOCA:
        packages.install_files(host, pkg)
    ethernets = "".join(
        f"    {port.netdev}:\n      mtu: 9000\n      addresses: [{rail}.{index + 1}/24]\n"
        for port, rail in zip(host.profile.ports, RAILS, strict=True)
    )
    host.fs.install("/etc/netplan/60-roce-rails.yaml", f"network:\n  version: 2\n  ethernets:\n{ethernets}", 0o600)
    host.fs.install("/etc/modules-load.d/nvidia-peermem.conf", "nvidia-peermem\n")
    host.power_on()


@asynccontextmanager
async def cluster(tmp_path: Path, *faults: str) -> AsyncIterator[tuple[Any, Any]]:
    answers: Answers = load_answers(EXAMPLE)
    lab = Lab.reference(
        [h.name for h in answers.hosts],
        mgmt_addresses={h.name: h.address for h in answers.hosts},
        faults=[parse_fault(f) for f in faults],
    )
    lab.time_scale = 0.001
    for index, name in enumerate(lab.names):
        prepare(lab.host(name), index)
    await lab.start()
    targets = production_targets(answers, None)
    for name, target in targets.items():
        target.address, target.port = lab.endpoint(name)
        target.identity_file, target.known_hosts = str(lab.client_key_path), str(lab.known_hosts_path)
    session = open_session(
        answers, [Discovery(), Nccl()], targets, tmp_path / "state", EventBus(), simulated=True, password=None
    )
    try:
        yield lab, session
    finally:
        await session.close()
        await lab.stop()


async def run(session: Any) -> tuple[int, dict[str, Any]]:
    code = await session.runner.run(RunOptions(stages=["discovery", "nccl"], allow_disruptive=True, demo=True))
    return code, {h.name: session.store.host(h.name).stage("nccl") for h in session.runner.answers.hosts}


async def test_reference_cluster_verifies_and_a_second_run_plans_nothing(tmp_path: Path) -> None:
    async with cluster(tmp_path) as (lab, session):
        code, records = await run(session)
        assert code == 0, {h: r.reason for h, r in records.items()}
        assert all(r.status == "done" and r.changes_applied >= 2 for r in records.values())
        conf = lab.host("server2").fs.read_text("/etc/nccl.conf")
        assert "NCCL_IB_HCA==mlx5_0:1,mlx5_1:1,mlx5_2:1,mlx5_3:1\n" in conf and "NCCL_SOCKET_IFNAME==eno1\n" in conf
        checks = {c.id: c for c in records["server1"].checks}
        assert "GDRDMA" in checks["gdr"].evidence and checks["busbw"].status == "pass"
        code, records = await run(session)
        plans = {h: Nccl().plan(session.runner.view(), h) for h in records}
        assert code == 0 and all(p.empty and p.noop_reason for p in plans.values())
        assert all(r.status == "done" and r.changes_applied == 0 for r in records.values())


async def test_missing_peermem_fails_gdr_on_that_host_and_keeps_the_other(tmp_path: Path) -> None:
    async with cluster(tmp_path, "server2:no_peermem") as (_, session):
        code, records = await run(session)
        assert code == 1 and records["server1"].status == "done"
        assert records["server2"].status == "failed"
        reason = records["server2"].reason
        assert "server2: GPU Direct RDMA Disabled for HCA mlx5_0" in reason and "nvidia_peermem is not loaded" in reason
        assert "gpudirect stage" in reason


async def test_socket_fallback_fails_naming_the_host_and_the_overriding_file(tmp_path: Path) -> None:
    async with cluster(tmp_path) as (lab, session):
        lab.host("server2").fs.install("/home/ubuntu/.nccl.conf", "NCCL_IB_HCA=mlx4\n")
        code, records = await run(session)
        assert code == 1 and all(r.status == "failed" for r in records.values())
        reason = records["server2"].reason
        assert "NET/IB found no device on server2" in reason
        assert "/home/ubuntu/.nccl.conf sets NCCL_IB_HCA=mlx4" in reason
        assert "NCCL fell back to TCP sockets (NET/Socket) on server1" in records["server1"].reason


# --- issue 13 item 7: what the services and mpirun really inherit -------------------------------------------------
async def test_simulated_ssh_sessions_report_memlock_as_pam_limits_sets_it() -> None:
    """limits.conf(5): a memlock line for the user (or "*", never for root) sets the session's limit; without one
    the session keeps sshd's (8192 KB since Linux 5.16, kernel commit 9dcc38e2813e; systemd DefaultLimitMEMLOCK=8M).
    """
    from wizard.lab.profile import reference_profile

    host = lab_module.SimHost("server1", reference_profile(0), "10.0.0.11/24",
                              faults=[parse_fault("server1:memlock_limited")])  # fmt: skip
    assert (await host.run("bash -c 'ulimit -l'", user="ubuntu")).stdout == "8192\n"
    limits = "*  soft  memlock  unlimited\n*  hard  memlock  unlimited\n"
    host.fs.install("/etc/security/limits.d/90-memlock.conf", limits)
    assert (await host.run("bash -c 'ulimit -l'", user="ubuntu")).stdout == "unlimited\n"
    assert (await host.run("bash -c 'ulimit -l'")).stdout == "8192\n"  # "*" never applies to root
    plain = lab_module.SimHost("server2", reference_profile(1), "10.0.0.12/24")
    assert (await plain.run("bash -c 'ulimit -l'", user="ubuntu")).stdout == "unlimited\n"


async def test_a_services_nccl_conf_and_a_limited_memlock_fail_naming_file_key_values_and_the_fix(
    tmp_path: Path,
) -> None:
    """Two things NCCL inherits that /etc/nccl.conf does not show (one lab run for both, to stay fast):
    - NCCL reads $NCCL_CONF_FILE or ~/.nccl.conf of the process's user (getpwuid) before /etc/nccl.conf and keeps the
      first value (NVIDIA/nccl src/misc/param.cc initEnvFunc; setenv without overwrite, src/os/linux.cc). The
      inference/Ray units run as root: /root/.nccl.conf with NCCL_IB_TC=0 puts their RDMA on the lossy class even
      though every test by the SSH user passes.
    - mpirun starts its remote daemons over non-interactive ssh: they get the limits pam_limits sets for that
      session (limits.conf(5)), not a login shell's. RDMA pins registered memory, so anything but unlimited makes
      ibv_reg_mr fail (NCCL troubleshooting guide, memlock [S35]); the stage says so before running mpirun at all."""
    async with cluster(tmp_path, "server2:user_nccl_conf", "server2:memlock_limited") as (lab, session):
        code, records = await run(session)
        assert code == 1 and records["server2"].status == "failed"
        reason = records["server2"].reason
        assert "/root/.nccl.conf sets NCCL_IB_TC=0 but /etc/nccl.conf sets NCCL_IB_TC=106" in reason
        assert "delete the line" in reason
        assert "ulimit -l in a non-interactive SSH session as ubuntu is 8192 KB, not unlimited" in reason
        assert "/etc/security/limits.d/" in reason and "LimitMEMLOCK=infinity" in reason
        assert not any(" -np " in cmd for cmd in lab.host("server1").history)  # mpirun never started
        checks = {c.id: c for c in records["server1"].checks}
        assert checks["user_conf"].status == "pass" and checks["memlock"].status == "pass"
