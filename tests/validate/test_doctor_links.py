"""The doctor reads every RDMA port's link counters twice and fails a flapping link, lowest layer first."""

from __future__ import annotations

import re

import pytest

from steps.discovery import links as discovery_links
from tests.validate.labkit import lab_executors, quick_start  # noqa: F401
from wizard.validate.doctor import diagnose


async def test_a_flapping_link_is_the_first_finding_with_its_counters_rising_between_the_two_reads(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(discovery_links, "LINK_RECHECK_S", 1.0)  # two flap periods of the lab at time scale 0.05
    async with lab_executors("server1:flap") as (lab, answers, executors):
        netdev = lab.host("server1").profile.ports[0].netdev
        findings = await diagnose(answers, executors, None)
    flaps = {(f.host, f.id): f for f in findings if f.id.startswith("link_flaps:")}
    bad = flaps[("server1", f"link_flaps:{netdev}")]
    assert bad.status == "fail" and bad.tree == "RDMA test fails"
    assert bad.evidence.startswith(f"server1 {netdev}: link went down ")
    # the seconds between the two reads: LINK_RECHECK_S, more on a loaded machine (never asserted exactly)
    assert re.search(r"rising in \d+ s: ", bad.evidence) and "link_down_events_phy +" in bad.evidence
    assert "reseat or replace the cable/optic" in (bad.fix or "")
    assert findings[0] is bad, [f.id for f in findings if f.status == "fail"]
    others = [f for key, f in flaps.items() if key != ("server1", f"link_flaps:{netdev}")]
    assert others and all(f.status == "pass" for f in others)
