"""The bandwidth page on 16 hosts x 8 rails: live heat map per rail, sweep charts with axes, incast and cross-rail."""

from __future__ import annotations

import asyncio

from rich.text import Text
from textual.app import App
from textual.widgets import DataTable, Static, TabbedContent

from screens.bwtest import BandwidthScreen
from screens.heatmap import STYLES, WAITING, HeatMap, grid, short_labels
from screens.incast_view import IncastView
from screens.sweepchart import SweepChart, chart
from tests.validate.synthetic16 import HOSTS, build


class Host(App):
    def __init__(self, screen) -> None:  # type: ignore[no-untyped-def]
        super().__init__()
        self._screen = screen

    def on_mount(self) -> None:
        self.push_screen(self._screen)


def cell_at(text: Text, row: str, col: int) -> tuple[str, str]:
    """The two characters of column ``col`` (0-based) in the heat map line of host ``row``, and their style."""
    lines = text.plain.split("\n")
    start = sum(len(line) + 1 for line in lines[: next(i for i, x in enumerate(lines) if x.startswith(row + " "))])
    at = start + len(row) + 1 + col * 3
    styles = [str(s.style) for s in text.spans if s.start <= at < s.end]
    return text.plain[at : at + 2], styles[-1] if styles else ""


def scripted(stop_before: str | None = None):  # type: ignore[no-untyped-def]
    """A run that emits the synthetic events, holding before the first event (or phase) named ``stop_before``
    until the gate is set."""
    report, events = build()
    gate = asyncio.Event()

    async def run(emit):  # type: ignore[no-untyped-def]
        for kind, data in events:
            if stop_before is not None and stop_before in (kind, data.get("name")) and not gate.is_set():
                await gate.wait()
            emit(kind, data)
        return report

    return run, gate


async def test_the_heat_map_fills_cell_by_cell_while_the_rounds_run():
    report, events = build()
    first_round = [d["cell"] for k, d in events if k == "cell" and d["cell"].round == 0]
    screen = BandwidthScreen(simulated=True, run=scripted(stop_before="incast")[0])
    async with Host(screen).run_test(size=(80, 24)) as pilot:
        await pilot.pause(0.1)
        heat = screen.query_one(HeatMap)
        assert len(heat.cells) == 120 and heat.pairs_total == 120
        assert screen.query_one("#bw-tabs", TabbedContent).active == "tab-matrix", "the page follows the run"
    # The same map a moment after round 0: measured pairs show their share, the others wait.
    partial = HeatMap(HOSTS)
    for c in first_round:
        partial.add(c)
    a, b = first_round[0].a, first_round[0].b
    assert cell_at(partial.render(), a, HOSTS.index(b))[0] == "98"
    other = next(h for h in HOSTS if h not in (a, b))
    assert cell_at(partial.render(), a, HOSTS.index(other)) == ("··", WAITING)
    assert "8/120 pairs" not in partial.title() and "8 pairs" in partial.title()


async def test_the_rail_keys_switch_the_map_and_a_slow_rail_shows_red_where_all_rails_look_green():
    run, _ = scripted()
    screen = BandwidthScreen(simulated=True, run=run)
    async with Host(screen).run_test(size=(80, 24)) as pilot:
        await pilot.pause(0.2)
        heat = screen.query_one(HeatMap)
        assert heat.rail is None
        all_rails = heat.render()
        # gpu-003 with 7 rails at ~98 % and rail 2 at 60 %: 93 % of the 3200 Gb/s all rails together, green.
        assert cell_at(all_rails, "gpu-003", HOSTS.index("gpu-004")) == ("93", STYLES["pass"])
        assert "all rails together" in all_rails.plain
        for _ in range(3):
            await pilot.press("right_square_bracket")
        assert heat.rail == 2
        rail2 = heat.render()
        assert "rail 2 of 8" in rail2.plain
        assert cell_at(rail2, "gpu-003", HOSTS.index("gpu-004")) == ("60", STYLES["fail"])
        assert cell_at(rail2, "gpu-005", HOSTS.index("gpu-004"))[1] == STYLES["pass"]
        assert "slowest gpu-003 <-> " in rail2.plain and rail2.plain.endswith(": 240/400 Gb/s (60%)")
        for _ in range(3):
            await pilot.press("right_square_bracket")
        assert heat.rail == 5
        assert cell_at(heat.render(), "gpu-009", HOSTS.index("gpu-010")) == ("xx", STYLES["none"])
        await pilot.press("left_square_bracket")
        assert heat.rail == 4
        await pilot.press("a")
        assert heat.rail is None
        assert cell_at(heat.render(), "gpu-009", HOSTS.index("gpu-010")) == ("86", STYLES["warn"])


async def test_sixteen_hosts_fit_an_80x28_terminal_with_labels_legend_and_diagonal():
    """The header, the simulated banner, the phase and progress lines and the tabs stand above the map (at 80x24 it
    scrolls)."""
    run, _ = scripted()
    screen = BandwidthScreen(simulated=True, run=run)
    async with Host(screen).run_test(size=(80, 28)) as pilot:
        await pilot.pause(0.2)
        await pilot.press("m")
        await pilot.pause()
        heat = screen.query_one(HeatMap)
        region = heat.region
        assert region.right <= 80 and region.bottom <= 27, f"the whole map is on screen: {region}"
        lines = heat.render().plain.split("\n")
        assert lines[2].split() == [f"{k:02d}" for k in range(1, 17)], "column labels: the hosts' numbers"
        assert [x.split()[0] for x in lines[3:19]] == HOSTS
        assert ">=90%" in lines[1] and "75%-90%" in lines[1] and "<75%" in lines[1] and "no result" in lines[1]
        assert cell_at(heat.render(), "gpu-007", 6)[0] == "╲╲"


def test_labels_and_cells_compress_for_64_hosts_to_fit_80_columns():
    hosts = [f"node{k:02d}" for k in range(64)]
    assert short_labels(hosts) == ([f"{k:02d}" for k in range(64)], False)
    assert short_labels(["alpha", "bravo-long"]) == (["1", "2"], True)
    text = grid(hosts, hosts, lambda a, b: (390.0, 400.0), diagonal=True)
    lines = text.plain.split("\n")
    assert max(len(x) for x in lines) <= 80
    assert lines[0].strip().startswith("0000000000111") and lines[1].strip().startswith("0123456789")
    assert lines[2] == "node00 ╲" + "█" * 63


async def test_sweep_charts_have_a_gbps_axis_to_line_rate_and_message_sizes_from_2_b_to_8_mib():
    run, _ = scripted(stop_before="cell")
    screen = BandwidthScreen(simulated=True, run=run)
    async with Host(screen).run_test(size=(80, 24)) as pilot:
        await pilot.pause(0.1)
        charts = list(screen.query(SweepChart))
        assert len(charts) == 8, "one chart per rail"
        rail2 = screen.query_one("#chart-alone-2", SweepChart)
        assert rail2.top == 400.0
        shown = rail2.render().plain.split("\n")
        assert "gpu-016" in shown[0] and "PASS" in shown[0]
        assert shown[1].startswith("Gb/s") and "pass >= 360" in shown[1]
        assert shown[2].startswith(" 400┤") and shown[4].startswith(" 200┤")
        assert shown[6].startswith("   0└")
        assert shown[7].split()[:2] == ["2", "B"] and "8 MiB" in shown[7] and "1 KiB" in shown[7]
        assert "message size" in shown[7]
    # Bars grow with the rate: the 8 MiB column is full at line rate, empty columns stay blank.
    plot = chart({2: 0.1, 1 << 23: 400.0}, top=400.0, unit="Gb/s").plain.split("\n")
    assert plot[1].rstrip().endswith("██") and plot[4][5:7] == "▁▁" and plot[1][7:9] == "  "


async def test_incast_rounds_are_listed_as_they_arrive_and_the_failing_round_names_its_switch_port():
    run, gate = scripted(stop_before="done")
    screen = BandwidthScreen(simulated=True, run=run)
    async with Host(screen).run_test(size=(80, 24)) as pilot:
        await pilot.pause(0.1)
        view = screen.query_one(IncastView)
        table = view.query_one(DataTable)
        assert table.row_count == 8
        row = [str(c) for c in table.get_row_at(5)]
        assert "FAIL" in row[0] and row[1] == "5" and row[3] == "gpu-006 enp192s0np0"
        assert row[4] == "250/400 62%" and row[5:8] == ["0", "5400", "0"]
        assert "PASS" in str(table.get_row_at(0)[0]) and str(table.get_row_at(0)[5]) == "18000"
        assert "8 rounds, 7 pass, 1 fail" in str(view.query_one("#incast-summary", Static).render())
        detail = str(view.query_one("#incast-detail", Static).render())
        assert "leaf-r5 swp6" in detail and "PFC off" in detail and "gpu-001 enp192s0np0 (leaf-r5 swp1)" in detail
        gate.set()
        await pilot.pause(0.1)
        assert screen.query_one("#bw-tabs", TabbedContent).active == "tab-results"
        verdict = str(screen.query_one("#bw-verdict", Static).render())
        assert "incast: 7/8 rounds pass" in verdict and "120 host pairs, 16 below" in verdict


async def test_cross_rail_results_show_as_a_rail_by_rail_grid_of_the_pair():
    run, _ = scripted()
    screen = BandwidthScreen(simulated=True, run=run)
    async with Host(screen).run_test(size=(160, 50)) as pilot:
        await pilot.pause(0.2)
        shown = screen.query_one("#bw-cross", Static).render()
        text = Text(str(shown)) if not isinstance(shown, Text) else shown
        lines = str(text).split("\n")
        assert any("cross-rail gpu-002 (rows: its rail) -> gpu-001 (columns: its rail)" in x for x in lines)
        assert [x for x in lines if x.startswith("rail 6")][0].split()[2:4] == ["96", "62"]
        assert [x for x in lines if x.startswith("rail 1")][0].split()[2:4] == ["95", "╲╲"]
        table = screen.query_one("#bw-table", DataTable)
        modes = [str(table.get_row_at(i)[1]) for i in range(table.row_count)]
        assert modes.count("cross") == 56 and str(table.get_row_at(modes.index("cross") + 43)[0]) == "6->1"
        assert not screen.query("#chart-cross-6"), "timed cross runs have no sweep to chart"
