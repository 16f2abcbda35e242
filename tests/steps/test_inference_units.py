"""Stage inference, generated content: the fabric environment, the Ray/vLLM/SGLang units with their exact flags,
and one test per seed-runbook mistake that must never come back."""

from __future__ import annotations

import json
import shlex

import pytest

from steps.inference.units import ENV_PATH, NON_CARRY_PATH, RAY_UNIT, TOKEN_PATH, UNIT_DIR, WAIT_PATH
from tests.steps.test_inference import ENGINE_PATH, RAY_PATH, cluster, commands, disc, exec_start, plan, written
from wizard.paths import assets_dir

ASSETS = assets_dir()

# -- the environment and the units ----------------------------------------------------------------------------


def test_env_comes_from_the_verified_fabric_facts_with_inbox_names() -> None:
    v = cluster(server2=disc("server2", 2, ofed_names=False))
    env = written(plan(v, "server2"))[ENV_PATH]
    lines = [line for line in env.splitlines() if not line.startswith("#")]
    assert lines == [
        "NCCL_SOCKET_IFNAME==eno1",
        "GLOO_SOCKET_IFNAME=eno1",
        "NCCL_IB_HCA==rocep59s0f0:1,rocep59s0f1:1,rocep134s0f0:1,rocep134s0f1:1",
        "VLLM_HOST_IP=10.0.0.12",
        "VLLM_CONFIG_ROOT=/etc/roce-wizard/vllm",
        "RAY_AUTH_MODE=token",
        f"RAY_AUTH_TOKEN_PATH={TOKEN_PATH}",
    ]


def test_hosts_whose_hca_names_differ_keep_their_own_nccl_names_across_ray() -> None:
    """vLLM copies the head's NCCL_* to its Ray workers (vllm/ray/ray_env.py) unless ray_non_carry_over_env_vars.json
    in VLLM_CONFIG_ROOT lists them: server1 has mlx5_* names, server2 inbox rocep* names, and each keeps its own."""
    v = cluster(server2=disc("server2", 2, ofed_names=False))
    for host in ("server1", "server2"):
        files = written(plan(v, host))
        assert json.loads(files[NON_CARRY_PATH]) == ["GLOO_SOCKET_IFNAME", "NCCL_IB_HCA", "NCCL_SOCKET_IFNAME"]
        assert "VLLM_CONFIG_ROOT=/etc/roce-wizard/vllm\n" in files[ENV_PATH]
    assert "NCCL_IB_HCA==mlx5_0:1" in written(plan(v, "server1"))[ENV_PATH]


def test_nccl_conf_file_is_named_when_the_nccl_stage_writes_elsewhere() -> None:
    env = written(plan(cluster("nccl:\n  conf_path: /etc/roce-wizard/nccl.conf\n")))[ENV_PATH]
    assert "NCCL_CONF_FILE=/etc/roce-wizard/nccl.conf\n" in env


def test_ray_head_starts_with_its_management_address_and_a_local_dashboard() -> None:
    unit = written(plan(cluster()))[RAY_PATH]
    assert exec_start(unit) == [
        "/opt/roce-wizard/venv/bin/ray",
        "start",
        "--head",
        "--port=6379",
        "--node-ip-address=10.0.0.11",
        "--dashboard-host=127.0.0.1",
        "--disable-usage-stats",
        "--block",
    ]


def test_ray_worker_joins_the_head_with_its_own_address() -> None:
    unit = written(plan(cluster("inference:\n  ray_port: 6380\n"), "server2"))[RAY_PATH]
    assert exec_start(unit) == [
        "/opt/roce-wizard/venv/bin/ray",
        "start",
        "--address=10.0.0.11:6380",
        "--node-ip-address=10.0.0.12",
        "--disable-usage-stats",
        "--block",
    ]


def test_ray_dashboard_is_never_bound_to_all_interfaces() -> None:
    for host in ("server1", "server2"):
        assert "0.0.0.0" not in written(plan(cluster(), host))[RAY_PATH]


def test_vllm_on_ray_serves_from_the_head_only() -> None:
    v = cluster()
    head, worker = written(plan(v)), written(plan(v, "server2"))
    assert ENGINE_PATH not in worker
    assert exec_start(head[ENGINE_PATH]) == [
        "/opt/roce-wizard/venv/bin/vllm",
        "serve",
        "meta-llama/Llama-3.1-70B-Instruct",
        "--tensor-parallel-size",
        "8",
        "--pipeline-parallel-size",
        "2",
        "--distributed-executor-backend",
        "ray",
        "--max-model-len",
        "8192",
        "--gpu-memory-utilization",
        "0.9",
        "--host",
        "0.0.0.0",
        "--port",
        "8000",
    ]
    assert "Environment=RAY_ADDRESS=10.0.0.11:6379\n" in head[ENGINE_PATH]
    # Bound to the head's Ray node, restarted after any exit, and started only once the group's 16 GPUs joined.
    assert f"BindsTo={RAY_UNIT}\n" in head[ENGINE_PATH] and "Restart=always\n" in head[ENGINE_PATH]
    pre = next(line for line in head[ENGINE_PATH].splitlines() if line.startswith("ExecStartPre="))
    assert shlex.split(pre.removeprefix("ExecStartPre=")) == [
        "/opt/roce-wizard/venv/bin/python",
        WAIT_PATH,
        "16",
        "1800",
    ]
    assert head[WAIT_PATH] == (ASSETS / "inference" / "ray-wait-gpus.py").read_text()
    assert "TimeoutStartSec=1860\n" in head[ENGINE_PATH] and "StartLimitBurst=10\n" in head[ENGINE_PATH]


def test_vllm_mp_backend_runs_headless_followers_without_ray() -> None:
    v = cluster("inference:\n  executor_backend: mp\n  dist_port: 29600\n")
    head, worker = written(plan(v)), written(plan(v, "server2"))
    assert RAY_PATH not in head and RAY_PATH not in worker
    tail = ["--nnodes", "2", "--node-rank", "1", "--master-addr", "10.0.0.11", "--master-port", "29600"]
    argv = exec_start(worker[ENGINE_PATH])
    assert argv[7:9] == ["--distributed-executor-backend", "mp"] and argv[9:17] == tail
    assert argv[-1] == "--headless" and "--port" not in argv
    assert exec_start(head[ENGINE_PATH])[9:13] == ["--nnodes", "2", "--node-rank", "0"]
    assert "RAY_AUTH_MODE" not in head[ENV_PATH]


def test_sglang_runs_on_every_node_with_its_rank() -> None:
    v = cluster("inference:\n  engine: sglang\n  engine_version: 0.5.19\n")
    for rank, host in enumerate(("server1", "server2")):
        files = written(plan(v, host))
        argv = exec_start(files[ENGINE_PATH])
        assert argv[:5] == [
            "/opt/roce-wizard/venv/bin/python",
            "-m",
            "sglang.launch_server",
            "--model-path",
            "meta-llama/Llama-3.1-70B-Instruct",
        ]
        assert argv[5:17] == [
            "--tp-size",
            "8",
            "--pp-size",
            "2",
            "--context-length",
            "8192",
            "--dist-init-addr",
            "10.0.0.11:29501",
            "--nnodes",
            "2",
            "--node-rank",
            str(rank),
        ]
        assert ("--port" in argv) == (rank == 0)
        assert RAY_PATH not in files and "VLLM_HOST_IP" not in files[ENV_PATH]


def test_sglang_after_0_5_19_needs_a_cuda_13_driver() -> None:
    p = plan(cluster("inference:\n  engine: sglang\n"))
    assert any("SGLang after 0.5.19 ships only CUDA 13 wheels" in b and "550.127.05" in b for b in p.blockers)


SYSTEMD_KEYS = {
    "Unit": {
        "Description",
        "Documentation",
        "Wants",
        "After",
        "Requires",
        "BindsTo",
        "StartLimitIntervalSec",
        "StartLimitBurst",
    },
    "Service": {
        "Type",
        "EnvironmentFile",
        "ExecStartPre",
        "TimeoutStartSec",
        "Environment",
        "ExecStart",
        "Restart",
        "RestartSec",
        "TimeoutStopSec",
        "LimitMEMLOCK",
        "LimitNOFILE",
    },
    "Install": {"WantedBy"},
}


@pytest.mark.parametrize(
    "yaml", ["", "inference:\n  executor_backend: mp\n", "inference:\n  engine: sglang\n  engine_version: 0.5.19\n"]
)
def test_units_are_valid_systemd_syntax_with_memlock_unlimited(yaml: str) -> None:
    v = cluster(yaml)
    units = [c for h in ("server1", "server2") for p, c in written(plan(v, h)).items() if p.startswith(UNIT_DIR)]
    assert units
    for unit in units:
        section = None
        seen: dict[str, set[str]] = {}
        for line in unit.splitlines():
            if not line or line.startswith("#"):
                continue
            if line.startswith("["):
                section = line.strip("[]")
                assert section in SYSTEMD_KEYS and line == f"[{section}]"
                continue
            key, sep, value = line.partition("=")
            assert sep and section and key in SYSTEMD_KEYS[section] and value, line
            seen.setdefault(section, set()).add(key)
        assert {"ExecStart", "EnvironmentFile", "LimitMEMLOCK"} <= seen["Service"]
        assert "LimitMEMLOCK=infinity\n" in unit and f"EnvironmentFile={ENV_PATH}\n" in unit
        assert exec_start(unit)[0].startswith("/opt/roce-wizard/venv/bin/")
        assert "%" not in unit.replace("%%", "")


# -- what the seed runbook got wrong never comes back ---------------------------------------------------------


def _everything(yaml: str = "") -> str:
    v = cluster(yaml)
    return "\n".join(
        "\n".join(commands(plan(v, h))) + "\n".join(written(plan(v, h)).values()) for h in ("server1", "server2")
    )


def test_engine_use_ray_never_appears() -> None:
    assert "--engine-use-ray" not in _everything()


def test_ray_address_is_never_passed_as_a_vllm_flag() -> None:
    assert "--ray-address" not in _everything()


@pytest.mark.parametrize(
    "flag",
    [
        "--max-tokens",
        "--max-batch-size",
        "--node-addr",
        "--worker-addr",
        "--num-nodes",
        "--use-nccl",
        "--distributed",
        "--master ",
        "--model ",
    ],
)
def test_invented_sglang_flags_never_appear(flag: str) -> None:
    assert flag not in _everything("inference:\n  engine: sglang\n  engine_version: 0.5.19\n")


def test_the_seed_model_ids_are_not_real_and_are_refused() -> None:
    p = plan(cluster("inference:\n  model: deepseek-ai/deepseek-v3-8b\n"))
    assert any("not in roce-wizard's size table" in b for b in p.blockers)


def test_conda_is_never_used_only_a_venv_and_pip() -> None:
    text = _everything()
    assert "conda" not in text
    assert (
        "sudo /opt/roce-wizard/venv/bin/python -m pip install --disable-pip-version-check --extra-index-url"
        " https://wheels.vllm.ai/0.33.0/cu129 --extra-index-url https://download.pytorch.org/whl/cu129"
        " vllm==0.33.0+cu129 'ray[cgraph]>=2.52'" in text
    )
