"""Stage inference, verification side: units, token, health check, the latency/throughput probe and its numbers."""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

from steps.inference.bench import SIMULATED_FINGERPRINT, completion_argv, parse_completion, percentile, summarize
from steps.inference.stage import Inference, parse_pip_list
from steps.inference.units import ENGINE_UNIT, RAY_UNIT, TOKEN_PATH
from tests.steps.test_inference import cluster, configured
from wizard.answers.model import HostEntry
from wizard.engine.step import CheckItem, ClusterView, ProbeContext
from wizard.executors.base import CommandResult

STEP = Inference()
HEALTHY = {"healthy": True, "attempts": 3, "waited_s": 12.5}
PROBE = {
    "requests": 16,
    "succeeded": 16,
    "p50_s": 2.311,
    "p90_s": 2.457,
    "completion_tokens": 2048,
    "tokens_per_s": 221.4,
    "simulated": True,
    "concurrency": 4,
    "max_tokens": 128,
}


def with_cluster(v: ClusterView, head: dict[str, Any], worker: dict[str, Any] | None = None) -> ClusterView:
    v.facts["server1"]["inference"]["cluster"] = head
    v.facts["server2"]["inference"]["cluster"] = worker or {"served_by": "server1", "health": head.get("health")}
    return v


def by_id(items: list[CheckItem]) -> dict[str, CheckItem]:
    return {i.id: i for i in items}


def test_a_served_model_passes_with_p50_p90_and_tokens_per_second_in_the_evidence() -> None:
    v = with_cluster(configured(cluster()), {"health": HEALTHY, "probe": PROBE})
    items = by_id(STEP.checks(v, "server1"))
    assert all(i.status == "pass" for i in items.values()), items
    assert items["probe"].evidence == (
        "16/16 /v1/completions requests to meta-llama/Llama-3.1-70B-Instruct (concurrency 4, max_tokens 128):"
        " p50 2.311 s, p90 2.457 s, 221.4 tokens/s (2048 completion tokens) [simulated endpoint]"
    )
    assert items["health"].evidence == "http://127.0.0.1:8000/health on server1 answered after 12.5 s"


def test_the_worker_passes_through_the_head_health_check() -> None:
    v = with_cluster(configured(cluster()), {"health": HEALTHY, "probe": PROBE})
    items = by_id(STEP.checks(v, "server2"))
    assert "probe" not in items and items["health"].status == "pass"
    assert "(serving group of 2 nodes, head server1)" in items["health"].evidence


def test_an_api_that_never_answers_fails_with_the_journal_and_a_fix() -> None:
    health = {
        "healthy": False,
        "waited_s": 1800.0,
        "unit_state": "activating",
        "curl_exit": 7,
        "journal": ["NCCL WARN NET/IB : No device found.", "RuntimeError: NCCL error"],
    }
    v = with_cluster(configured(cluster()), {"health": health})
    item = by_id(STEP.checks(v, "server1"))["health"]
    assert item.status == "fail"
    assert "did not answer after 1800.0 s (unit activating, curl exit 7)" in item.evidence
    assert "NCCL WARN NET/IB : No device found." in item.evidence and "journalctl" in (item.fix or "")


def test_failed_requests_fail_the_probe_with_their_errors() -> None:
    probe = dict(PROBE, succeeded=14, errors=["HTTP 500: out of memory"])
    v = with_cluster(configured(cluster()), {"health": HEALTHY, "probe": probe})
    item = by_id(STEP.checks(v, "server1"))["probe"]
    assert item.status == "fail" and "14/16" in item.evidence and "out of memory" in item.evidence


def test_a_failed_unit_fails_with_its_journal() -> None:
    v = with_cluster(configured(cluster()), {"health": HEALTHY, "probe": PROBE})
    v.facts["server2"]["inference"]["units"][RAY_UNIT] = {
        "active": "failed",
        "enabled": "enabled",
        "journal": ["ConnectionError: Could not reach the GCS at 10.0.0.11:6379"],
    }
    item = by_id(STEP.checks(v, "server2"))["unit_roce-wizard-ray"]
    assert item.status == "fail" and "Could not reach the GCS" in item.evidence
    assert item.fix == f"on server2: journalctl -u {RAY_UNIT} -e; then re-run the inference stage"


def test_different_tokens_fail_the_token_check() -> None:
    v = with_cluster(configured(cluster()), {"health": HEALTHY, "probe": PROBE})
    v.facts["server2"]["inference"]["ray_token_sha256"] = "ffff"
    assert by_id(STEP.checks(v, "server1"))["ray_token"].status == "fail"


def test_ray_versions_that_differ_across_hosts_fail_the_cluster_check() -> None:
    v = configured(cluster())
    v.facts["server2"]["inference"]["packages"]["ray"] = "2.53.0"
    result = STEP.cluster_checks(v)
    assert [i.id for i in result["server1"]] == ["same_ray"]
    assert result["server2"][0].evidence == "server1: 2.52.1, server2: 2.53.0"


def test_a_refused_model_fails_verification_with_the_numbers() -> None:
    v = configured(cluster("inference:\n  model: deepseek-ai/DeepSeek-V3\n"))
    [item] = STEP.checks(v, "server1")
    assert item.status == "fail" and "671 GB" in item.evidence


def test_a_disabled_stage_verifies_as_skipped() -> None:
    [item] = STEP.checks(cluster("inference:\n  enabled: false\n"), "server1")
    assert item.status == "skip" and item.evidence == "inference.enabled is false"


# -- the probe's measurements ---------------------------------------------------------------------------------


def completion(tokens: int, seconds: float, code: int = 200, simulated: bool = False) -> str:
    body: dict[str, Any] = {"object": "text_completion", "choices": [{"text": "..."}]}
    body["usage"] = {"prompt_tokens": 20, "completion_tokens": tokens, "total_tokens": 20 + tokens}
    if simulated:
        body["system_fingerprint"] = SIMULATED_FINGERPRINT
    return json.dumps(body) + f"\n{code} {seconds:.6f}\n"


def test_tokens_come_from_usage_completion_tokens_never_from_splitting_text() -> None:
    assert parse_completion(completion(128, 2.5, simulated=True)) == {
        "ok": True,
        "http": 200,
        "seconds": 2.5,
        "tokens": 128,
        "simulated": True,
    }


def test_an_error_body_is_a_failed_request_with_its_message() -> None:
    out = json.dumps({"object": "error", "message": "The model `x` does not exist.", "code": 404}) + "\n404 0.01\n"
    result = parse_completion(out)
    assert result["ok"] is False and result["error"] == "The model `x` does not exist."


def test_p50_p90_are_nearest_rank_percentiles() -> None:
    values = [float(v) for v in range(1, 11)]
    assert (percentile(values, 50), percentile(values, 90)) == (5.0, 9.0)


def test_throughput_counts_each_wave_once_at_its_slowest_request() -> None:
    waves = [[parse_completion(completion(100, 2.0)), parse_completion(completion(100, 4.0))]]
    waves.append([parse_completion(completion(50, 1.0)), {"ok": False, "error": "curl: (7) Failed to connect"}])
    summary = summarize([r for w in waves for r in w], waves)
    assert summary["tokens_per_s"] == 50.0  # 250 tokens over 4 s + 1 s
    assert summary["succeeded"] == 3 and summary["errors"] == ["curl: (7) Failed to connect"]


def test_the_probe_asks_the_served_model_on_loopback_only() -> None:
    argv = completion_argv(cluster().answers.inference)
    assert argv[-1] == "http://127.0.0.1:8000/v1/completions"
    assert json.loads(argv[argv.index("-d") + 1])["model"] == "meta-llama/Llama-3.1-70B-Instruct"


def test_pip_list_json_is_read_for_the_relevant_packages() -> None:
    text = (
        '[{"name": "vllm", "version": "0.11.0"}, {"name": "Ray", "version": "2.52.1"}, {"name": "six", "version": "1"}]'
    )
    assert parse_pip_list(text) == {"vllm": "0.11.0", "ray": "2.52.1"}


# -- the probe reads, never writes, and never reads the token back ---------------------------------------------


class Recorder:
    """A fake executor: records argv, answers like a host the stage has not touched yet."""

    name = "server1"

    def __init__(self) -> None:
        self.argvs: list[list[str]] = []

    async def run(self, argv: Sequence[str] | str, **kw: Any) -> CommandResult:
        argv = argv.split() if isinstance(argv, str) else list(argv)
        self.argvs.append(argv)
        missing = CommandResult(" ".join(argv), 1, "", "No such file or directory", 0.0)
        if argv[0] == "systemctl":
            return CommandResult(" ".join(argv), 3, "inactive\n" if argv[1] == "is-active" else "", "", 0.0)
        return missing

    async def read_file(self, path: str, *, sudo: bool = False) -> str | None:
        self.argvs.append(["cat", "--", path])
        return None


async def test_the_probe_reads_only_a_hash_of_the_ray_token() -> None:
    v = cluster()
    ex = Recorder()
    ctx = ProbeContext(HostEntry(name="server1", address="10.0.0.11"), ex, v.answers, {})  # type: ignore[arg-type]
    facts = await STEP.probe(ctx)
    assert ["sha256sum", TOKEN_PATH] in ex.argvs
    assert not any(TOKEN_PATH in argv and argv[0] not in ("sha256sum", "stat") for argv in ex.argvs)
    assert facts["ray_token_sha256"] is None and "ray_token" not in json.dumps(facts).replace("ray_token_sha256", "")
    assert facts["units"][ENGINE_UNIT] == {"active": "inactive", "enabled": "not-found"}
    readers = {
        "/opt/roce-wizard/venv/bin/python",
        "cat",
        "sha256sum",
        "systemctl",
        "rdma",
        "grep",
        "ip",
        "stat",
        "curl",
    }
    readers.add("nvidia-smi")  # `nvidia-smi topo -m`: NVLink or PCIe, and which NUMA node each GPU sits on
    readers.add("nginx")  # `nginx -v`: is the entry point's load balancer installed
    readers.add("ls")  # the blobs of the model in the Hugging Face cache (a download still running ends .incomplete)
    assert {argv[0] for argv in ex.argvs} <= readers


class FabricReader(Recorder):
    """Answers the fabric reads like a host whose empty GID slots make grep exit 2."""

    async def run(self, argv: Sequence[str] | str, **kw: Any) -> CommandResult:
        words = argv.split() if isinstance(argv, str) else list(argv)
        if words[:2] == ["grep", "-sH"]:
            self.argvs.append(words)
            base = "/sys/class/infiniband/mlx5_0/ports/1"
            lines = [f"{base}/gids/3:0000:0000:0000:0000:0000:ffff:c0a8:0b01", f"{base}/gid_attrs/types/3:RoCE v2"]
            return CommandResult("grep", 2, "\n".join(lines), "", 0.0)
        if words[:2] == ["rdma", "link"]:
            self.argvs.append(words)
            text = "link mlx5_0/1 state ACTIVE physical_state LINK_UP netdev ens1f0np0"
            return CommandResult("rdma link show", 0, text, "", 0.0)
        if words[:2] == ["ip", "-j"]:
            self.argvs.append(words)
            doc = [{"ifname": "ens1f0np0", "addr_info": [{"family": "inet", "local": "192.168.11.1", "prefixlen": 24}]}]
            return CommandResult("ip -j addr show", 0, json.dumps(doc), "", 0.0)
        return await super().run(argv, **kw)


async def test_the_fabric_is_read_now_despite_grep_exit_2_on_empty_gid_slots() -> None:
    ctx = ProbeContext(HostEntry(name="server1", address="10.0.0.11"), FabricReader(), cluster().answers, {})  # type: ignore[arg-type]
    facts = await STEP.probe(ctx)
    assert facts["rdma"] == {
        "ens1f0np0": {
            "device": "mlx5_0",
            "port": 1,
            "state": "ACTIVE",
            "ipv4_v2": ["192.168.11.1"],
            "cidrs": ["192.168.11.1/24"],
        }
    }
