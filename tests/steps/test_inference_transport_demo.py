"""The engine's own NCCL, proven from its init lines: version and transport, not the system libnccl2's.

vLLM and SGLang load the NCCL bundled with their PyTorch (torch 2.4 bundles 2.20.5, 2.9 bundles 2.27.5). NCCL before
2.21 uses GID index 0 (RoCE v1) unless NCCL_IB_GID_INDEX is set (NVIDIA/nccl src/transport/net_ib.cc: the default
became -1, automatic, in v2.21.5-1), and a NET/Socket fallback still passes /health and the latency probe.
"""

from __future__ import annotations

from pathlib import Path

from tests.steps.test_inference_demo import answers, check, cluster, run  # noqa: F401 - answers is a fixture
from wizard.answers.model import Answers


async def test_a_spanning_group_reports_the_engines_nccl_over_roce(answers: Answers, tmp_path: Path) -> None:  # noqa: F811
    answers.inference.layout = "span"
    async with cluster(answers) as lab:
        code, records, _ = await run(lab, answers, tmp_path)
        assert code == 0, {h: r.reason for h, r in records.items()}
        verdict = check(records["server1"], "engine_nccl")
        assert verdict.startswith("pass: NCCL 2.27.5 (bundled with torch 2.9.1+cu129) over NET/IB on server1")
        assert "(server1, server2 printed it)" in verdict  # the Ray worker's lines reach the head's journal
        assert "rocep59s0f0:1/RoCE" in verdict


async def test_a_socket_fallback_fails_the_stage_although_health_passes(answers: Answers, tmp_path: Path) -> None:  # noqa: F811
    answers.inference.layout = "span"
    async with cluster(answers, "server1:engine_socket") as lab:
        code, records, _ = await run(lab, answers, tmp_path)
        assert code == 1, [
            f"{c.id}: {c.status}: {c.evidence[:150]}" for c in records["server1"].checks if "nccl" in c.id
        ]
        assert check(records["server1"], "health").startswith("pass")
        verdict = check(records["server1"], "engine_nccl")
        assert verdict.startswith(
            "fail: server1: the engine's NCCL 2.27.5 (bundled with torch 2.9.1+cu129) runs over TCP"
        )
        assert "sockets on server1 (NET/Socket" in verdict
        assert "NET/Socket on eno1:10.0.0.11, after NET/IB : No device found" in verdict


async def test_an_engine_with_nccl_older_than_2_21_and_no_pinned_gid_fails(answers: Answers, tmp_path: Path) -> None:  # noqa: F811
    answers.inference.layout = "span"
    answers.inference.engine_version = "0.6.3"  # pinned torch 2.4.0, which bundles NCCL 2.20.5
    async with cluster(answers) as lab:
        code, records, _ = await run(lab, answers, tmp_path)
        assert code == 1
        verdict = check(records["server1"], "engine_nccl")
        assert verdict.startswith("fail: server1: the engine's NCCL 2.20.5 (bundled with torch 2.4.0) predates 2.21")
        assert "GID index 0: RoCE v1" in verdict
