"""The lab's inference simulation: venv and pip, Ray with token auth, vLLM/SGLang units that start only on correct
fabric facts, and a local API that answers like vLLM's and says it is simulated."""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator

import pytest

from wizard.lab import Lab, SimHost

RAILS = ("192.168.11", "192.168.12", "192.168.13", "192.168.14")
VENV = "/opt/roce-wizard/venv"
TOKEN = "/etc/roce-wizard/ray-auth-token"
ENV_FILE = "/etc/roce-wizard/inference.env"
HCAS = "rocep59s0f0:1,rocep59s0f1:1,rocep134s0f0:1,rocep134s0f1:1"


@pytest.fixture
async def lab() -> AsyncIterator[Lab]:
    lab = Lab.reference(["server1", "server2"], mgmt_addresses={"server1": "10.0.0.11", "server2": "10.0.0.12"})
    lab.time_scale = 0.2  # peers give up after 1.6 s instead of 8 s
    for i, name in enumerate(lab.names):
        host = lab.host(name)
        steps = [
            f"ip link set {p.netdev} mtu 9000 up && ip addr add {RAILS[j]}.{i + 1}/24 dev {p.netdev}"
            for j, p in enumerate(host.profile.ports)
        ]
        assert (await host.run(" && ".join(steps))).status == 0
    yield lab
    await lab.stop()


async def sh(host: SimHost, command: str) -> tuple[int, str, str]:
    done = await host.run(command)
    return done.status, done.stdout, done.stderr


async def install(host: SimHost, *specs: str) -> None:
    status, _, err = await sh(host, f"apt-get install -y python3-venv && python3 -m venv {VENV}")
    assert status == 0, err
    quoted = " ".join(f"'{s}'" for s in specs)
    assert (await sh(host, f"{VENV}/bin/python -m pip install {quoted}"))[0] == 0


def unit(name: str, exec_start: str, memlock: str = "infinity", extra: str = "") -> str:
    return (
        f"[Unit]\nDescription={name}\n[Service]\nType=simple\nEnvironmentFile={ENV_FILE}\n{extra}"
        f"ExecStart={exec_start}\nRestart=on-failure\nLimitMEMLOCK={memlock}\n[Install]\nWantedBy=multi-user.target\n"
    )


def env(host: SimHost, *, token: bool = True, nccl: bool = True) -> str:
    lines = [f"VLLM_HOST_IP={host.mgmt.ip}"]
    if nccl:
        lines += ["NCCL_SOCKET_IFNAME==eno1", "GLOO_SOCKET_IFNAME=eno1", f"NCCL_IB_HCA=={HCAS}"]
    if token:
        lines += ["RAY_AUTH_MODE=token", f"RAY_AUTH_TOKEN_PATH={TOKEN}"]
    return "\n".join(lines) + "\n"


async def start(host: SimHost, name: str, text: str) -> None:
    host.fs.install(f"/etc/systemd/system/{name}", text)
    assert (await sh(host, f"systemctl daemon-reload && systemctl enable {name} && systemctl restart {name}"))[0] == 0


async def settle(host: SimHost, name: str, seconds: float = 3.0) -> str:
    """The unit's state once it is no longer changing (a failing simple unit fails a moment after starting)."""
    deadline = asyncio.get_running_loop().time() + seconds
    state = ""
    while asyncio.get_running_loop().time() < deadline:
        state = (await sh(host, f"systemctl is-active {name}"))[1].strip()
        if state == "failed":
            break
        await asyncio.sleep(0.1)
    return state


async def ray_cluster(lab: Lab, token2: str = "t0ken") -> None:
    head, worker = lab.host("server1"), lab.host("server2")
    for host, token in ((head, "t0ken"), (worker, token2)):
        await install(host, "vllm==0.11.0", "ray[cgraph]>=2.52")  # CUDA 12 wheels: driver 550 runs them
        host.fs.install(ENV_FILE, env(host))
        host.fs.install(TOKEN, token + "\n", 0o600)
    await start(
        head, "ray.service", unit("ray", f"{VENV}/bin/ray start --head --port=6379 --node-ip-address=10.0.0.11 --block")
    )
    joiner = f"{VENV}/bin/ray start --address=10.0.0.11:6379 --node-ip-address=10.0.0.12 --block"
    await start(worker, "ray.service", unit("ray", joiner))


SERVE = f"{VENV}/bin/vllm serve meta-llama/Llama-3.1-70B-Instruct --tensor-parallel-size 8 --pipeline-parallel-size 2"
SERVE += " --distributed-executor-backend ray --port 8000"


async def test_a_venv_needs_python3_venv_as_on_ubuntu(lab: Lab) -> None:
    status, _, err = await sh(lab.host("server1"), f"python3 -m venv {VENV}")
    assert status == 1 and "apt install python3.10-venv" in err


async def test_pip_installs_pinned_and_latest_releases_into_the_venv(lab: Lab) -> None:
    host = lab.host("server1")
    await install(host, "vllm==0.11.0", "ray[cgraph]>=2.52")
    rows = json.loads((await sh(host, f"{VENV}/bin/python -m pip list --format=json"))[1])
    versions = {r["name"]: r["version"] for r in rows}
    assert versions["vllm"] == "0.11.0" and versions["ray"] == "2.60.0"
    assert (await sh(host, f"{VENV}/bin/ray --version"))[1] == "ray, version 2.60.0\n"


async def test_token_auth_without_a_token_file_stops_the_ray_head(lab: Lab) -> None:
    host = lab.host("server1")
    await install(host, "ray>=2.52")
    host.fs.install(ENV_FILE, env(host))
    await start(host, "ray.service", unit("ray", f"{VENV}/bin/ray start --head --port=6379 --block"))
    assert await settle(host, "ray.service") == "failed"
    journal = (await sh(host, "journalctl -u ray.service --no-pager"))[1]
    assert "Token authentication is enabled but no authentication token was found" in journal


async def test_a_worker_with_another_token_cannot_join(lab: Lab) -> None:
    await ray_cluster(lab, token2="other")
    worker = lab.host("server2")
    assert await settle(worker, "ray.service") == "failed"
    assert "AuthenticationError" in (await sh(worker, "journalctl -u ray.service --no-pager"))[1]


async def test_vllm_serves_once_both_nodes_joined_and_the_api_says_it_is_simulated(lab: Lab) -> None:
    await ray_cluster(lab)
    head = lab.host("server1")
    await start(head, "vllm.service", unit("vllm", SERVE, extra="Environment=RAY_ADDRESS=10.0.0.11:6379\n"))
    for _ in range(40):
        if (await sh(head, "curl -sf http://127.0.0.1:8000/health"))[0] == 0:
            break
        await asyncio.sleep(0.1)
    body = '{"model":"meta-llama/Llama-3.1-70B-Instruct","prompt":"hello world","max_tokens":64}'
    status, out, _ = await sh(
        head, f"curl -sS -d '{body}' -w '\\n%{{http_code}} %{{time_total}}\\n' http://127.0.0.1:8000/v1/completions"
    )
    doc_text, code_line = out.rstrip("\n").rsplit("\n", 1)
    doc = json.loads(doc_text)
    assert status == 0 and code_line.startswith("200 ")
    assert doc["system_fingerprint"] == "roce-wizard-simulated" and doc["usage"]["completion_tokens"] == 64


async def test_vllm_without_the_nccl_environment_never_serves(lab: Lab) -> None:
    await ray_cluster(lab)
    head = lab.host("server1")
    head.fs.install(ENV_FILE, env(head, nccl=False))
    await start(head, "vllm.service", unit("vllm", SERVE, extra="Environment=RAY_ADDRESS=10.0.0.11:6379\n"))
    assert await settle(head, "vllm.service") == "failed"
    assert "NCCL_SOCKET_IFNAME is not set" in (await sh(head, "journalctl -u vllm.service --no-pager"))[1]
    assert (await sh(head, "curl -s http://127.0.0.1:8000/health"))[0] == 7


async def test_a_worker_raylet_without_unlimited_memlock_fails_the_engine_naming_it(lab: Lab) -> None:
    await ray_cluster(lab)
    worker, head = lab.host("server2"), lab.host("server1")
    joiner = f"{VENV}/bin/ray start --address=10.0.0.11:6379 --node-ip-address=10.0.0.12 --block"
    await start(worker, "ray.service", unit("ray", joiner, memlock="8388608"))
    await start(head, "vllm.service", unit("vllm", SERVE, extra="Environment=RAY_ADDRESS=10.0.0.11:6379\n"))
    assert await settle(head, "vllm.service") == "failed"
    journal = (await sh(head, "journalctl -u vllm.service --no-pager"))[1]
    assert "server2" in journal and "ibv_reg_mr failed" in journal and "LimitMEMLOCK=infinity" in journal


async def test_the_seed_runbook_flags_are_rejected_like_vllms_argparse(lab: Lab) -> None:
    host = lab.host("server1")
    await install(host, "vllm==0.11.0")
    status, _, err = await sh(host, f"{VENV}/bin/vllm serve x/y --engine-use-ray --ray-address auto")
    assert status == 2 and "unrecognized arguments: --engine-use-ray --ray-address auto" in err


async def test_curl_to_a_port_nobody_serves_is_refused(lab: Lab) -> None:
    status, _, err = await sh(lab.host("server1"), "curl -sS http://127.0.0.1:8000/health")
    assert status == 7 and "Connection refused" in err


async def test_vllm_gives_workers_the_heads_nccl_variables_unless_the_non_carry_over_file_keeps_them(lab: Lab) -> None:
    """vllm/ray/ray_env.py copies NCCL_* from the head to every Ray worker; names listed in
    $VLLM_CONFIG_ROOT/ray_non_carry_over_env_vars.json stay each worker's own."""
    await ray_cluster(lab)
    head, worker = lab.host("server1"), lab.host("server2")
    # The worker's first port has no address (so no IPv4 RoCE v2 GID): its own NCCL_IB_HCA leaves it out, the head's
    # names it.
    assert (await sh(worker, "ip addr flush dev ens1f0np0"))[0] == 0
    own = HCAS.replace("rocep59s0f0:1,", "")
    worker.fs.install(ENV_FILE, env(worker).replace(HCAS, own))
    joiner = f"{VENV}/bin/ray start --address=10.0.0.11:6379 --node-ip-address=10.0.0.12 --block"
    await start(worker, "ray.service", unit("ray", joiner))
    extra = "Environment=RAY_ADDRESS=10.0.0.11:6379\nEnvironment=VLLM_CONFIG_ROOT=/etc/roce-wizard/vllm\n"
    await start(head, "vllm.service", unit("vllm", SERVE, extra=extra))
    assert await settle(head, "vllm.service") == "failed"
    journal = (await sh(head, "journalctl -u vllm.service --no-pager"))[1]
    assert (
        "(RayWorkerWrapper ip=10.0.0.12, server2) NCCL WARN NET/IB : rocep59s0f0:1 unusable (no IPv4 RoCE v2 GID)"
        in journal
    )
    head.fs.install("/etc/roce-wizard/vllm/ray_non_carry_over_env_vars.json", '["NCCL_IB_HCA", "NCCL_SOCKET_IFNAME"]')
    await start(head, "vllm.service", unit("vllm", SERVE, extra=extra))
    for _ in range(40):
        if (await sh(head, "curl -sf http://127.0.0.1:8000/health"))[0] == 0:
            break
        await asyncio.sleep(0.1)
    assert (await sh(head, "curl -sf http://127.0.0.1:8000/health"))[0] == 0


async def test_the_latest_vllm_wheel_dies_at_cuda_init_on_driver_550_and_its_cu129_build_serves(lab: Lab) -> None:
    """vLLM's PyPI wheels are CUDA 13 builds (driver >= 580); its +cu129 build comes from wheels.vllm.ai with
    PyTorch's cu129 build, and needs the version named (PyPI hosts no local versions)."""
    host = lab.host("server1")
    await install(host, "vllm")  # the newest release from PyPI
    host.fs.install(ENV_FILE, env(host, token=False))
    single = SERVE.replace("--pipeline-parallel-size 2", "--pipeline-parallel-size 1").replace("ray", "mp")
    await start(host, "vllm.service", unit("vllm", single))
    assert await settle(host, "vllm.service") == "failed"
    journal = (await sh(host, "journalctl -u vllm.service --no-pager"))[1]
    assert "The NVIDIA driver on your system is too old (found version 12040)" in journal
    pip = f"{VENV}/bin/python -m pip install"
    refused = await sh(host, f"{pip} vllm==0.33.0+cu129")
    assert refused[0] == 1 and "No matching distribution found for vllm==0.33.0+cu129" in refused[2]
    indexes = (
        "--extra-index-url https://wheels.vllm.ai/0.33.0/cu129 --extra-index-url https://download.pytorch.org/whl/cu129"
    )
    assert (await sh(host, f"{pip} {indexes} vllm==0.33.0+cu129"))[0] == 0
    await start(host, "vllm.service", unit("vllm", single))
    for _ in range(40):
        if (await sh(host, "curl -sf http://127.0.0.1:8000/health"))[0] == 0:
            break
        await asyncio.sleep(0.1)
    assert (await sh(host, "curl -sf http://127.0.0.1:8000/health"))[0] == 0
