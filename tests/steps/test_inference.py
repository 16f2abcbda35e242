"""Stage inference, plan side: the fit rule, the serving group, the units' exact content and what they never contain."""

from __future__ import annotations

import json
import re
import shlex
from typing import Any

from steps.discovery.facts import DiscoveryFacts, Gpu
from steps.inference.layout import build_layout
from steps.inference.plan import desired_files
from steps.inference.stage import Inference
from steps.inference.units import ENGINE_UNIT, ENV_PATH, LOCK_PATH, RAY_UNIT, TOKEN_PATH, UNIT_DIR
from tests.steps.facts_builder import REFERENCE_PORTS, answers, port, reference_host, view
from wizard.engine.step import ClusterView, HostPlan, Impact

STEP = Inference()
RAILS = ("192.168.11", "192.168.12", "192.168.13", "192.168.14")
RAY_PATH = f"{UNIT_DIR}/{RAY_UNIT}"
ENGINE_PATH = f"{UNIT_DIR}/{ENGINE_UNIT}"


def disc(
    name: str = "server1", host_id: int = 1, *, gpus: int = 8, memory_mib: int = 46068, **kw: Any
) -> DiscoveryFacts:
    """The reference server after the network stage: one IPv4 per rail, 8 x L20 48 GB, SSH on eno1."""
    ofed = kw.pop("ofed_names", True)
    facts = reference_host(
        name,
        ofed_names=ofed,
        ssh_address=f"10.0.0.{10 + host_id}",
        other_interfaces={"eno1": [f"10.0.0.{10 + host_id}/24"]},
        gpus=[Gpu(index=i, name="NVIDIA L20", memory_mib=memory_mib) for i in range(gpus)],
        gpu_driver="550.127.05",
    )
    facts.ports = [
        port(pci, netdev, rdma if ofed else inbox, ipv4=[f"{RAILS[i]}.{host_id}/24"], numa=i // 2, mtu=9000)
        for i, (pci, netdev, inbox, rdma) in enumerate(REFERENCE_PORTS)
        for rdma in [rdma]
    ]
    for key, value in kw.items():
        setattr(facts, key, value)
    return facts


def fresh(**extra: Any) -> dict[str, Any]:
    """Inference facts of a host the stage has never touched."""
    facts: dict[str, Any] = {
        "enabled": True,
        "python": None,
        "packages": {},
        "files": {},
        "units": {},
        "ray_token_sha256": None,
        "latest": "0.33.0",  # `pip index versions vllm`, read because the venv has no vLLM yet
        # No weights cached yet; root has run `hf auth login` (the gated Llama repositories need it).
        "weights": {"revision": None, "blobs": 0, "incomplete": 0, "token": True},
    }
    facts.update(extra)
    return facts


def span(yaml: str) -> str:
    """These tests describe one serving group across nodes: inference.layout span unless the YAML picks a layout
    (tests/steps/test_inference_layout.py covers auto and replicas)."""
    if "layout:" in yaml:
        return yaml
    if "inference:\n" in yaml:
        return yaml.replace("inference:\n", "inference:\n  layout: span\n", 1)
    return yaml + "inference:\n  layout: span\n"


def cluster(
    yaml: str = "", hosts: int = 2, inference: dict[str, dict[str, Any]] | None = None, **discs: Any
) -> ClusterView:
    names = tuple(f"server{i + 1}" for i in range(hosts))
    ans = answers(span(yaml), hosts=names)
    facts: dict[str, dict[str, Any]] = {}
    for i, name in enumerate(names):
        inf = (inference or {}).get(name) or fresh()
        facts[name] = {"discovery": discs.get(name) or disc(name, i + 1), "inference": inf}
    return view(ans, facts)


def configured(v: ClusterView, **override: Any) -> ClusterView:
    """The same cluster after a successful apply: files match, packages present, units active, tokens equal."""
    for host in [h.name for h in v.answers.hosts]:
        layout = build_layout(v)
        files = desired_files(layout.effective(v), layout, host)
        units = {
            p.rsplit("/", 1)[1]: {"active": "active", "enabled": "enabled"} for p in files if p.startswith(UNIT_DIR)
        }
        lock = "ray==2.52.1\nsglang==0.5.19\ntorch==2.8.0\nvllm==0.11.0\n"  # the head's pip freeze, copied
        v.facts[host]["inference"].update(
            python="3.10.12",
            packages={"vllm": "0.11.0", "ray": "2.52.1", "torch": "2.8.0", "sglang": "0.5.19"},
            files={**files, LOCK_PATH: lock},
            units=units,
            ray_token_sha256="ab12",
            api_key={"env": "600 root", "header": "600 root", "nginx": "600 root"},
            weights={
                "revision": "5825c9120fc701a0b7d9a30d63005eee7e4d58a2",
                "blobs": 37,
                "incomplete": 0,
                "token": True,
            },
        )
        v.facts[host]["inference"].update(override)
    return v


def plan(v: ClusterView, host: str = "server1") -> HostPlan:
    return STEP.plan(v, host)


def written(p: HostPlan) -> dict[str, str]:
    return {f.path: f.content for c in p.changes for f in c.files}


def commands(p: HostPlan) -> list[str]:
    return [cmd.shell() for c in p.changes for cmd in c.commands]


def exec_start(unit: str) -> list[str]:
    line = next(line for line in unit.splitlines() if line.startswith("ExecStart="))
    return shlex.split(line.removeprefix("ExecStart="))


# -- the fit rule ---------------------------------------------------------------------------------------------


def test_deepseek_v3_is_refused_on_16_l20_with_the_numbers() -> None:
    p = plan(cluster("inference:\n  model: deepseek-ai/DeepSeek-V3\n"))
    assert p.changes == []
    [refusal] = [b for b in p.blockers if "refused" in b]
    assert "671B parameters x 1 byte(s) (fp8) = 671 GB" in refusal
    assert "41.0 GiB per GPU on 16 GPUs (TP 8 x PP 2)" in refusal
    assert "NVIDIA L20 (46068 MiB) gives 40.5 GiB" in refusal
    assert "at least 20 such GPUs are needed" in refusal


def test_llama_3_1_70b_instruct_fits_with_tp8_pp2() -> None:
    p = plan(cluster("inference:\n  model: meta-llama/Llama-3.1-70B-Instruct\n"))
    assert p.blockers == []
    assert any("fits: meta-llama/Llama-3.1-70B-Instruct" in n and "8.6 GiB per GPU on 16 GPUs" in n for n in p.notes)


def test_a_model_outside_the_table_needs_params_billion() -> None:
    p = plan(cluster("inference:\n  model: acme/Foo-34B-Chat\n"))
    assert any("inference.params_billion" in b for b in p.blockers)


def test_params_billion_sizes_an_unknown_model() -> None:
    p = plan(cluster("inference:\n  model: acme/Foo-34B-Chat\n  params_billion: 34\n  dtype: bf16\n"))
    assert p.blockers == []
    assert any("34B parameters x 2 byte(s)" in n for n in p.notes)


def test_fp8_on_a_16_bit_checkpoint_serves_it_with_online_quantization() -> None:
    p = plan(cluster("inference:\n  model: Qwen/Qwen2.5-72B-Instruct\n  dtype: fp8\n"))
    assert exec_start(written(p)[ENGINE_PATH])[-6:-4] == ["--quantization", "fp8"]


def test_int4_on_a_16_bit_checkpoint_is_refused() -> None:
    p = plan(cluster("inference:\n  model: Qwen/Qwen2.5-72B-Instruct\n  dtype: int4\n"))
    assert any("needs a checkpoint quantized" in b for b in p.blockers)


def test_a_long_context_that_leaves_no_kv_room_is_refused() -> None:
    # One node at half the GPU memory: the weights fit, one 131072-token sequence (5.0 GiB per GPU) does not.
    yaml = (
        "inference:\n  model: meta-llama/Llama-3.1-70B-Instruct\n  tensor_parallel_size: 8\n"
        "  pipeline_parallel_size: 1\n  max_model_len: 131072\n  gpu_memory_utilization: 0.5\n"
    )
    p = plan(cluster(yaml))
    assert any("needs at least 5.0 GiB per GPU (131072 tokens of one sequence)" in b for b in p.blockers)


# -- the serving group ----------------------------------------------------------------------------------------


def test_tensor_parallel_size_must_divide_the_gpus_per_node() -> None:
    p = plan(cluster("inference:\n  tensor_parallel_size: 6\n  pipeline_parallel_size: 1\n"))
    assert any(
        "tensor_parallel_size 6 does not divide the 8 GPUs per node; use one of 1, 2, 4, 8" in b for b in p.blockers
    )


def test_more_gpus_than_the_hosts_have_is_refused() -> None:
    p = plan(cluster("inference:\n  tensor_parallel_size: 8\n  pipeline_parallel_size: 4\n"))
    assert any("32 GPUs needs 4 nodes of 8 GPUs, the answers list 2 host(s) (16 GPUs)" in b for b in p.blockers)


def test_hosts_outside_the_serving_group_are_left_alone() -> None:
    v = cluster("inference:\n  model: meta-llama/Llama-3.1-8B-Instruct\n  pipeline_parallel_size: 1\n")
    p = plan(v, "server2")
    assert p.changes == [] and p.blockers == []
    assert p.noop_reason == "not part of the serving group: TP 8 x PP 1 = 8 GPUs fit on server1"
    assert "--distributed-executor-backend ray" in " ".join(exec_start(written(plan(v))[ENGINE_PATH]))


def test_a_worker_that_cannot_join_blocks_the_head_too() -> None:
    down = disc("server2", 2)
    for p in down.ports:
        p.rdma_state = "DOWN"
    p = plan(cluster(server2=down))
    assert any(b.startswith("server2 cannot join the serving group: no RDMA port is ACTIVE") for b in p.blockers)


def test_a_peer_not_probed_in_this_run_blocks_the_deployment() -> None:
    v = configured(cluster())
    v.facts["server1"]["inference"]["probed_at"] = 50_000.0
    v.facts["server2"]["inference"]["probed_at"] = 40_000.0  # left over from an earlier run
    p = plan(v)
    assert p.changes == []
    assert any(b.startswith("server2 was not probed in this run") for b in p.blockers)


def test_a_host_refusing_sudo_blocks_the_group_with_its_name() -> None:
    d = disc("server2", 2, sudo_ok=False, sudo_error="sudo: a password is required")
    p = plan(cluster(server2=d))
    assert "server2 cannot join the serving group: sudo is refused (sudo: a password is required)" in p.blockers[0]


def test_ports_without_an_ipv4_roce_v2_gid_are_not_given_to_nccl() -> None:
    d = disc()
    d.ports[3].gids = [g for g in d.ports[3].gids if g.version != "v2"]
    env = written(plan(cluster(server1=d)))[ENV_PATH]
    assert "NCCL_IB_HCA==mlx5_0:1,mlx5_1:1,mlx5_2:1\n" in env


def test_a_rail_down_on_one_host_is_left_out_on_every_host() -> None:
    down = disc("server2", 2)
    down.ports[3].rdma_state = "DOWN"
    v = cluster(server2=down)
    head = plan(v)
    assert "NCCL_IB_HCA==mlx5_0:1,mlx5_1:1,mlx5_2:1\n" in written(head)[ENV_PATH]
    assert "NCCL_IB_HCA==mlx5_0:1,mlx5_1:1,mlx5_2:1\n" in written(plan(v, "server2"))[ENV_PATH]
    assert any(n.startswith("server1: leaving mlx5_3:1 (192.168.14.0/24) out of NCCL_IB_HCA") for n in head.notes)


def test_hcas_and_rails_come_from_the_stage_s_own_reading_after_renames_and_new_addresses() -> None:
    # Discovery ran first: inbox names, no rail addresses yet. Since then DOCA renamed the devices, the rails got IPs.
    stale = disc(ofed_names=False)
    for p in stale.ports:
        p.gids, p.ipv4 = [], []
    live = {
        netdev: {
            "device": f"mlx5_{i}",
            "port": 1,
            "state": "ACTIVE",
            "ipv4_v2": [f"{RAILS[i]}.1"],
            "cidrs": [f"{RAILS[i]}.1/24"],
        }
        for i, (_, netdev, _, _) in enumerate(REFERENCE_PORTS)
    }
    live["ens2f1np1"]["state"] = "DOWN"
    v = cluster(server1=stale, inference={"server1": fresh(rdma=live)})
    assert "NCCL_IB_HCA==mlx5_0:1,mlx5_1:1,mlx5_2:1\n" in written(plan(v))[ENV_PATH]
    assert build_layout(v).node("server1").rails == ("192.168.11.0/24", "192.168.12.0/24", "192.168.13.0/24")


def test_the_ssh_interface_is_never_given_to_nccl_as_an_hca() -> None:
    d = disc(ssh_interface="ens1f0np0")
    env = written(plan(cluster(server1=d)))[ENV_PATH]
    assert "NCCL_IB_HCA==mlx5_1:1,mlx5_2:1,mlx5_3:1\n" in env
    assert "NCCL_SOCKET_IFNAME==ens1f0np0\n" in env


# -- idempotence, restarts and the Ray token ------------------------------------------------------------------


def test_a_configured_cluster_plans_nothing_and_says_why() -> None:
    v = configured(cluster())
    for host in ("server1", "server2"):
        p = plan(v, host)
        assert p.changes == [] and p.blockers == []
    assert plan(v).noop_reason == (
        "roce-wizard-ray.service, roce-wizard-inference.service active with the answers' content (vllm 0.11.0,"
        " Ray 2.52.1, meta-llama/Llama-3.1-70B-Instruct, TP 8 x PP 2, rank 0)"
    )


def test_ray_older_than_2_52_is_upgraded_for_token_auth() -> None:
    v = configured(cluster())
    v.facts["server2"]["inference"]["packages"]["ray"] = "2.40.0"
    p = plan(v, "server2")
    # a worker of a spanning group takes the head's versions (its lock file) rather than resolving its own
    assert "ray 2.40.0 here, 2.52.1 on server1" in p.changes[0].why
    assert p.changes[-1].commands[-1].argv == ["systemctl", "restart", RAY_UNIT]


def test_changing_a_running_service_is_disruptive_and_restarts_ray_then_the_engine() -> None:
    v = configured(cluster())
    v.answers.inference.max_model_len = 4096
    p = plan(v)
    assert p.impact == Impact.DISRUPTIVE
    assert [c.argv for c in p.changes[-1].commands] == [
        ["systemctl", "daemon-reload"],
        ["systemctl", "restart", "--no-block", ENGINE_UNIT],
    ]


def test_a_worker_without_the_head_token_gets_a_fresh_token_on_every_host() -> None:
    v = configured(cluster())
    v.facts["server2"]["inference"]["ray_token_sha256"] = None
    tokens = [next(f for c in plan(v, host).changes for f in c.files if f.path == TOKEN_PATH) for host in v.facts]
    assert tokens[0].content == tokens[1].content and re.fullmatch(r"[0-9a-f]{64}\n", tokens[0].content)
    assert all(t.mode == 0o600 and t.before is None for t in tokens)


def test_the_ray_token_never_reaches_facts() -> None:
    v = configured(cluster())
    v.facts["server2"]["inference"]["ray_token_sha256"] = None
    token = next(f for c in plan(v).changes for f in c.files if f.path == TOKEN_PATH).content.strip()
    assert token not in json.dumps(v.facts)


def test_a_failed_unit_is_restarted_without_touching_its_files() -> None:
    v = configured(cluster())
    v.facts["server2"]["inference"]["units"][RAY_UNIT]["active"] = "failed"
    p = plan(v, "server2")
    assert written(p) == {} and commands(p) == [f"sudo systemctl restart {RAY_UNIT}"]
    assert p.impact == Impact.SAFE


def test_switching_to_mp_stops_the_ray_units() -> None:
    v = configured(cluster())
    v.answers.inference.executor_backend = "mp"
    assert f"sudo systemctl disable --now {RAY_UNIT}" in commands(plan(v, "server2"))


def test_a_disabled_stage_plans_nothing_with_the_reason() -> None:
    p = plan(cluster("inference:\n  enabled: false\n"))
    assert p.changes == [] and p.noop_reason == "inference.enabled is false in the answers; nothing deployed"


def test_the_head_installs_and_freezes_and_a_worker_installs_exactly_the_heads_lock() -> None:
    v = cluster()
    [install] = [c for c in plan(v).changes if c.summary.startswith("pip install vllm==0.33.0+cu129")]
    assert (
        install.commands[-1].argv[:2] == ["sh", "-c"]
        and f"pip freeze --disable-pip-version-check > {LOCK_PATH}.new" in (install.commands[-1].argv[2])
    )
    lock = "ray==2.60.0\ntorch==2.9.1+cu129\nvllm==0.33.0+cu129\n"
    head = {"python": "3.10.12", "packages": {"vllm": "0.33.0+cu129", "ray": "2.60.0"}, "files": {LOCK_PATH: lock}}
    v.facts["server1"]["inference"].update(head)
    v.facts["server2"]["inference"].update(python="3.10.12", packages={"vllm": "0.32.0", "ray": "2.60.0"})
    [locked] = [c for c in plan(v, "server2").changes if "versions of server1" in c.summary]
    assert "vllm 0.32.0 here, 0.33.0+cu129 on server1" in locked.why
    assert [f.path for f in locked.files] == [LOCK_PATH] and locked.files[0].content == lock
    assert locked.commands[0].argv[-2:] == ["-r", LOCK_PATH] and "https://wheels.vllm.ai/0.33.0/cu129" in (
        locked.commands[0].argv
    )


def test_heads_of_spanning_groups_are_applied_before_their_workers() -> None:
    assert STEP.apply_waves(cluster(), ["server1", "server2"]) == [["server1"], ["server2"]]
