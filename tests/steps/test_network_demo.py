"""The network stage against the simulated lab over real SSH: apply, verify, re-run idempotently, refuse bad bonds."""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest

from wizard.answers.model import Answers, load_answers, parse_answers
from wizard.engine.events import EventBus
from wizard.engine.runner import RunOptions
from wizard.engine.session import open_session, production_targets
from wizard.paths import example_answers

lab_module = pytest.importorskip("wizard.lab", reason="the simulated lab (wizard.lab) is not importable")
from steps import all_steps  # noqa: E402


@contextlib.asynccontextmanager
async def lab_and_session(
    answers: Answers,
    state: Path,
    faults: list[str] = (),
    *,
    reboot_seconds: float | None = None,  # type: ignore[assignment]
) -> AsyncIterator[tuple[Any, Any]]:
    """(session, lab): a started lab for the answers' hosts and a session (runner + state) reaching it on 127.0.0.1."""
    names = [h.name for h in answers.hosts]
    mgmt = {h.name: h.address for h in answers.hosts}
    lab = lab_module.Lab.reference(names, mgmt_addresses=mgmt, faults=[lab_module.parse_fault(f) for f in faults])
    lab.time_scale = 0.01  # pings and sleeps run a hundred times faster; the armed netplan revert still outlasts apply
    if reboot_seconds is not None:
        lab.reboot_seconds = reboot_seconds
    await lab.start()
    targets = production_targets(answers, None)
    for name, target in targets.items():
        target.address, target.port = lab.endpoint(name)
        target.identity_file = str(lab.client_key_path)
        target.known_hosts = str(lab.known_hosts_path)
    session = open_session(answers, all_steps(), targets, state, EventBus(), simulated=True, password=None)
    try:
        yield session, lab
    finally:
        await session.close()
        await lab.stop()


@contextlib.asynccontextmanager
async def lab_session(answers: Answers, state: Path, faults: list[str] = ()) -> AsyncIterator[Any]:  # type: ignore[assignment]
    """The session alone (see lab_and_session)."""
    async with lab_and_session(answers, state, faults) as (session, _lab):
        yield session


async def run(session: Any, stages: list[str]) -> int:
    return await session.runner.run(RunOptions(stages=stages, allow_disruptive=True, demo=True))


def outcome(session: Any, host: str) -> tuple[str, str]:
    record = session.store.host(host).stage("network")
    return record.status, record.reason


async def test_rails_are_applied_verified_and_a_second_run_plans_nothing(tmp_path: Path) -> None:
    answers = load_answers(example_answers())
    async with lab_session(answers, tmp_path) as session:
        assert await run(session, ["discovery", "network"]) == 0
        for host in ("server1", "server2"):
            status, reason = outcome(session, host)
            assert status == "done" and reason == "verified after 2 change(s)"
        checks = {c.id: c for c in session.store.host("server2").stage("network").checks}
        assert checks["cabling:ens2f0np0"].evidence == "ens2f0np0 reaches server1 ens2f0np0 (rail 2)"
        assert checks["jumbo:ens1f0np0"].status == "pass" and checks["gid:rocep59s0f0"].status == "pass"
        assert await run(session, ["network"]) == 0
        assert outcome(session, "server1") == (
            "done",
            "verified; /etc/netplan/60-roce-wizard.yaml is current and applied: rail 0 ens1f0np0 192.168.11.1/24, "
            "rail 1 ens1f1np1 192.168.12.1/24, rail 2 ens2f0np0 192.168.13.1/24, rail 3 ens2f1np1 192.168.14.1/24 "
            "with MTU 9000 and their addresses; multi-NIC sysctls in place",
        )


async def test_the_seed_cross_card_bond_is_refused_on_every_host_with_the_reason(tmp_path: Path) -> None:
    text = example_answers().read_text()
    start, end = text.index("network:\n"), text.index("\nroce:")
    body = (
        "network:\n  topology: bond\n  bonds:\n    - name: bond0\n      mode: balance-xor\n"
        "      members: [ens1f0np0, ens1f1np1, ens2f0np0, ens2f1np1]\n      subnet: 192.168.10.0/24\n"
    )
    answers = parse_answers(text[:start] + body + text[end:])
    async with lab_session(answers, tmp_path) as session:
        assert await run(session, ["discovery", "network"]) == 1
        for host in ("server1", "server2"):
            status, reason = outcome(session, host)
            assert status == "failed"
            assert f"{host}: refusing bond bond0" in reason and "2 different cards" in reason
            assert "one LAG per card (bond0 = ens1f0np0 + ens1f1np1; bond1 = ens2f0np0 + ens2f1np1)" in reason
        result = await session.executors["server1"].run(["ip", "-j", "link", "show"])
        assert '"bond0"' not in result.stdout  # nothing was built


async def test_netplan_generate_rejecting_the_configuration_fails_the_host_with_its_message(tmp_path: Path) -> None:
    async with lab_session(load_answers(example_answers()), tmp_path) as session:
        broken = "network:\n  version: 2\n  ethernets:\n    eno2:\n      dhcp: true\n"
        await session.executors["server2"].write_file("/etc/netplan/70-local.yaml", broken, mode=0o600)
        assert await run(session, ["network"]) == 1
        status, reason = outcome(session, "server2")
        assert status == "failed" and "`sudo netplan generate` exited 1" in reason
        assert "/etc/netplan/70-local.yaml:5:7: Error in network definition: unknown key 'dhcp'" in reason
        assert outcome(session, "server1")[0] == "done"
