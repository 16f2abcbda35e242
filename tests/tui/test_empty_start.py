"""A real bring-up starts empty, or from the last answers used, never from the example's hosts (server1/server2 are
somebody else's servers); every page and action copes with no hosts; `roce-wizard tui --answers FILE` opens the
wizard on a fleet's answers file, and a bad file is one line naming the key, exit 2."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from screens.app import WizardApp
from screens.engine_link import NO_HOSTS, EngineLink
from screens.start import NEW_CLUSTER
from screens.vtable import VirtualTable
from tests.tui.conftest import settle
from wizard.cli.main import main

FLEET = """version: 1
cluster: {name: fleet}
hosts:
  - {name: "gpu[001-040]", address_start: 10.9.0.1}
"""


@pytest.fixture
def state_root(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """$XDG_STATE_HOME in the test's folder: the default state directories live under it."""
    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path / "xdg"))
    return tmp_path / "xdg" / "roce-wizard"


def _messages(app: WizardApp) -> list[str]:
    return [str(n.message) for n in app._notifications]


async def test_a_real_bring_up_without_saved_answers_opens_with_no_hosts_and_says_how_to_add_them(
    tmp_path: Path,
) -> None:
    app = WizardApp(EngineLink(tmp_path / "state", demo=False))
    assert app.engine.host_names == []
    async with app.run_test(size=(160, 45)) as pilot:
        assert app.sub_title == "new cluster"  # not the example's l20-pair
        assert NEW_CLUSTER in str(app.screen.query_one(".dim").render())
        await pilot.press("n")
        await pilot.pause()
        page = app.main.current()
        assert page.query_one("#hosts-empty").display is True
        assert page.query_one(VirtualTable).row_count == 0
        await pilot.press("t")
        await pilot.pause()
        assert NO_HOSTS in _messages(app)
        assert app.busy is None
        for page_id, _ in app.pages():  # every page draws with no host, and its actions refuse politely
            app.main.show_page(page_id)
            await pilot.pause()
        app.clear_notifications()
        app.main.show_page("discovery")
        await pilot.pause()
        await pilot.press("a")
        await pilot.pause()
        assert _messages(app) == [NO_HOSTS]
        assert "No hosts yet" in str(app.main.current().query_one("#disc-host-facts").render())
        app.clear_notifications()
        await pilot.press("ctrl+s")  # an answers file without hosts would not load again: not written
        await pilot.pause()
        assert _messages(app) == [NO_HOSTS]
        assert not (tmp_path / "state" / "lock").exists()  # nothing ran, nothing was locked
        assert not (tmp_path / "state" / "answers.yaml").exists()


async def test_the_first_host_names_a_new_cluster_and_its_state_directory(state_root: Path) -> None:
    engine = EngineLink(None, demo=False)
    assert engine.host_names == [] and engine.state_dir_pending
    app = WizardApp(engine)
    async with app.run_test(size=(80, 24)) as pilot:
        await pilot.press("n")
        await pilot.pause()
        app.save_host({"name": "gpu-001", "address": "10.0.0.1"})
        await pilot.pause()
        assert engine.answers.cluster.name == "gpu"
        assert app.sub_title == "gpu"
        assert engine.state_dir == state_root / "gpu"
        assert app.main.current().query_one("#hosts-empty").display is False
        app.remove_host("gpu-001")  # back to none is refused: the answers file needs a host
        await pilot.pause()
        assert engine.host_names == ["gpu-001"]


async def test_without_a_state_directory_the_wizard_reopens_the_last_real_answers_used(state_root: Path) -> None:
    for name, host, age in (("older", "n1", 300), ("fleet", "gpu001", 100), ("demo-l20-pair", "server1", 0)):
        (state_root / name).mkdir(parents=True)
        answers = state_root / name / "answers.yaml"
        answers.write_text(f"version: 1\ncluster: {{name: {name}}}\nhosts: [{{name: {host}, address: 10.0.0.1}}]\n")
        os.utime(answers, (1_700_000_000 - age, 1_700_000_000 - age))
    engine = EngineLink(None, demo=False)
    assert engine.host_names == ["gpu001"]  # the newest real one; the demo's never counts
    assert engine.state_dir == state_root / "fleet"
    assert engine.cluster_label == "fleet"


def test_the_demo_keeps_its_profiles_hosts(tmp_path: Path) -> None:
    assert EngineLink(tmp_path / "state", demo=True).host_names == ["server1", "server2"]


async def test_tui_answers_opens_the_wizard_on_the_files_hosts_in_the_clusters_state_directory(
    tmp_path: Path, state_root: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (tmp_path / "fleet.yaml").write_text(FLEET)
    opened: list[WizardApp] = []
    monkeypatch.setattr("sys.stdin.isatty", lambda: True)
    monkeypatch.setattr("sys.stdout.isatty", lambda: True)
    monkeypatch.setattr("screens.app._log_asyncio_to", lambda path: None)
    monkeypatch.setattr(WizardApp, "run", lambda self: opened.append(self))
    assert main(["tui", "--answers", str(tmp_path / "fleet.yaml")]) == 0
    app = opened[0]
    assert app.engine.state_dir == state_root / "fleet"  # as headless mode names it
    async with app.run_test(size=(160, 45)) as pilot:
        assert app.sub_title == "fleet"
        await pilot.press("n")
        await settle(pilot, app)
        table = app.main.current().query_one(VirtualTable)
        assert table.row_count == 40
        assert table.keys[:2] == ["gpu001", "gpu002"]


def test_tui_with_a_bad_answers_file_is_one_line_naming_the_key(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    bad = tmp_path / "bad.yaml"
    bad.write_text("version: 1\nhosts:\n  - {name: a, address: 10.0.0.1}\nssh: {port: 99999}\n")
    assert main(["tui", "--answers", str(bad)]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and err.startswith(f"roce-wizard: {bad}") and "ssh.port" in err


def test_tui_without_a_terminal_says_how_to_run_headless(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    (tmp_path / "fleet.yaml").write_text(FLEET)
    assert main(["tui", "--answers", str(tmp_path / "fleet.yaml")]) == 2  # pytest's stdin is no terminal
    assert capsys.readouterr().err == (
        "roce-wizard: tui needs a terminal; without one run the stages headless: roce-wizard --answers FILE\n"
    )


def test_the_wizard_passes_switch_os_to_its_simulated_switches(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    opened: list[WizardApp] = []
    monkeypatch.setattr("sys.stdin.isatty", lambda: True)
    monkeypatch.setattr("sys.stdout.isatty", lambda: True)
    monkeypatch.setattr("screens.app._log_asyncio_to", lambda path: None)
    monkeypatch.setattr(WizardApp, "run", lambda self: opened.append(self))
    state = ["--state-dir", str(tmp_path / "state")]
    for argv in (["tui", "--demo", "--profile", "rails-16", *state], ["--demo", "--profile", "rails-16", *state]):
        assert main([*argv, "--switch-os", "sonic"]) == 0
        assert opened.pop().engine.switch_os == "sonic"
