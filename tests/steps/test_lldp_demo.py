"""End to end on the rails-16 demo: each switch-side fault fails the right discovery check, naming host, port, switch.

One run of `roce-wizard --demo --profile rails-16 --only discovery` carries three faults on three hosts (as a real
fabric can); every other host and port must pass, so the same run proves the healthy profile too.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from wizard.cli.main import main
from wizard.lab.switch_load import configure_demo_state

FAULTS = {
    "gpu-003": "flap=enp64s0np0",  # rail 1 -> leaf-r1 swp3
    "gpu-005": "wrong_leaf=enp79s0np0",  # rail 2 cabled to leaf-r3
    "gpu-007": "switch_pfc_off=enp24s0np0",  # rail 0 -> leaf-r0 swp7
}


def _discovery(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> list[Any]:
    monkeypatch.setenv("ROCE_WIZARD_LAB_TIME_SCALE", "0.01")
    configure_demo_state(tmp_path)  # the leaves run switch-config's files, so they advertise PFC over LLDP
    argv = ["--demo", "--profile", "rails-16", "--only", "discovery", "--json", "--state-dir", str(tmp_path)]
    for host, fault in FAULTS.items():
        argv += ["--fault", f"{host}:{fault}"]
    code = main(argv)
    out = capsys.readouterr().out
    assert code == 1, out[-2000:]
    return [json.loads(line) for line in out.splitlines() if line.startswith("{")]


@pytest.mark.slow  # one 16-host discovery, ~10 s
def test_each_fault_fails_its_own_check_naming_host_port_and_switch_port_and_nothing_else_fails(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    checks = [e for e in _discovery(tmp_path, monkeypatch, capsys) if e["event"] == "check"]
    failed = {(e["host"], e["id"]): e for e in checks if e["status"] == "fail"}
    assert set(failed) == {
        ("gpu-003", "link_flaps:enp64s0np0"),
        ("gpu-005", "lldp_rail:enp79s0np0"),
        ("gpu-007", "switch_pfc:enp24s0np0"),
    }

    flap = failed[("gpu-003", "link_flaps:enp64s0np0")]
    assert flap["evidence"].startswith("gpu-003 enp64s0np0 (leaf-r1 swp3): link went down ")
    assert "rx_crc_errors_phy" in flap["evidence"] and "reseat or replace the cable/optic" in flap["fix"]

    cabling = failed[("gpu-005", "lldp_rail:enp79s0np0")]
    assert "gpu-005 enp79s0np0 (rail 2) reaches leaf-r3/" in cabling["evidence"]
    assert "rail 2 is on leaf-r2" in cabling["evidence"]
    assert cabling["fix"].startswith("move the cable of gpu-005 enp79s0np0 to a port of leaf-r2")

    pfc = failed[("gpu-007", "switch_pfc:enp24s0np0")]
    assert pfc["evidence"].startswith("enp24s0np0 (rail 0) -> leaf-r0/swp7 advertises PFC on no priority")
    assert "enable PFC on priority 3" in pfc["fix"]

    # the healthy 13 hosts and the other 7 ports of the faulty ones: every flap, cabling and PFC check passes
    per_host = {e["host"] for e in checks if e["id"].startswith("link_flaps:") and e["status"] == "pass"}
    assert per_host == {f"gpu-{i:03d}" for i in range(1, 17)}
    assert sum(e["id"].startswith("link_flaps:") for e in checks) == 16 * 8
    assert sum(e["id"].startswith("switch_pfc:") and e["status"] == "pass" for e in checks) == 16 * 8 - 1


@pytest.mark.slow  # stages discovery and network on four rails-16 hosts over SSH: about 10 s
async def test_a_leaf_port_with_mtu_1500_fails_the_jumbo_path_naming_that_switch_port(tmp_path: Path) -> None:
    import yaml

    from steps import all_steps
    from wizard.answers.model import parse_answers
    from wizard.answers.profiles import demo_answers
    from wizard.engine.events import EventBus
    from wizard.engine.runner import RunOptions
    from wizard.engine.session import open_session, production_targets
    from wizard.engine.state import StateStore
    from wizard.lab import Lab, parse_fault

    doc = yaml.safe_load(demo_answers("rails-16").read_text())
    doc["hosts"] = doc["hosts"][:4]
    answers = parse_answers(yaml.safe_dump(doc))
    names = [h.name for h in answers.hosts]
    lab = Lab.rails16(names, mgmt_addresses={h.name: h.address for h in answers.hosts},
                      faults=[parse_fault("gpu-002:switch_mtu=enp64s0np0")])  # fmt: skip
    lab.time_scale = 0.01
    await lab.start()
    targets = production_targets(answers, None)
    for name, target in targets.items():
        target.address, target.port = lab.endpoint(name)
        target.identity_file, target.known_hosts = str(lab.client_key_path), str(lab.known_hosts_path)
    session = open_session(answers, all_steps(), targets, tmp_path, EventBus(), simulated=True, password=None)
    try:
        options = RunOptions(stages=["discovery", "network"], allow_disruptive=True, demo=True)
        assert await session.runner.run(options) == 1
    finally:
        await session.close()
        await lab.stop()
    store = StateStore(tmp_path)
    failed = {
        (host, c.id): c
        for host in names
        for c in store.host(host).stage("network").checks
        if c.status == "fail" and c.id.startswith("jumbo:")
    }
    stages = {h: (store.host(h).stage("network").status, store.host(h).stage("network").reason) for h in names}
    assert failed, f"a leaf port with MTU 1500 must fail a jumbo ping; network stage per host: {stages}"
    assert {c.id for c in failed.values()} == {"jumbo:enp64s0np0"}  # rail 1 only
    assert any(host == "gpu-002" for host, _ in failed)
    for check in failed.values():
        assert "leaf-r1 swp2 (gpu-002 enp64s0np0)" in check.evidence + (check.fix or "")
    assert any("most likely leaf-r1 swp2" in (c.fix or "") for c in failed.values())
