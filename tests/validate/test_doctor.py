"""The doctor walks the runbook's trees on the simulated pair and puts the most likely cause first."""

from __future__ import annotations

import io

from tests.validate.labkit import lab_executors, quick_start  # noqa: F401
from wizard.cli.doctor import print_findings
from wizard.validate.doctor import TREES, diagnose


async def test_pfc_off_puts_the_qos_findings_first_with_host_port_and_fix():
    async with lab_executors("server2:pfc_off") as (_, answers, executors):
        findings = await diagnose(answers, executors, None)
    assert {f.tree for f in findings} == set(TREES)
    first = findings[0]
    assert first.status == "fail" and first.tree == "bandwidth below expectation"
    assert first.id in ("pfc", "trust") and "server2" in first.evidence and "mlnx_qos" in (first.fix or "")
    statuses = [f.status for f in findings]
    assert statuses == sorted(statuses, key=["fail", "warn", "pass", "skip"].index), "failures before passes"
    out = io.StringIO()
    print_findings(findings, simulated=True, stream=out)
    assert out.getvalue().startswith("SIMULATED doctor:") and "fix: " in out.getvalue()


async def test_a_healthy_pair_passes_the_rdma_tree_and_the_qos_checks():
    async with lab_executors() as (_, answers, executors):
        findings = await diagnose(answers, executors, None)
    by_id = {(f.tree, f.id, f.host): f for f in findings}
    for key in (("bandwidth below expectation", "pfc", None), ("bandwidth below expectation", "mtu", None),
                ("RDMA test fails", "modules", "server1"), ("RDMA test fails", "gid", None),
                ("bond or rails unbalanced", "rails", "server2")):  # fmt: skip
        assert by_id[key].status == "pass", by_id[key]
    assert by_id[("bandwidth below expectation", "measured", None)].status == "skip", "no bwtest saved yet"
