"""Validation against the simulated pair with injected faults: each fails the verdict and names its cause."""

from __future__ import annotations

from tests.validate.labkit import quick_start, validate  # noqa: F401 - the fixture applies to this module


async def test_a_link_down_fails_the_rail_and_names_the_port_and_the_cable():
    report = await validate("server2:link_down=ens1f0np0")
    assert report.verdict == "fail"
    assert report.together[0].status == "fail" and report.together[0].gbps is None
    assert all(r.status == "pass" for r in report.together[1:])
    assert report.aggregate[0].status == "fail"
    assert "ens1f0np0" in report.causes[0] and "DOWN" in report.causes[0] and "cable" in report.causes[0]


async def test_a_crosswired_card_fails_with_the_cabling_named_as_cause():
    report = await validate("server2:crosswire")
    assert report.verdict == "fail"
    assert all(r.gbps is None for r in report.together)
    assert "cross-wired" in report.causes[0] and "server2 ens1f0np0" in report.causes[0]
    assert next(i for i in report.lint if i.id == "link").status == "pass", "links are up: only the cables are wrong"


async def test_a_port_stuck_at_mtu_1500_runs_slower_and_the_mtu_is_named():
    report = await validate("server2:mtu_mismatch=ens1f0np0")
    assert report.verdict == "fail"
    rail0 = report.together[0]
    assert rail0.mtu == 1024 and rail0.status == "fail" and rail0.gbps < 22.5
    assert "MTU" in report.causes[0] and "server2 ens1f0np0" in report.causes[0]


async def test_pfc_off_on_one_host_shows_drops_in_the_counters_and_names_pfc():
    report = await validate("server2:pfc_off")
    assert report.verdict == "fail"
    assert all(r.status == "fail" for r in report.together)
    pfc = next(i for i in report.lint if i.id == "pfc")
    assert pfc.status == "fail" and "server2" in pfc.evidence
    drops = [c for c in report.counters if c.status == "fail" and c.host == "server1"]
    assert drops and all("discards" in c.note for c in drops), "the receiver drops what the sender will not pause"
    assert any("not lossless on priority 3" in c and "server2" in c for c in report.causes)
