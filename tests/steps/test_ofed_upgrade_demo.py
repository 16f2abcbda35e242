"""Stage ofed end to end: moving a host to another DOCA-OFED release, and loading the driver by reboot (simulated)."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.steps.test_ofed_demo import cluster, run
from wizard.answers.model import Answers, load_answers

EXAMPLE = Path(__file__).resolve().parents[2] / "assets" / "answers.example.yaml"
DOCA_291 = (
    "curl -fsSL -o /tmp/key.pub https://linux.mellanox.com/public/repo/doca/GPG-KEY-Mellanox.pub && "
    "gpg --batch --yes --dearmor -o /etc/apt/trusted.gpg.d/GPG-KEY-Mellanox.pub /tmp/key.pub && "
    "echo 'deb [signed-by=/etc/apt/trusted.gpg.d/GPG-KEY-Mellanox.pub] "
    "https://linux.mellanox.com/public/repo/doca/2.9.1/ubuntu22.04/x86_64/ ./' > /etc/apt/sources.list.d/doca.list && "
    "apt-get update && env DEBIAN_FRONTEND=noninteractive apt-get install -y linux-headers-$(uname -r) doca-ofed"
)


@pytest.fixture
def answers() -> Answers:
    return load_answers(EXAMPLE)


async def test_upgrade_to_another_doca_release_uninstalls_the_old_one_first(answers: Answers, tmp_path: Path) -> None:
    async with cluster(answers) as lab:
        for name in lab.names:  # DOCA-OFED 2.9.1 installed by hand as its docs say, driver loaded
            done = await lab.host(name).run(f"{DOCA_291} && /etc/init.d/openibd restart")
            assert done.status == 0, done.stderr
        answers.ofed.doca_version = "3.0.0"
        upgrade = await run(lab, answers, tmp_path)
        assert upgrade.code == 0, {h: r.reason for h, r in upgrade.records.items()}
        summaries = [c.summary for c in upgrade.plans["server1"].changes]
        assert summaries[0] == (
            "Uninstall DOCA-OFED 2.9.1 (doca-ofed 2.9.1-018000-24.10-ubuntu2204) as NVIDIA documents"
        )
        assert summaries[-1] == "Restart the driver with the DOCA-OFED 3.0.0 modules (/etc/init.d/openibd restart)"
        info = await lab.host("server1").run("ofed_info -s")
        assert info.stdout.startswith("OFED-internal-25.04-0.6.1")


async def test_reboot_reload_reconnects_and_finds_the_new_driver_and_names(answers: Answers, tmp_path: Path) -> None:
    answers.ofed.driver_reload = "reboot"
    async with cluster(answers) as lab:
        outcome = await run(lab, answers, tmp_path)
        assert outcome.code == 0, {h: r.reason for h, r in outcome.records.items()}
        last = outcome.plans["server1"].changes[-1]
        assert (last.summary, last.reboot, last.commands) == ("Reboot to load the DOCA-OFED 2.9.1 driver", True, [])
        ports = outcome.facts["server1"]["discovery"]["ports"]
        assert [p["rdma_device"] for p in ports] == ["mlx5_0", "mlx5_1", "mlx5_2", "mlx5_3"]
        assert outcome.facts["server1"]["ofed"]["driver_version"] == "24.10-1.1.4"
