"""Answers in the wizard: forms validate through the headless models, and 'Save answers' writes a replayable file."""

from __future__ import annotations

from pathlib import Path

from textual.widgets import TabbedContent

from screens.dialogs import AskPath
from screens.form import SectionForm, field_errors
from tests.tui.conftest import settle, until
from wizard.answers.model import AnswersError, load_answers, parse_answers
from wizard.answers.sections import NetworkSection, RoceSection
from wizard.answers.write import dump_answers
from wizard.paths import example_answers


def test_dumped_answers_load_back_equal() -> None:
    answers = load_answers(example_answers())
    text = dump_answers(answers)
    assert text.startswith("# roce-wizard answers")
    assert parse_answers(text) == answers


def test_form_errors_use_the_words_headless_mode_uses() -> None:
    errors = field_errors(RoceSection, {"tos": 106, "pfc_priority": 5})
    try:
        parse_answers("version: 1\nhosts: [{name: a, address: 10.0.0.1}]\nroce: {tos: 106, pfc_priority: 5}\n")
    except AnswersError as exc:
        headless = exc.problems[0]
    assert errors[""].startswith("pfc_priority 5 does not match tos 106")
    assert errors[""] in headless


def test_form_errors_name_the_field_they_belong_to() -> None:
    errors = field_errors(NetworkSection, {"mtu": "abc"})
    assert set(errors) == {"mtu"}
    assert "integer" in errors["mtu"]


async def network_page(pilot, app):  # type: ignore[no-untyped-def]
    """Start new, wait for the main screen, show the network stage's page and wait for its tabs; returns the page."""
    await pilot.press("n")
    await until(pilot, lambda: app.main is not None and app.main.is_mounted, "the main screen opening")
    app.main.show_page("network")
    await until(pilot, lambda: app.main.current().query(TabbedContent), "the network page's tabs")
    return app.main.current()


async def test_a_bad_value_shows_next_to_its_field_and_a_good_one_changes_the_answers(make_app) -> None:
    app = make_app()
    async with app.run_test(size=(120, 40)) as pilot:
        await network_page(pilot, app)
        await pilot.press("4")
        await until(pilot, lambda: app.main.current().query(SectionForm), "the network form showing")
        form = app.main.current().query_one(SectionForm)
        mtu = form.query_one("#f-mtu")
        mtu.value = "900"
        error = form.query_one("#err-mtu")
        await until(pilot, lambda: error.display, "the MTU error showing")
        assert "greater than or equal to 1500" in str(error.render())
        assert app.engine.answers.network.mtu == 9000
        mtu.value = "4200"
        await until(pilot, lambda: not error.display, "the MTU error going")
        # the error goes when the form validates; the answers change when the page handles the form's message
        await until(pilot, lambda: app.engine.answers.network.mtu == 4200, "the answers taking MTU 4200")


async def test_save_answers_writes_a_file_headless_mode_replays(make_app, tmp_path: Path) -> None:
    app = make_app()
    target = tmp_path / "saved.yaml"
    async with app.run_test(size=(80, 24)) as pilot:
        await pilot.press("n", "ctrl+s")
        await pilot.pause()
        assert isinstance(app.screen, AskPath)
        app.screen.query_one("#path").value = str(target)
        await pilot.press("enter")
        await settle(pilot, app)
    assert load_answers(target) == app.engine.answers


async def test_adding_a_host_validates_it_and_shows_it_in_the_list(make_app) -> None:
    app = make_app()
    async with app.run_test(size=(80, 24)) as pilot:
        await pilot.press("n")
        page = app.main.current()
        page.query_one("#h-name").value = "server3"
        page.query_one("#h-address").value = "10.0.0.13"
        page.query_one("#h-port").value = ""
        page.query_one("#h-user").value = ""
        app.save_host(page.form_values())
        await pilot.pause()
        assert app.engine.host_names == ["server1", "server2", "server3"]
        assert page.query_one("#hosts-table").row_count == 3
        app.save_host({"name": "server4", "address": "10.0.0.13"})
        await pilot.pause()
        assert app.engine.host_names == ["server1", "server2", "server3"]  # duplicate address refused


async def test_a_real_cluster_with_sudo_password_asks_for_it_and_runs_nothing_without_it(tmp_path, monkeypatch) -> None:
    from screens.app import WizardApp
    from screens.dialogs import AskSecret
    from screens.engine_link import EngineLink

    monkeypatch.delenv("ROCE_WIZARD_SUDO_PASSWORD", raising=False)
    engine = EngineLink(tmp_path / "state", demo=False)
    data = engine.data()
    data["ssh"]["sudo"] = "password"
    data["hosts"] = [{"name": "local", "address": "127.0.0.1", "port": 9}]  # never contacted: cancelled first
    engine.replace(data)
    app = WizardApp(engine)
    async with app.run_test(size=(80, 24)) as pilot:
        await pilot.press("n", "t")
        await pilot.pause(0.3)
        assert isinstance(app.screen, AskSecret)
        await pilot.press("escape")
        await settle(pilot, app)
        assert app.engine.password is None
        assert app.conn_reports == {}
        assert not (tmp_path / "state" / "logs" / "local.log").exists()


async def test_importing_an_answers_file_replaces_hosts_and_stage_answers(make_app, tmp_path: Path) -> None:
    source = tmp_path / "other.yaml"
    source.write_text(
        "version: 1\ncluster: {name: other}\nhosts:\n"
        "  - {name: a1, address: 10.9.0.1}\n  - {name: a2, address: 10.9.0.2}\n  - {name: a3, address: 10.9.0.3}\n"
        "network: {mtu: 4200, rails: [{subnet: 192.168.50.0/24}]}\n"
    )
    app = make_app()
    async with app.run_test(size=(80, 24)) as pilot:
        await pilot.press("n")
        app.action_import_answers()
        await pilot.pause()
        assert isinstance(app.screen, AskPath)
        app.screen.query_one("#path").value = str(source)
        await pilot.press("enter")
        await pilot.pause(0.3)
        assert app.engine.host_names == ["a1", "a2", "a3"]
        assert app.engine.answers.network.mtu == 4200
        assert app.main.query_one("#hosts-table").row_count == 3


async def test_a_tab_key_before_the_page_has_its_tabs_is_kept_for_the_next_frame_not_a_crash(make_app) -> None:
    """`4` pressed right after a page change, before its tabs were composed, ended the wizard with Textual's
    "No Tab with id" (seen on a loaded CI machine); a tab the page does not have is simply not shown."""
    app = make_app()
    async with app.run_test(size=(120, 40)) as pilot:
        page = await network_page(pilot, app)
        page.show_tab("no-such-tab")  # what a key sees before the tabs exist: no ValueError
        await pilot.pause(0.1)
        page.show_tab("answers")
        await until(pilot, lambda: page.query_one(TabbedContent).active == "tab-answers", "the answers tab")
        assert app.is_running
