"""The pages at 256 hosts: filters (failed only, text), grouping by leaf, per-stage progress counts, the host finder
and plans shown once for the hosts that share them. Fake facts and runner events (tests/tui/fleet_fakes.py)."""

from __future__ import annotations

from pathlib import Path

from textual.widgets import Input, Label, OptionList, Static

from screens.app import WizardApp
from screens.host_finder import SHOWN, HostFinder
from screens.vtable import VirtualTable
from tests.tui.fleet_fakes import make_fleet_app, send_discovery, send_network

HOSTS = 256
FAILING = (7, 100)  # rail 1 down: discovery fails on gpu-0008 and gpu-0101
NETWORK_FAILED = ("gpu-0201", "gpu-0202", "gpu-0203")  # done=200, failed=3: indexes 200-202


async def _fleet(pilot, app: WizardApp, page: str | None = None):  # type: ignore[no-untyped-def]
    """From the start screen to the hosts page, then a discovery run and a network apply under way; the page shown
    then (``page``, else the hosts page)."""
    await pilot.press("n")
    await pilot.pause()
    send_discovery(app, failing=FAILING)
    send_network(app, done=200, failed=3, own_plans=(4, 8))
    await _drawn(pilot, app)
    if page is not None:
        app.main.show_page(page)
        await pilot.pause()
    return app.main.current()


async def _drawn(pilot, app: WizardApp) -> None:  # type: ignore[no-untyped-def]
    app._redrawn_at = 0.0
    for _ in range(200):
        await pilot.pause(0.05)
        if not app._dirty and not app._events:
            break
    await pilot.pause(0.1)


def _text(widget: Label | Static) -> str:
    return str(widget.render())


def _app(tmp_path: Path) -> WizardApp:
    return make_fleet_app(tmp_path / "state", HOSTS, failing=FAILING)


async def test_failed_only_shows_just_the_hosts_that_failed_a_stage_and_says_how_many(tmp_path: Path) -> None:
    app = _app(tmp_path)
    async with app.run_test(size=(120, 40)) as pilot:
        page = await _fleet(pilot, app)
        table = page.query_one("#hosts-table", VirtualTable)
        assert table.row_count == HOSTS
        await pilot.press("f")
        await pilot.pause()
        assert table.keys == ["gpu-0008", "gpu-0101", *NETWORK_FAILED]
        assert _text(page.query_one(".filter-state", Label)) == f"5/{HOSTS} hosts (failed only)"
        await pilot.press("f")
        await pilot.pause()
        assert table.row_count == HOSTS


async def test_text_filter_matches_switch_names_ports_and_checks_on_the_discovery_page(tmp_path: Path) -> None:
    app = _app(tmp_path)
    async with app.run_test(size=(120, 40)) as pilot:
        page = await _fleet(pilot, app, "discovery")
        hosts = page.query_one("#disc-hosts", VirtualTable)
        await pilot.press("slash", *"leaf-03")
        await pilot.pause()
        assert hosts.keys == [f"gpu-{i:04d}" for i in range(65, 97)]  # 32 hosts per leaf
        await pilot.press(*["backspace"] * 7, *"link state")  # a failed check's title
        await pilot.pause()
        assert hosts.keys == ["gpu-0008", "gpu-0101"]
        await pilot.press(*["backspace"] * 10, *"swp9 ens1f0np0")  # every word must match: a port and a switch port
        await pilot.pause()
        assert hosts.keys == [f"gpu-{i:04d}" for i in range(9, HOSTS + 1, 32)]


async def test_group_by_leaf_puts_a_header_with_counts_above_each_leafs_hosts(tmp_path: Path) -> None:
    app = _app(tmp_path)
    async with app.run_test(size=(120, 40)) as pilot:
        page = await _fleet(pilot, app, "discovery")
        await pilot.press("g")
        await pilot.pause()
        table = page.query_one("#disc-hosts", VirtualTable)
        headers = sorted(table.group_rows)
        assert len(headers) == HOSTS // 32
        # The fakes cable rails 1-3 to rail<i>-leaf-NN and rail 0 to leaf-NN: a group says all four rails' leaves.
        assert [table.rows[i][0] for i in headers[:2]] == [
            "▸ rail1-leaf-01..rail3-leaf-01, r0: leaf-01",
            "▸ rail1-leaf-02..rail3-leaf-02, r0: leaf-02",
        ]
        assert table.rows[headers[0]][1] == "32 hosts, 1 failed"  # gpu-0008
        assert table.keys[headers[0]] is None and table.keys[headers[0] + 1] == "gpu-0001"
        await pilot.press("f")
        await pilot.pause()
        assert [table.rows[i][0] for i in sorted(table.group_rows)] == [
            "▸ rail1-leaf-01..rail3-leaf-01, r0: leaf-01",
            "▸ rail1-leaf-04..rail3-leaf-04, r0: leaf-04",
        ]
        assert [k for k in table.keys if k] == ["gpu-0008", "gpu-0101"]


async def test_stage_title_and_summary_count_done_failed_and_running_hosts(tmp_path: Path) -> None:
    app = _app(tmp_path)
    async with app.run_test(size=(120, 40)) as pilot:
        await _fleet(pilot, app, "network")
        title = _text(app.main.current().query_one("#stage-title", Label))
        assert title.endswith("200/256 done, 3 failed, 53 running")
        app.main.show_page("summary")
        await pilot.pause()
        lines = _text(app.main.current().query_one("#sum-progress", Static)).splitlines()
        assert lines == ["discovery: 254/256 done, 2 failed", "network: 200/256 done, 3 failed, 53 running"]


async def test_the_host_finder_searches_1_of_256_names_and_shows_that_host(tmp_path: Path) -> None:
    app = _app(tmp_path)
    async with app.run_test(size=(120, 40)) as pilot:
        await _fleet(pilot, app, "discovery")
        await pilot.press("h")
        await pilot.pause()
        finder = app.main.query_one(HostFinder)
        assert finder.is_open and app.focused is finder.query_one(Input)
        assert finder.query_one(OptionList).option_count == SHOWN  # the first hosts, before anything is typed
        await pilot.press(*"0200")
        await pilot.pause()
        assert finder.query_one(OptionList).option_count == 1
        assert _text(finder.query_one("#finder-count", Label)).startswith("1 of 256 hosts ·")
        await pilot.press("enter")
        await pilot.pause(0.2)
        assert not finder.is_open
        page = app.main.current()
        assert page.host == "gpu-0200"
        assert "gpu-0200" in _text(page.query_one("#disc-host-facts", Static))


async def test_the_host_finder_moves_with_arrows_falls_back_to_fuzzy_and_escape_gives_focus_back(
    tmp_path: Path,
) -> None:
    app = _app(tmp_path)
    async with app.run_test(size=(120, 40)) as pilot:
        page = await _fleet(pilot, app, "discovery")
        table = page.query_one("#disc-hosts", VirtualTable)
        table.focus()
        await pilot.press("h", *"gpu-010")
        await pilot.pause()
        finder = app.main.query_one(HostFinder)
        hits = finder.query_one(OptionList)
        assert hits.option_count == 10  # gpu-0100..gpu-0109
        assert _text(finder.query_one("#finder-count", Label)).startswith("10 of 256 hosts ·")
        await pilot.press("down", "down", "up", "down")
        assert hits.highlighted == 2
        await pilot.press("escape")
        await pilot.pause()
        assert not finder.is_open and app.focused is table  # nothing picked, the table has its keys again
        await pilot.press("h", *"g0255")  # no name contains it: names holding its letters in order
        await pilot.pause()
        assert hits.option_count >= 1 and "gpu-0255" in str(hits.get_option_at_index(0).prompt)
        await pilot.press("enter")
        await pilot.pause(0.2)
        assert page.host == "gpu-0255"


async def test_a_plan_shared_by_254_hosts_is_shown_once_with_their_names_compressed(tmp_path: Path) -> None:
    app = _app(tmp_path)
    async with app.run_test(size=(120, 40)) as pilot:
        page = await _fleet(pilot, app, "network")
        assert _text(page.query_one("#plan-summary", Static)).startswith("3 distinct plan(s) on 256/256 hosts")
        groups = page.query_one("#plan-groups", VirtualTable)
        assert [(row[0], row[1]) for row in groups.rows] == [
            ("gpu-0001..gpu-0004, gpu-0006..gpu-0008 (+247 more)", "254"),
            ("gpu-0005", "1"),  # its netplan names the host: a different file, so a plan of its own
            ("gpu-0009", "1"),
        ]
        body = _text(page.query_one("#plan-body", Static))
        assert body.startswith("same plan on 254 hosts: gpu-0001..gpu-0004, gpu-0006..gpu-0008, gpu-0010..gpu-0256")
        groups.focus()
        await pilot.press("down")
        await pilot.pause()
        assert _text(page.query_one("#plan-body", Static)).startswith("gpu-0005")


async def test_checks_filtered_to_failures_of_one_check_across_the_fleet(tmp_path: Path) -> None:
    app = _app(tmp_path)
    async with app.run_test(size=(120, 40)) as pilot:
        await _fleet(pilot, app, "network")
        await pilot.press("2")
        await pilot.pause()
        page = app.main.current()
        checks = page.query_one("#checks", VirtualTable)
        assert checks.row_count == 203 * 5 + 53 * 2
        await pilot.press("f")
        await pilot.pause()
        assert [(row[1], row[2]) for row in checks.rows] == [(h, "routes per rail") for h in NETWORK_FAILED]
        assert _text(page.query_one(".filter-state", Label)) == "3/1121 checks (failed only)"


async def test_the_summary_says_which_stage_needs_attention_on_which_hosts_in_words(tmp_path: Path) -> None:
    app = _app(tmp_path)
    async with app.run_test(size=(160, 45)) as pilot:
        await _fleet(pilot, app, "summary")
        assert _text(app.main.current().query_one("#sum-verdict", Static)) == (
            "✘ discovery: 2 hosts need attention (gpu-0008, gpu-0101) · network: 3 hosts need attention "
            "(gpu-0201..gpu-0203)"
        )
