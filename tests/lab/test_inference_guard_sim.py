"""The lab's systemd honours Requires=/After= and its vLLM honours an API key, as real hosts do.

Sources: systemd.unit(5), [Unit] Requires= and After= ("If one of the other units fails to activate, and an ordering
dependency After= on the failing unit is set, this unit will not be started";
https://www.freedesktop.org/software/systemd/man/latest/systemd.unit.html#Requires=); vLLM "OpenAI-Compatible Server"
(--api-key / VLLM_API_KEY; the key guards /v1/*, /health stays open); curl(1) --header @file (curl >= 7.55.0).
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator

import pytest

from tests.lab.test_inference_sim import ENV_FILE, VENV, env, install, settle, sh, unit
from wizard.lab import Lab, SimHost

QOS = "roce-wizard-qos.service"
KEY_ENV = "/etc/roce-wizard/inference-api-key.env"
KEY_HEADER = "/etc/roce-wizard/inference-api-key.header"
RAILS = ("192.168.11", "192.168.12", "192.168.13", "192.168.14")
SERVE = f"{VENV}/bin/vllm serve meta-llama/Llama-3.1-8B-Instruct --tensor-parallel-size 8 --port 8000"


@pytest.fixture
async def lab() -> AsyncIterator[Lab]:
    lab = Lab.reference(["server1"], mgmt_addresses={"server1": "10.0.0.11"})
    lab.time_scale = 0.2
    lab.reboot_seconds = 0.2
    host = lab.host("server1")
    steps = [
        f"ip link set {p.netdev} mtu 9000 up && ip addr add {RAILS[j]}.1/24 dev {p.netdev}"
        for j, p in enumerate(host.profile.ports)
    ]
    assert (await host.run(" && ".join(steps))).status == 0
    await install(host, "vllm==0.11.0")  # a CUDA 12 wheel: the reference hosts run driver 550
    host.fs.install(ENV_FILE, env(host, token=False))
    yield lab
    await lab.stop()


def qos_unit(script: str) -> str:
    return (
        "[Unit]\nDescription=roce-wizard QoS\n[Service]\nType=oneshot\nRemainAfterExit=yes\n"
        f"ExecStart=/bin/sh -c '{script}'\n[Install]\nWantedBy=multi-user.target\n"
    )


async def install_units(host: SimHost, qos_script: str) -> None:
    host.fs.install(f"/etc/systemd/system/{QOS}", qos_unit(qos_script))
    engine = unit("vllm", SERVE).replace("[Service]", f"Requires={QOS}\nAfter={QOS}\n[Service]", 1)
    host.fs.install("/etc/systemd/system/vllm.service", engine)
    assert (await sh(host, f"systemctl daemon-reload && systemctl enable {QOS} vllm.service"))[0] == 0


async def healthy(host: SimHost) -> bool:
    for _ in range(30):
        if (await sh(host, "curl -sf http://127.0.0.1:8000/health"))[0] == 0:
            return True
        await asyncio.sleep(0.1)
    return False


async def test_a_unit_that_requires_a_failed_qos_unit_is_not_started(lab: Lab) -> None:
    """systemd.unit(5) Requires= + After=: the required unit fails, so the dependent is never started."""
    host = lab.host("server1")
    await install_units(host, "exit 1")
    status, _, err = await sh(host, "systemctl start vllm.service")
    assert status == 1 and "A dependency job for vllm.service failed" in err
    assert (await sh(host, "systemctl is-active vllm.service"))[1].strip() == "inactive"
    assert (await sh(host, f"systemctl is-active {QOS}"))[1].strip() == "failed"
    journal = (await sh(host, "journalctl -u vllm.service --no-pager"))[1]
    assert "Dependency failed for vllm." in journal
    assert (await sh(host, "curl -s http://127.0.0.1:8000/health"))[0] == 7


async def test_at_boot_a_failed_qos_unit_keeps_the_engine_down_and_a_good_one_lets_it_start(lab: Lab) -> None:
    """systemd.unit(5): ordering After= plus Requires= holds at boot too (the boot transaction)."""
    host = lab.host("server1")
    await install_units(host, "exit 3")
    host.request_reboot()
    await host._reboot_task
    assert (await sh(host, "systemctl is-active vllm.service"))[1].strip() == "inactive"
    journal = (await sh(host, "journalctl -u vllm.service --no-pager"))[1]
    assert "Dependency failed for vllm." in journal and "Started vllm." not in journal
    host.fs.install(f"/etc/systemd/system/{QOS}", qos_unit("true"))
    host.request_reboot()
    await host._reboot_task
    assert (await sh(host, f"systemctl is-active {QOS}"))[1].strip() == "active"
    journal = (await sh(host, "journalctl -u vllm.service --no-pager"))[1]
    assert "Started vllm." in journal.split("Dependency failed")[-1]  # started in the second boot


async def test_restarting_the_required_unit_restarts_the_engine_and_a_failure_stops_it(lab: Lab) -> None:
    """systemd.unit(5) Requires=: the dependent is stopped (or restarted) when the required unit is."""
    host = lab.host("server1")
    await install_units(host, "true")
    assert (await sh(host, "systemctl start vllm.service"))[0] == 0 and await healthy(host)
    host.fs.install(f"/etc/systemd/system/{QOS}", qos_unit("exit 1"))
    assert (await sh(host, f"systemctl daemon-reload && systemctl restart {QOS}"))[0] == 1
    assert await settle(host, "vllm.service", 0.5) == "inactive"


async def test_vllm_with_an_api_key_refuses_v1_without_it_and_keeps_health_open(lab: Lab) -> None:
    host = lab.host("server1")
    assert (await sh(host, "openssl rand -hex 32"))[1].strip().isalnum()
    host.fs.install(KEY_ENV, "VLLM_API_KEY=s3cr3t\n", 0o600)
    host.fs.install(KEY_HEADER, "Authorization: Bearer s3cr3t\n", 0o600)
    engine = unit("vllm", SERVE).replace("[Service]\n", f"[Service]\nEnvironmentFile={KEY_ENV}\n", 1)
    host.fs.install("/etc/systemd/system/vllm.service", engine)
    assert (await sh(host, "systemctl daemon-reload && systemctl start vllm.service"))[0] == 0
    assert await healthy(host)
    models = "curl -sS -w '\\n%{http_code} %{time_total}\\n' http://127.0.0.1:8000/v1/models"
    assert (await sh(host, models))[1].splitlines()[-1].startswith("401 ")
    assert (await sh(host, models.replace("curl", f"curl -H @{KEY_HEADER}")))[1].splitlines()[-1].startswith("200 ")
