"""One entry point over the replicas: nginx on the first replica's head spreads requests, skips a replica that is
down and retries a refused request on the next one (nginx docs: ngx_http_upstream_module max_fails/fail_timeout,
ngx_http_proxy_module proxy_next_upstream). Every replica checks the same key, which the wizard hands out."""

from __future__ import annotations

import json
from pathlib import Path

from steps.inference.units import ENGINE_UNIT, KEY_ENV, KEY_HEADER
from tests.steps.test_inference_demo import answers, check, cluster, run  # noqa: F401 - answers is a fixture
from wizard.answers.model import Answers

BODY = json.dumps({"model": "meta-llama/Llama-3.1-70B-Instruct", "prompt": "hi", "max_tokens": 8})


async def test_the_entry_point_reaches_every_replica_and_survives_one_going_down(
    answers: Answers,  # noqa: F811 - the fixture
    tmp_path: Path,
) -> None:
    async with cluster(answers) as lab:
        code, records, _ = await run(lab, answers, tmp_path)
        assert code == 0, {h: r.reason for h, r in records.items()}
        verdict = check(records["server1"], "entry_point")
        assert verdict.startswith("pass: 8/8 /v1/completions through http://server1:8080/v1 (nginx on server1)")
        assert "reached 2 of 2 replicas (replica 1: 4, replica 2: 4)" in verdict
        assert ", time to first token 0." in verdict  # one streamed completion (curl's time_starttransfer)
        assert ", time to first token 0." in check(records["server2"], "probe")
        server1, server2 = lab.host("server1"), lab.host("server2")
        # One key on both replicas, written by the wizard (0600 root) because the hosts' own keys differed.
        assert server1.fs.read_text(KEY_ENV) == server2.fs.read_text(KEY_ENV)
        assert (await server2.run(f"systemctl stop {ENGINE_UNIT}")).status == 0
        curl = f"curl -s -o /dev/null -w '%{{http_code}}\\n' -H @{KEY_HEADER} -d '{BODY}'"
        codes = [(await server1.run(f"{curl} http://127.0.0.1:8080/v1/completions")).stdout.strip() for _ in range(6)]
        assert codes == ["200"] * 6  # the refused connection to server2 was retried on server1
        unauthorized = await server1.run(
            f"curl -s -o /dev/null -w '%{{http_code}}' -d '{BODY}' http://127.0.0.1:8080/v1/completions"
        )
        assert unauthorized.stdout == "401"  # the entry point passes the check to the replicas, it does not skip it
