"""Weights are downloaded once per host before the engine starts, resumably, after the gated-repository login is
checked; air-gapped hosts serve from a pre-filled cache (huggingface_hub cache layout: hub/models--ORG--NAME)."""

from __future__ import annotations

from pathlib import Path

from tests.steps.test_inference import cluster, configured, fresh, plan
from tests.steps.test_inference_demo import answers, check, run  # noqa: F401 - answers is a fixture
from tests.steps.test_inference_demo import cluster as lab_cluster
from wizard.answers.model import Answers

REPO = "/root/.cache/huggingface/hub/models--meta-llama--Llama-3.1-70B-Instruct"


def test_a_host_without_the_weights_downloads_them_before_its_units_start() -> None:
    p = plan(cluster())
    [download] = [c for c in p.changes if c.summary.startswith("download the weights")]
    assert download.summary == (
        "download the weights of meta-llama/Llama-3.1-70B-Instruct (~141 GB) into /root/.cache/huggingface"
    )
    assert download.commands[0].argv == [
        "env",
        "HF_HOME=/root/.cache/huggingface",
        "/opt/roce-wizard/venv/bin/hf",
        "download",
        "meta-llama/Llama-3.1-70B-Instruct",
    ]
    order = [c.summary for c in p.changes]
    assert order.index(download.summary) < next(i for i, s in enumerate(order) if s.startswith("(re)start"))


def test_a_partial_download_is_resumed() -> None:
    v = cluster(inference={"server1": fresh(weights={"revision": "abc", "blobs": 30, "incomplete": 2, "token": True})})
    [download] = [c for c in plan(v).changes if c.summary.startswith("download the weights")]
    assert "resumes the 2 partial file(s) already there" in download.why


def test_a_gated_model_without_a_token_is_refused_with_the_login_command() -> None:
    v = cluster(inference={"server1": fresh(weights={"revision": None, "blobs": 0, "incomplete": 0, "token": False})})
    [refusal] = plan(v).blockers
    assert "gated repository and root on server1 has no Hugging Face token" in refusal
    assert "sudo HF_HOME=/root/.cache/huggingface /opt/roce-wizard/venv/bin/hf auth login" in refusal


def test_offline_hosts_need_the_cache_filled_and_download_nothing() -> None:
    v = cluster("inference:\n  offline: true\n  hf_home: /models/hf\n")
    assert "/models/hf/hub/models--meta-llama--Llama-3.1-70B-Instruct holds no complete copy" in plan(v).blockers[0]
    ready = configured(cluster("inference:\n  offline: true\n  hf_home: /models/hf\n"))
    assert (
        plan(ready).changes == []
        and "HF_HUB_OFFLINE=1" in ready.facts["server1"]["inference"]["files"]["/etc/roce-wizard/inference.env"]
    )


async def test_the_demo_stops_a_host_whose_root_never_logged_in_to_hugging_face(
    answers: Answers,  # noqa: F811 - the fixture
    tmp_path: Path,
) -> None:
    async with lab_cluster(answers, "server2:hf_logged_out") as lab:
        code, records, _ = await run(lab, answers, tmp_path)
        assert code == 1
        assert "server2: meta-llama/Llama-3.1-70B-Instruct is a gated repository" in records["server2"].reason
        assert check(records["server1"], "weights").startswith(f"pass: {REPO}: revision ")
        assert lab.host("server2").fs.lookup(REPO) is None
