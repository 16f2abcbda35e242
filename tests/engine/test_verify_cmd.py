"""``roce-wizard verify`` on the simulated pair: every stage done is checked again from fresh probes, nothing is
changed, and what no longer holds is named with its host, check and evidence (a cable pulled since the bring-up)."""

from __future__ import annotations

import json
from pathlib import Path

from tests.engine.test_headless_demo import cli

STAGES = "discovery,network"


def bring_up(state: Path) -> None:
    done = cli("--demo", "--only", STAGES, "--yes", "--state-dir", str(state))
    assert done.returncode == 0, done.stderr[-2000:]


def test_a_configured_pair_holds_and_verify_says_which_stages_it_checked(tmp_path: Path) -> None:
    state = tmp_path / "state"
    bring_up(state)

    result = cli("verify", "--demo", "--json", "--state-dir", str(state))

    assert result.returncode == 0, result.stderr[-2000:]
    rows = [json.loads(line) for line in result.stdout.splitlines()]
    assert {(r["host"], r["stage"], r["status"]) for r in rows} == {
        (host, stage, "done") for host in ("server1", "server2") for stage in STAGES.split(",")
    }
    assert "verify: discovery, network hold on all 2 hosts; nothing changed" in result.stderr
    assert "bandwidth" not in result.stderr  # rails without the roce stage's lossless class carry no bandwidth test
    network = cli("verify", "--demo", "--only", "network", "--no-bandwidth", "--state-dir", str(state))
    assert "verify: network holds on all 2 hosts; nothing changed" in network.stderr
    assert "bandwidth" not in network.stderr


def test_a_cable_pulled_since_the_bring_up_is_named_with_host_check_and_evidence(tmp_path: Path) -> None:
    state = tmp_path / "state"
    bring_up(state)

    result = cli("verify", "--demo", "--fault", "server2:link_down=ens2f1np1", "--json", "--no-bandwidth",
                 "--state-dir", str(state))  # fmt: skip

    assert result.returncode == 1, result.stderr[-2000:]
    rows = {(r["host"], r["stage"]): r for r in map(json.loads, result.stdout.splitlines())}
    # Back to back, one cable joins the two hosts' ens2f1np1: both ends lose their link, and only that rail.
    for host in ("server1", "server2"):
        broken = rows[(host, "network")]
        assert broken["status"] == "failed" and broken["was"] == "done"
        assert [c["check"] for c in broken["failed_checks"]] == ["rail 3 link on ens2f1np1"], broken
        assert "carrier down" in broken["failed_checks"][0]["evidence"]
        assert f"{host}: network no longer holds\n" in result.stderr
    assert "rail 3 link on ens2f1np1: ens2f1np1 carrier down" in result.stderr
    assert "verify: 4 stage(s) on 2 of 2 hosts fail; discovery, network re-checked, nothing changed" in result.stderr


def test_before_any_stage_is_done_there_is_nothing_to_verify(tmp_path: Path) -> None:
    result = cli("verify", "--demo", "--state-dir", str(tmp_path / "state"))

    assert result.returncode == 0
    assert "nothing to verify: no stage is done on any host yet" in result.stderr


def test_an_unreachable_host_is_one_line_and_the_other_host_is_still_verified(tmp_path: Path) -> None:
    state = tmp_path / "state"
    bring_up(state)

    result = cli("verify", "--demo", "--only", "discovery", "--fault", "server2:unreachable", "--json",
                 "--state-dir", str(state))  # fmt: skip

    assert result.returncode == 1
    rows = {r["host"]: r for r in map(json.loads, result.stdout.splitlines())}
    assert rows["server1"]["status"] == "done" and rows["server2"]["status"] == "failed"
    lines = [line for line in result.stderr.splitlines() if "server2" in line and "booted" not in line]
    assert len(lines) == 1 and "server2: discovery no longer holds: cannot connect to" in lines[0], lines
