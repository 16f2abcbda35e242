"""Lab faults the network stage must catch: the failure lands on the right host, names the port and the fix."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.steps.test_network_demo import lab_session, outcome, run
from wizard.answers.model import load_answers
from wizard.paths import example_answers

pytest.importorskip("wizard.lab", reason="the simulated lab (wizard.lab) is not importable")


async def test_swapped_cards_on_server2_fail_server2_with_the_cables_to_swap(tmp_path: Path) -> None:
    async with lab_session(load_answers(example_answers()), tmp_path, ["server2:crosswire"]) as session:
        assert await run(session, ["network"]) == 1
        status, reason = outcome(session, "server2")
        assert status == "failed"
        assert "server2 ens1f0np0 (rail 0) is cabled to rail 2: it reaches server1 ens2f0np0 (rail 2)" in reason
        assert "fix: swap the cables of ens1f0np0 and ens2f0np0 on server2" in reason
        assert "fix: swap the cables of ens1f1np1 and ens2f1np1 on server2" in reason
        assert outcome(session, "server1")[0] == "done"
        warned = [c for c in session.store.host("server1").stage("network").checks if c.status == "warn"]
        assert {c.id for c in warned} == {f"cabling:{n}" for n in ("ens1f0np0", "ens1f1np1", "ens2f0np0", "ens2f1np1")}


async def test_a_port_stuck_at_mtu_1500_fails_its_own_host_only(tmp_path: Path) -> None:
    async with lab_session(load_answers(example_answers()), tmp_path, ["server1:mtu_mismatch=ens1f0np0"]) as session:
        assert await run(session, ["network"]) == 1
        status, reason = outcome(session, "server1")
        assert status == "failed"
        assert "ens1f0np0 MTU is 1500, not 9000" in reason and "ip -d link show ens1f0np0" in reason
        assert "ping: local error: message too long, mtu=1500" in reason
        assert outcome(session, "server2")[0] == "done"
        jumbo = next(c for c in session.store.host("server2").stage("network").checks if c.id == "jumbo:ens1f0np0")
        assert jumbo.status == "warn" and "the peer port server1 ens1f0np0 has MTU 1500" in jumbo.evidence


async def test_a_pulled_cable_fails_with_reseat_or_replace_naming_the_port(tmp_path: Path) -> None:
    # A pulled cable darkens both of its ends (the lab models the carrier across the cable, as hardware does),
    # so each host reports its own end of rail 3; the evidence of the skipped ping names the other end.
    async with lab_session(load_answers(example_answers()), tmp_path, ["server2:link_down=ens2f1np1"]) as session:
        assert await run(session, ["network"]) == 1
        for host in ("server1", "server2"):
            status, reason = outcome(session, host)
            assert status == "failed"
            assert reason.startswith("rail 3 link on ens2f1np1: ens2f1np1 carrier down")
            assert "fix: reseat or replace the cable on ens2f1np1" in reason
        skipped = next(c for c in session.store.host("server2").stage("network").checks if c.id == "cabling:ens2f1np1")
        assert "server1 ens2f1np1 has no carrier either" in skipped.evidence
