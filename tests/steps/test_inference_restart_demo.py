"""`roce-wizard inference restart`: one replica at a time, the next once the last answers again, never the last
healthy one; clients of the entry point see no failed request meanwhile."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

from steps.inference.restart import rolling_restart
from steps.inference.units import ENGINE_UNIT, KEY_HEADER
from tests.steps.test_inference_demo import answers, cluster, demo_session, run  # noqa: F401 - answers is a fixture
from wizard.answers.model import Answers
from wizard.lab import Lab

BODY = json.dumps({"model": "meta-llama/Llama-3.1-70B-Instruct", "prompt": "hi", "max_tokens": 4})


async def restart(lab: Lab, answers: Answers, state: Path, **kw: object) -> list:  # noqa: F811
    session = demo_session(lab, answers, state)
    try:
        return await rolling_restart(session.runner.view(), dict(session.executors), **kw)  # type: ignore[arg-type]
    finally:
        await session.close()


async def test_a_rolling_restart_keeps_the_entry_point_answering(answers: Answers, tmp_path: Path) -> None:  # noqa: F811
    async with cluster(answers) as lab:
        assert (await run(lab, answers, tmp_path))[0] == 0
        entry = lab.host("server1")
        codes: list[str] = []
        stop = asyncio.Event()

        async def client() -> None:
            curl = f"curl -s -o /dev/null -w '%{{http_code}}' -H @{KEY_HEADER} -d '{BODY}' http://127.0.0.1:8080/v1/completions"
            while not stop.is_set():
                codes.append((await entry.run(curl)).stdout)
                await asyncio.sleep(0.05)

        task = asyncio.create_task(client())
        done = await restart(lab, answers, tmp_path)
        stop.set()
        await task
        assert [(d.replica, d.ok) for d in done] == [(1, True), (2, True)], [d.detail for d in done]
        assert len(codes) > 5 and set(codes) == {"200"}, " ".join(codes)


async def test_the_last_healthy_replica_is_not_restarted_without_force(answers: Answers, tmp_path: Path) -> None:  # noqa: F811
    async with cluster(answers) as lab:
        assert (await run(lab, answers, tmp_path))[0] == 0
        assert (await lab.host("server2").run(f"systemctl stop {ENGINE_UNIT}")).status == 0
        [refused] = await restart(lab, answers, tmp_path, replica=1)
        assert not refused.ok and "no other replica answers /health" in refused.detail
        [forced] = await restart(lab, answers, tmp_path, replica=1, force=True)
        assert forced.ok


async def test_an_unreachable_host_stops_the_restart_with_one_line_naming_it(answers: Answers, tmp_path: Path) -> None:  # noqa: F811
    async with cluster(answers) as lab:
        assert (await run(lab, answers, tmp_path))[0] == 0
        lab.host("server2").power_off()
        [stopped] = await restart(lab, answers, tmp_path, replica=2, force=True)
        assert not stopped.ok and stopped.detail.startswith("server2: ") and "\n" not in stopped.detail
