"""A fleet: the problems stay on top and the clean hosts fold together; nothing about any host is dropped."""

from __future__ import annotations

from pathlib import Path

import pytest

from wizard.cli.report import to_json
from wizard.engine.stage_order import STAGE_IDS
from wizard.engine.state import RunRecord, StateStore
from wizard.engine.step import CheckItem
from wizard.report.collect import collect
from wizard.report.render import FULL_DETAIL_HOSTS, GRID_HOSTS, LOG_TAILS, render

HOSTS = [f"gpu-{i:04d}" for i in range(120)]
FAILED_ROCE = HOSTS[20:33]  # 13 hosts: more than the report shows log tails for
WARNED = "gpu-0011"


@pytest.fixture(scope="module")
def fleet(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A state directory as a 120-host run leaves it, written through the wizard's own StateStore."""
    root = tmp_path_factory.mktemp("fleet")
    store = StateStore(root)
    store.save_run(RunRecord(cluster="fleet", hosts=HOSTS, started_at="2026-01-01T00:00:00Z",
                             finished_at="2026-01-01T00:40:00Z", exit_code=1))  # fmt: skip
    for host in HOSTS:
        record = store.host(host)
        for i, stage in enumerate(STAGE_IDS):
            row = record.stage(stage)
            row.started_at, row.finished_at = f"2026-01-01T00:{i * 5:02d}:00Z", f"2026-01-01T00:{i * 5 + 4:02d}:30Z"
            failed = host in FAILED_ROCE and stage == "roce"
            row.status, row.reason = ("failed", "PFC priority 3 off") if failed else ("done", "verified")
            status = "fail" if failed else "warn" if host == WARNED and stage == "network" else "pass"
            fix = "mlnx_qos -i ens1 --pfc 0,0,0,1,0,0,0,0" if status != "pass" else None
            row.checks = [CheckItem(id="pfc", title="PFC on priority 3", status=status, evidence=host, fix=fix)]
        store.save_host(host, durable=False)
        if host in FAILED_ROCE:
            (root / "logs").mkdir(exist_ok=True)
            (root / "logs" / f"{host}.log").write_text(f"10:00:00 $ mlnx_qos -i ens1\n10:00:00   = exit 1 {host}\n")
    return root


def test_a_fleet_folds_clean_hosts_together_and_keeps_every_problem_in_sight(fleet: Path) -> None:
    assert len(HOSTS) > GRID_HOSTS > FULL_DETAIL_HOSTS
    report = collect(fleet)
    page = render(report)
    assert report.verdict == "failed"
    assert "class='grid'" not in page  # a 120-column grid helps nobody: the per-stage counts say it
    assert "<td>roce</td><td>13 failed, 107 done</td>" in page
    clean = len(HOSTS) - len(FAILED_ROCE) - 1
    assert f"<summary>{clean} host(s) with no failed stage and no failed or warned check</summary>" in page
    assert f"<summary>{WARNED}: 0 failed stage(s), 1 check(s) failed or warned</summary>" in page
    for host in FAILED_ROCE:
        assert f"<summary>{host}: 1 failed stage(s), 1 check(s) failed or warned</summary>" in page
    assert all(f"id='host-{h}'" in page for h in HOSTS)  # every host's stages and checks are still in the page


def test_only_a_few_log_tails_are_shown_and_the_rest_are_counted(fleet: Path) -> None:
    report = collect(fleet)
    page = render(report)
    shown = [h for h in FAILED_ROCE if f"= exit 1 {h}" in page]
    assert shown == FAILED_ROCE[:LOG_TAILS]
    assert f"{len(FAILED_ROCE) - LOG_TAILS} more failed host(s)" in page
    doc = to_json(report)
    assert sum(1 for h in doc["hosts"] if h["log_tail"]) == len(FAILED_ROCE)  # the JSON holds every tail
