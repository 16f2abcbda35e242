"""The terminal wizard on real OpenSSH hosts that go wrong, each in its own way, through the engine thread: a wrong
key, nothing listening, sudo that wants a password, and a cable pulled in the middle of a discovery command. Each
bad host gets one line naming it and its cause, the good host goes on to the end, and what was done is saved."""

from __future__ import annotations

import asyncio
import json
import shutil
import subprocess
from pathlib import Path

import pytest

from screens.app import WizardApp
from screens.engine_link import ANSWERS_FILE, EngineLink
from screens.vtable import VirtualTable
from tests.nslab.conftest import NsCluster
from tests.tui.conftest import settle

pytestmark = [pytest.mark.nslab, pytest.mark.slow]


def _rows(app: WizardApp) -> dict[str, list[str]]:
    table = app.main.current().query_one(VirtualTable)
    return {str(row[0]): [str(cell) for cell in row] for row in table.rows}


@pytest.mark.hosts(5, sudo_password=["h3"])
async def test_each_bad_host_is_named_with_its_cause_and_the_good_host_goes_on(
    ns_cluster: NsCluster, tmp_path: Path
) -> None:
    stale_key = tmp_path / "stale-key"
    subprocess.run(["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-f", str(stale_key)], check=True)
    ns_cluster.host("h2").kill_listener()
    h4 = ns_cluster.host("h4")
    state = ns_cluster.workdir / "state"
    state.mkdir(parents=True)
    shutil.copy(ns_cluster.answers(host_extra={"h1": {"identity_file": str(stale_key)}}), state / ANSWERS_FILE)
    app = WizardApp(EngineLink(state, demo=False))

    async with app.run_test(headless=True, size=(160, 50)) as pilot:
        await pilot.press("n")
        await pilot.pause(0.3)
        await pilot.press("t")
        await settle(pilot, app, timeout_s=120)
        problems = str(app.main.current().query_one("#host-problem").render()).splitlines()
        assert [line.split(":")[0] for line in problems] == ["h1", "h2", "h3"]
        assert "authentication refused for user 'ops'" in problems[0]
        assert "connection refused: nothing listens" in problems[1]
        assert "a password is required" in problems[2]
        rows = _rows(app)
        assert rows["h5"][3:6] == ["yes", "yes", "yes"] and rows["h4"][3:6] == ["yes", "yes", "yes"]

        # Discovery: h4's cable is pulled while one of its probes runs.
        started = h4.hang_command("lspci")
        await pilot.press("n")
        await pilot.pause(0.3)
        await pilot.press("a")
        for _ in range(600):
            if started.exists():
                break
            await asyncio.sleep(0.1)
        assert started.exists(), "h4's lspci never started"
        h4.pull_cable()
        await settle(pilot, app, timeout_s=180)
        cells = {host: app.progress.cell("discovery", host) for host in ("h1", "h2", "h3", "h4", "h5")}
        assert {host: cell.status for host, cell in cells.items()} == dict.fromkeys(cells, "failed")
        reasons = {host: cell.reason for host, cell in cells.items()}
        assert all(reason and "\n" not in reason for reason in reasons.values()), reasons
        assert "authentication refused" in reasons["h1"] and "password is required" in reasons["h3"], reasons
        assert reasons["h4"].startswith("connection lost during 'lspci"), reasons["h4"]
        # h5 was read to the end: its only complaint is the missing ConnectX cards of a namespace host.
        assert reasons["h5"].startswith("ConnectX ports: none found"), reasons["h5"]
        assert (state / "facts" / "h5.json").exists()

    saved = json.loads((state / "hosts" / "h4.json").read_text())
    assert saved, "h4's progress must be saved"
    h4.plug_cable()
    h4.release_command("lspci")
