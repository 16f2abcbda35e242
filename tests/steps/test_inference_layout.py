"""Stage inference: a layout that fits the fabric (replicas vs one group across nodes), the API key that stays on the
host, and units ordered after the RoCE QoS unit.

Sources: vLLM "Parallelism and Scaling" (single node: TP = GPUs per node; multi-node only when the model does not fit
one node); vLLM "OpenAI-Compatible Server" (--api-key / VLLM_API_KEY); SGLang server arguments (--api-key);
systemd.unit(5) Requires=/After=; systemd.service(5) "Command lines" (${VAR} from EnvironmentFile=); curl(1) -H @file.
"""

from __future__ import annotations

import subprocess
from pathlib import Path

from steps.inference.bench import completion_argv
from steps.inference.choice import gpu_topology
from steps.inference.units import KEY_ENV, KEY_HEADER, QOS_UNIT, RAY_UNIT
from tests.steps.facts_builder import answers, view
from tests.steps.test_inference import ENGINE_PATH, RAY_PATH, disc, exec_start, fresh, plan, written
from wizard.engine.step import ClusterView

TOPO = Path(__file__).resolve().parents[1] / "fixtures" / "real-outputs" / "nvidia_smi_topo"


def cluster(
    yaml: str = "", *, roce: bool = False, topo: str | None = None, hosts: int = 2, **inference: dict
) -> ClusterView:
    """Reference hosts (8 x L20 48 GB, 4 x 25 GbE rails; two unless told) with the answers' inference section."""
    facts = {}
    names = tuple(f"server{i + 1}" for i in range(hosts))
    for i, name in enumerate(names):
        inf = fresh(**inference.get(name, {}))
        if topo:
            inf["gpu_topology"] = gpu_topology((TOPO / topo).read_text())
        facts[name] = {"discovery": disc(name, i + 1), "inference": inf}
        if roce:
            facts[name]["roce"] = {"ports": [{"netdev": "ens1f0np0"}]}
    return view(answers(yaml, names), facts)


def units(v: ClusterView, host: str = "server1") -> dict[str, str]:
    return {p: c for p, c in written(plan(v, host)).items() if p.startswith("/etc/systemd/system/")}


def test_a_70b_bf16_model_that_fits_one_node_runs_one_replica_per_node_with_tp_8() -> None:
    v = cluster()
    for host in ("server1", "server2"):
        argv = exec_start(units(v, host)[ENGINE_PATH])
        assert argv[argv.index("--tensor-parallel-size") + 1] == "8"
        assert argv[argv.index("--pipeline-parallel-size") + 1] == "1"
        assert argv[argv.index("--distributed-executor-backend") + 1] == "mp"
        assert "--nnodes" not in argv and "--headless" not in argv and argv[argv.index("--host") + 1] == "0.0.0.0"


def test_the_notes_say_the_numbers_that_decided_replicas_and_list_the_endpoints() -> None:
    notes = plan(cluster()).notes
    [why] = [n for n in notes if n.startswith("layout replicas")]
    assert "70.6B x 2 byte(s) = 141 GB of weights" in why
    assert "one node has 8 x NVIDIA L20 = 360 GiB" in why
    assert "each GPU holds 17.3 GiB of weights and keeps 21.2 GiB for the KV cache (>= 4.0 GiB needed)" in why
    assert "2 replica(s) of TP 8" in why and "100 Gb/s (12.5 GB/s) of RoCE rails per node" in why
    assert "PCIe (~32 GB/s per direction at Gen4 x16)" in why
    [endpoints] = [n for n in notes if n.startswith("endpoints:")]
    assert "http://10.0.0.11:8000/v1 (server1), http://10.0.0.12:8000/v1 (server2)" in endpoints


def test_replicas_install_no_ray_units_and_say_why() -> None:
    p = plan(cluster())
    assert RAY_PATH not in written(p) and ENGINE_PATH in written(p)
    assert not any("ray[cgraph]" in " ".join(c.argv) for ch in p.changes for c in ch.commands)
    assert any(n.startswith("no Ray units with replicas") for n in p.notes)


def test_a_running_ray_unit_from_an_earlier_span_deployment_is_stopped_and_disabled() -> None:
    running = {"units": {RAY_UNIT: {"active": "active", "enabled": "enabled"}}}
    p = plan(cluster(server1=running))
    assert ["systemctl", "disable", "--now", RAY_UNIT] in [c.argv for ch in p.changes for c in ch.commands]


def test_layout_span_keeps_one_tp8_pp2_group_across_the_nodes() -> None:
    v = cluster("inference:\n  layout: span\n")
    head = exec_start(units(v)[ENGINE_PATH])
    assert head[head.index("--pipeline-parallel-size") + 1] == "2" and RAY_PATH in units(v, "server2")
    assert ENGINE_PATH not in units(v, "server2")  # vLLM on Ray: the worker only runs a raylet


def test_a_model_that_needs_two_nodes_is_served_by_replicas_of_two_nodes_each_with_its_own_ray_head() -> None:
    v = cluster("inference:\n  model: meta-llama/Llama-3.1-405B-Instruct-FP8\n", hosts=5)
    p = plan(v)
    [why] = [n for n in p.notes if n.startswith("layout replicas of 2 nodes (inference.layout auto)")]
    assert "406 GB of weights" in why and "the 5 hosts make 2 independent replicas" in why
    [groups] = [n for n in p.notes if n.startswith("2 replicas of 2 nodes each")]
    assert "replica 1: server1, server2; replica 2: server3, server4" in groups
    assert plan(v, "server5").noop_reason.startswith("not part of a serving group: 2 replicas of 2 nodes")
    # Each pair is its own Ray cluster: server4 joins server3, not server1, and server3 serves the API.
    worker = exec_start(units(v, "server4")[RAY_PATH])
    assert "--address=10.0.0.13:6379" in worker
    head = exec_start(units(v, "server3")[ENGINE_PATH])
    assert head[head.index("--distributed-executor-backend") + 1] == "ray" and "--host" in head


def test_a_host_that_cannot_serve_stops_only_its_own_replica() -> None:
    yaml = "inference:\n  model: meta-llama/Llama-3.1-405B-Instruct-FP8\n"
    v = cluster(yaml, hosts=4)
    v.facts["server4"]["discovery"]["sudo_ok"] = False
    assert any(b.startswith("server4 cannot join the serving group") for b in plan(v, "server3").blockers)
    assert plan(v, "server1").blockers == [] and plan(v, "server2").blockers == []


def test_auto_spans_the_nodes_when_one_node_cannot_hold_the_model() -> None:
    p = plan(cluster("inference:\n  model: meta-llama/Llama-3.1-405B-Instruct-FP8\n"))
    assert p.blockers == []
    assert any(n.startswith("layout span (inference.layout auto): one node cannot hold") for n in p.notes)
    assert RAY_PATH in written(p)


def test_pcie_gpus_on_both_sockets_get_a_numa_note_and_nvlink_ones_do_not() -> None:
    pcie = plan(cluster(topo="l40s-tp8-normalized-nic0-8.txt")).notes
    [numa] = [n for n in pcie if "spans both CPU sockets" in n and n.startswith("server1")]
    assert "NUMA 0: GPU0,1,2,3; NUMA 1: GPU4,5,6,7" in numa and "inter-socket link" in numa
    nvlink = plan(cluster(topo="openpi-env-a800-bond-tabs-3.txt")).notes
    assert not any("spans both CPU sockets" in n for n in nvlink)


def test_units_require_and_start_after_the_qos_unit_where_the_roce_stage_runs() -> None:
    for text in units(cluster(roce=True)).values():
        lines = text.splitlines()
        assert f"Requires={QOS_UNIT}" in lines
        assert f"After=network-online.target {QOS_UNIT}" in lines


def test_roce_less_hosts_skip_the_qos_ordering_with_a_reason() -> None:
    p = plan(cluster())
    assert all(QOS_UNIT not in text for text in units(cluster()).values())
    assert any("not ordered after roce-wizard-qos.service" in n and "has not run there" in n for n in p.notes)


def test_a_failed_qos_unit_refuses_that_host_and_the_other_replica_still_deploys() -> None:
    failed = {"qos_unit": {"active": "failed", "enabled": "enabled"}}
    v = cluster(roce=True, server1=failed)
    [refusal] = plan(v, "server1").blockers
    assert "roce-wizard-qos.service failed" in refusal and "lossy" in refusal and "--from roce" in refusal
    assert plan(v, "server2").blockers == [] and ENGINE_PATH in written(plan(v, "server2"))


def test_the_api_key_is_generated_on_the_host_and_never_written_by_the_wizard() -> None:
    p = plan(cluster("inference:\n  entry_port: null\n"))  # no entry point: each replica keeps its own key
    [gen] = [c for ch in p.changes for c in ch.commands if "openssl" in " ".join(c.argv)]
    assert gen.argv[:2] == ["sh", "-c"] and gen.sudo and gen.input is None
    assert "openssl rand -hex 32" in gen.argv[2] and "umask 077" in gen.argv[2] and "chmod 600" in gen.argv[2]
    assert subprocess.run(["bash", "-n", "-c", gen.argv[2]], check=False).returncode == 0
    assert not any(f.path in (KEY_ENV, KEY_HEADER) for ch in p.changes for f in ch.files)
    assert f"EnvironmentFile={KEY_ENV}" in units(cluster())[ENGINE_PATH].splitlines()


def test_a_host_that_holds_its_key_gets_no_new_one() -> None:
    kept = {"api_key": {"env": "600 root", "header": "600 root", "nginx": "600 root"}}
    p = plan(cluster(server1=kept))
    assert not any("openssl" in " ".join(c.argv) for ch in p.changes for c in ch.commands)


def test_sglang_gets_no_key_listens_on_loopback_and_nginx_checks_the_key_in_front() -> None:
    v = cluster("inference:\n  engine: sglang\n  engine_version: 0.5.19\n")
    argv = exec_start(units(v)[ENGINE_PATH])
    assert "--api-key" not in argv and argv[argv.index("--host") + 1] == "127.0.0.1"
    assert argv[argv.index("--port") + 1] == "28000"
    front = written(plan(v))["/etc/nginx/conf.d/roce-wizard-sglang.conf"]
    assert "listen 8000;" in front and "proxy_pass http://127.0.0.1:28000;" in front
    assert "include /etc/roce-wizard/inference-api-key.nginx;" in front and "return 401" in front


def test_the_probe_sends_the_key_from_the_hosts_header_file() -> None:
    argv = completion_argv(answers("").inference)
    assert argv[argv.index(f"@{KEY_HEADER}") - 1] == "-H" and not any("Bearer" in a for a in argv)


def test_an_entry_point_on_the_engines_own_port_is_refused() -> None:
    [refusal] = plan(cluster("inference:\n  entry_port: 8000\n")).blockers
    assert "inference.entry_port 8000 is also inference.port" in refusal


def test_turning_the_entry_point_off_removes_its_nginx_site() -> None:
    v = cluster(
        "inference:\n  entry_port: null\n", server1={"files": {"/etc/nginx/conf.d/roce-wizard-inference.conf": "x"}}
    )
    [removal] = [
        c for c in plan(v).changes if c.summary.startswith("remove /etc/nginx/conf.d/roce-wizard-inference.conf")
    ]
    assert removal.commands[0].argv == ["rm", "-f", "/etc/nginx/conf.d/roce-wizard-inference.conf"]
