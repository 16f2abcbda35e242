"""Other topologies in the lab: one RoCE LAG per card, and a switched rail fabric with per-rail routing."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.steps.test_network_demo import lab_session, outcome, run
from wizard.answers.model import parse_answers

pytest.importorskip("wizard.lab", reason="the simulated lab (wizard.lab) is not importable")

LAG = """version: 1
hosts:
  - {name: server1, address: 10.0.0.11}
  - {name: server2, address: 10.0.0.12}
network:
  topology: roce_lag
  bonds:
    - {name: bond0, members: [ens1f0np0, ens1f1np1], subnet: 192.168.21.0/24}
    - {name: bond1, members: [ens2f0np0, ens2f1np1], subnet: 192.168.22.0/24}
"""
SWITCHED = """version: 1
hosts:
  - {name: gpu1, address: 10.0.0.11}
  - {name: gpu2, address: 10.0.0.12}
  - {name: gpu3, address: 10.0.0.13}
network:
  rails:
    - {subnet: 192.168.11.0/24, gateway: 192.168.11.254}
    - {subnet: 192.168.12.0/24, gateway: 192.168.12.254}
    - {subnet: 192.168.13.0/24, gateway: 192.168.13.254}
    - {subnet: 192.168.14.0/24, gateway: 192.168.14.254}
"""


async def test_one_lag_per_card_forms_one_rdma_device_per_bond(tmp_path: Path) -> None:
    async with lab_session(parse_answers(LAG), tmp_path) as session:
        assert await run(session, ["network"]) == 0
        checks = {c.id: c for c in session.store.host("server1").stage("network").checks}
        assert checks["lag:bond0"].evidence == "rocep59s0f0 port 1 is the one RDMA device of ens1f0np0 + ens1f1np1"
        assert checks["gid:rocep59s0f0"].evidence == "rocep59s0f0 has a RoCE v2 GID for 192.168.21.1"
        assert checks["cabling:bond1"].evidence == "bond1 reaches server2 bond1 (LAG bond1)"


async def test_a_switched_rail_fabric_gets_source_routing_and_catches_the_odd_host(tmp_path: Path) -> None:
    async with lab_session(parse_answers(SWITCHED), tmp_path, ["gpu2:crosswire"]) as session:
        assert await run(session, ["network"]) == 1
        checks = {c.id: c for c in session.store.host("gpu1").stage("network").checks}
        assert checks["policy:ens2f1np1"].evidence == (
            "rule from 192.168.14.1 lookup 103: present; table 103 route 192.168.14.0/24 dev ens2f1np1: present"
        )
        assert [outcome(session, h)[0] for h in ("gpu1", "gpu2", "gpu3")] == ["done", "failed", "done"]
        reason = outcome(session, "gpu2")[1]
        assert "gpu2 ens1f0np0 (rail 0) is cabled to rail 2: it reaches gpu1 ens2f0np0 (rail 2), gpu3" in reason
        assert "swap the cables of ens1f0np0 and ens2f0np0 on gpu2" in reason
