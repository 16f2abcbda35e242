"""The network stage's netplan file at the next boot: a rail whose peer is off must not stall the boot, and the
host's own netplan renderer (networkd or NetworkManager) is kept.

Real behaviour (sources in wizard/lab/waitonline.py): systemd-networkd-wait-online.service(8) waits up to 120 s for
every networkd link that is not `optional: true` (netplan-yaml docs, `optional`; netplan src/networkd.c
RequiredForOnline=no, src/gen-networkd.c), and units After=network-online.target wait with it. A global
`network: renderer:` is last-file-wins for every definition without its own renderer (netplan-yaml docs,
`renderer`; src/parse.c finish_iterator).
"""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
import yaml

from tests.steps.test_network_demo import outcome, run
from wizard.answers.model import load_answers
from wizard.paths import example_answers

lab_module = pytest.importorskip("wizard.lab", reason="the simulated lab (wizard.lab) is not importable")
from tests.steps.test_network_demo import lab_and_session  # noqa: E402
from wizard.lab import netplan, waitonline  # noqa: E402
from wizard.lab.vfs import ROOT  # noqa: E402

TIMEOUT_LINE = "Timeout occurred while waiting for network connectivity."


@contextlib.asynccontextmanager
async def lab_session(state: Path, faults: list[str] = ()) -> AsyncIterator[tuple[Any, Any]]:  # type: ignore[assignment]
    """(session, lab) for the example answers, with fast reboots."""
    async with lab_and_session(load_answers(example_answers()), state, faults, reboot_seconds=0.2) as pair:
        yield pair


async def test_rebooting_with_the_back_to_back_peer_off_does_not_wait_for_its_rails(tmp_path: Path) -> None:
    async with lab_session(tmp_path) as (session, lab):
        assert await run(session, ["discovery", "network"]) == 0
        server1, server2 = lab.host("server1"), lab.host("server2")
        server2.power_off()
        server1.request_reboot()
        await server1.wait_running()
        timing = server1.boot_timing
        stalled = [f"{e.ident}: {e.message}" for e in server1.journal if e.message == TIMEOUT_LINE]
        assert stalled == [], f"boot waited {timing.wait_online:.0f} s for {timing.waited_for}"
        assert timing.waited_for == [server1.profile.mgmt.netdev]
        rails = yaml.safe_load(server1.fs.read_text("/etc/netplan/60-roce-wizard.yaml"))["network"]["ethernets"]
        assert all(conf.get("optional") is True for conf in rails.values())


async def test_a_network_manager_host_keeps_network_manager_for_every_interface(tmp_path: Path) -> None:
    async with lab_session(tmp_path, ["server2:nm_renderer"]) as (session, lab):
        assert await run(session, ["discovery", "network"]) == 0
        assert outcome(session, "server2")[0] == "done"
        host = lab.host("server2")
        cfg, _ = netplan.load(host, ROOT)
        backends = {name: waitonline.backend_of(cfg, s, name) for s, name, _ in waitonline.definitions(cfg)}
        assert backends[host.profile.mgmt.netdev] == "NetworkManager"  # the SSH interface stays with its daemon
        assert {backends[p.netdev] for p in host.profile.ports} == {"NetworkManager"}
        # server1 keeps networkd, written per interface, never as a global renderer
        cfg1, _ = netplan.load(lab.host("server1"), ROOT)
        assert "renderer" not in cfg1["network"]
        assert {waitonline.backend_of(cfg1, s, n) for s, n, _ in waitonline.definitions(cfg1)} == {"networkd"}
