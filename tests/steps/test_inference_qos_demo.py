"""Stage inference against the simulated cluster: an engine never starts on top of a failed RoCE QoS unit
(systemd.unit(5) Requires= + After=, https://www.freedesktop.org/software/systemd/man/latest/systemd.unit.html#Requires=),
and the other replica keeps serving."""

from __future__ import annotations

from pathlib import Path

import pytest

from steps.inference.units import ENGINE_UNIT, QOS_UNIT
from tests.steps.test_inference_demo import EXAMPLE, RAILS, cluster, run
from wizard.answers.model import Answers, load_answers
from wizard.lab import SimHost


@pytest.fixture
def answers() -> Answers:
    """The example answers (layout auto), with a short probe as in test_inference_demo."""
    loaded = load_answers(EXAMPLE)
    loaded.inference.probe_requests, loaded.inference.ready_timeout_s = 8, 60
    return loaded


QOS_PATH = f"/etc/systemd/system/{QOS_UNIT}"


def qos_unit(script: str) -> str:
    return (
        "[Unit]\nDescription=roce-wizard RoCE QoS (test stand-in)\n[Service]\nType=oneshot\nRemainAfterExit=yes\n"
        f"ExecStart=/bin/sh -c '{script}'\n[Install]\nWantedBy=multi-user.target\n"
    )


async def install_qos(host: SimHost, script: str) -> None:
    host.fs.install(QOS_PATH, qos_unit(script))
    await host.run(f"systemctl daemon-reload && systemctl enable {QOS_UNIT} && systemctl restart {QOS_UNIT}")


async def test_a_failed_qos_unit_keeps_the_engine_down_after_reboot_and_the_rerun_names_it(
    answers: Answers, tmp_path: Path
) -> None:
    """systemd.unit(5) Requires=/After=: a failed QoS script means no engine (NCCL never runs on a lossy class)."""
    async with cluster(answers) as lab:
        lab.reboot_seconds = 0.2
        for name in lab.names:
            await install_qos(lab.host(name), "true")
        code, records, _ = await run(lab, answers, tmp_path)
        assert code == 0, {h: r.reason for h, r in records.items()}
        server1 = lab.host("server1")
        assert f"Requires={QOS_UNIT}" in server1.fs.read_text(f"/etc/systemd/system/{ENGINE_UNIT}").splitlines()
        server1.fs.install(QOS_PATH, qos_unit("exit 1"))
        server1.request_reboot()
        await server1._reboot_task
        assert (await server1.run(f"systemctl is-active {ENGINE_UNIT}")).stdout.strip() == "inactive"
        assert "Dependency failed for" in (await server1.run(f"journalctl -u {ENGINE_UNIT}")).stdout
        # the rails come back as the network stage's netplan would bring them (the demo sets them by hand)
        addrs = [f"ip addr add {RAILS[j]}.1/24 dev {p.netdev}" for j, p in enumerate(server1.profile.ports)]
        assert (await server1.run(" && ".join(addrs))).status == 0
        code, records, _ = await run(lab, answers, tmp_path)
        assert code == 1
        assert records["server1"].status == "failed" and "roce-wizard-qos.service failed" in records["server1"].reason
        assert records["server2"].status == "done"
