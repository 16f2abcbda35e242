"""Stage inference against the simulated cluster: the API key is generated on each host and never leaves it
(vLLM --api-key / VLLM_API_KEY, docs.vllm.ai "OpenAI-Compatible Server"; curl(1) -H @file)."""

from __future__ import annotations

from pathlib import Path

import pytest

from steps.inference.units import ENGINE_UNIT, KEY_ENV
from tests.steps.test_inference_demo import EXAMPLE, check, cluster, run
from wizard.answers.model import Answers, load_answers


@pytest.fixture
def answers() -> Answers:
    """The example answers (layout auto), with a short probe as in test_inference_demo."""
    loaded = load_answers(EXAMPLE)
    loaded.inference.probe_requests, loaded.inference.ready_timeout_s = 8, 60
    return loaded


async def test_the_api_key_never_reaches_state_files_or_the_wizards_logs(answers: Answers, tmp_path: Path) -> None:
    """vLLM reads VLLM_API_KEY from the unit's EnvironmentFile; curl on the host sends it (-H @file)."""
    async with cluster(answers) as lab:
        code, records, _ = await run(lab, answers, tmp_path)
        assert code == 0, {h: r.reason for h, r in records.items()}
        for name in lab.names:
            host = lab.host(name)
            key = host.fs.read_text(KEY_ENV).splitlines()[0].removeprefix("VLLM_API_KEY=")
            assert len(key) == 64 and oct(host.fs.resolve(KEY_ENV).mode & 0o777) == "0o600"
            assert check(records[name], "probe").startswith("pass: 8/8")  # the probe used the key
            leaks = [p for p in tmp_path.rglob("*") if p.is_file() and key in p.read_text(errors="replace")]
            assert leaks == [], f"the API key of {name} leaked into {leaks}"
            assert not any(key in e.message for e in host.journal)
            unauthenticated = await host.run(
                "curl -s -w '\\n%{http_code} %{time_total}\\n' http://127.0.0.1:8000/v1/models"
            )
            assert unauthenticated.stdout.splitlines()[-1].startswith("401 ")


async def test_sglangs_key_is_on_no_command_line_in_no_status_and_in_no_journal(
    answers: Answers, tmp_path: Path
) -> None:
    """SGLang takes its key only as an argument and logs every argument at start; so it gets none, listens on
    127.0.0.1, and nginx in front checks the key (steps/inference/sglang_front.py)."""
    answers.inference.engine, answers.inference.engine_version = "sglang", "0.5.19"  # CUDA 12 wheels: driver 550
    async with cluster(answers) as lab:
        code, records, _ = await run(lab, answers, tmp_path)
        assert code == 0, {h: r.reason for h, r in records.items()}
        for name in lab.names:
            host = lab.host(name)
            key = host.fs.read_text(KEY_ENV).splitlines()[0].removeprefix("VLLM_API_KEY=")
            assert check(records[name], "probe").startswith("pass: 8/8")  # through the front, with the key
            cmdlines = await host.run("cat /proc/[0-9]*/cmdline | tr '\\0' ' '")
            assert "sglang.launch_server" in cmdlines.stdout and key not in cmdlines.stdout
            status = await host.run(f"systemctl status {ENGINE_UNIT} --no-pager")
            assert "--host 127.0.0.1" in status.stdout and key not in status.stdout
            journal = await host.run("journalctl --no-pager")
            assert "server_args=ServerArgs(" in journal.stdout and key not in journal.stdout
            assert "api_key=None" in journal.stdout
            refused = await host.run("curl -s -o /dev/null -w '%{http_code}' http://127.0.0.1:8000/v1/models")
            assert refused.stdout == "401"
