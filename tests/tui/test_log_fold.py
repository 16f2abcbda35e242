"""The log pane shows commands and how they ended; a command's bulky output folds into one line (issue 25)."""

from __future__ import annotations

from textual.app import App, ComposeResult
from textual.widgets import Log

from screens.log_buffer import HEAD, SLACK, LogBuffers, fold_line
from screens.log_panel import LogPanel


def ethtool_dump(buffers: LogBuffers, host: str, port: str, lines: int = 1600) -> None:
    """What the app adds for one `ethtool -S` read: the command, then every counter line indented."""
    buffers.add(host, f"$ sudo ethtool -S {port}")
    for i in range(lines):
        buffers.add(host, f"  rx_prio{i % 8}_bytes_{i}: {i * 7}")


def test_a_counter_dump_folds_after_its_first_lines_and_the_next_command_stays_in_view():
    buffers = LogBuffers()
    ethtool_dump(buffers, "h1", "ens1f0np0")
    buffers.add("h1", "$ ib_write_bw -d mlx5_0 -a")
    tail = buffers.tail("h1")
    assert tail[0] == "$ sudo ethtool -S ens1f0np0"
    assert tail[1 : 1 + HEAD] == [f"  rx_prio{i % 8}_bytes_{i}: {i * 7}" for i in range(HEAD)]
    assert tail[1 + HEAD] == "  … 1,594 more lines of output (L: full log)"
    assert tail[-1] == "$ ib_write_bw -d mlx5_0 -a"
    assert len(tail) == HEAD + 3
    assert buffers.ingested == 1602 and buffers.folded == 1600 - HEAD


def test_sixteen_ports_of_counters_leave_every_command_in_the_pane_not_26k_lines():
    buffers = LogBuffers(keep=2000)
    for port in range(16):
        ethtool_dump(buffers, "gpu-001", f"enp{port}s0np0", lines=1630)
    buffers.add("gpu-001", "$ ib_write_bw -a -d mlx5_0")
    tail = buffers.tail("gpu-001")
    commands = [line for line in tail if line.startswith("$ ")]
    assert len(commands) == 17, "every command is still in the bounded pane"
    assert sum(line == fold_line(1630 - HEAD) for line in tail) == 16
    assert len(tail) == 16 * (1 + HEAD + 1) + 1


def test_a_short_output_is_shown_whole_and_a_failure_line_ends_the_fold():
    buffers = LogBuffers()
    buffers.add("h1", "$ ip -br link")
    for i in range(HEAD + SLACK):
        buffers.add("h1", f"  line {i}")
    buffers.add("h1", "  = exit 1")
    assert buffers.tail("h1") == ["$ ip -br link", *[f"  line {i}" for i in range(HEAD + SLACK)], "  = exit 1"]
    buffers.add("h1", "$ cat /big")
    for i in range(HEAD + SLACK + 1):
        buffers.add("h1", f"  big {i}")
    buffers.add("h1", "  = exit 2")
    assert buffers.tail("h1")[-3:] == [f"  big {HEAD - 1}", fold_line(SLACK + 1), "  = exit 2"]


def test_the_fold_line_reaches_the_pane_one_drain_after_the_output_stopped_not_only_at_the_next_command():
    buffers = LogBuffers()
    ethtool_dump(buffers, "h1", "p0", lines=100)
    first = buffers.drain()["h1"]
    assert first[-1] == f"  rx_prio{(HEAD - 1) % 8}_bytes_{HEAD - 1}: {(HEAD - 1) * 7}", "still growing: no fold yet"
    assert buffers.tail("h1")[-1] == fold_line(100 - HEAD), "a host reloaded now shows the fold so far"
    assert buffers.drain() == {"h1": [fold_line(100 - HEAD)]}, "quiet since the last drain: the fold is shown"
    assert buffers.drain() == {}
    buffers.add("h1", "  late line")  # the same command goes on: folded again, counted afresh
    buffers.drain()
    assert buffers.drain() == {"h1": [fold_line(1)]}


def test_lines_that_are_not_command_output_are_never_folded():
    buffers = LogBuffers(keep=100)
    for i in range(500):
        buffers.add("h1", f"▶ [safe] change {i}")
    assert buffers.tail("h1")[-1] == "▶ [safe] change 499" and len(buffers.tail("h1")) == 100
    assert buffers.folded == 0


class PaneApp(App):
    def __init__(self, buffers: LogBuffers) -> None:
        super().__init__()
        self.buffers = buffers

    def compose(self) -> ComposeResult:
        yield LogPanel(self.buffers, ["h1", "h2"])


async def test_the_pane_shows_the_folded_tail_of_a_host_when_it_is_picked():
    buffers = LogBuffers()
    ethtool_dump(buffers, "h2", "ens1f0np0", lines=26_104 + HEAD)
    buffers.add("h2", "  = exit 1")
    async with PaneApp(buffers).run_test() as pilot:
        panel = pilot.app.query_one(LogPanel)
        panel.show_host("h2")
        await pilot.pause()
        shown = list(pilot.app.query_one(Log).lines)
        assert shown[0] == "$ sudo ethtool -S ens1f0np0"
        assert "  … 26,104 more lines of output (L: full log)" in shown
        assert shown[-1] == "  = exit 1" and len(shown) == HEAD + 3


async def test_a_pane_built_after_the_lines_came_shows_them():
    buffers = LogBuffers()
    buffers.add("h1", "$ ethtool -S ens1f0np0")
    buffers.add("h1", "  = exit 1")
    async with PaneApp(buffers).run_test() as pilot:
        await pilot.pause()
        assert list(pilot.app.query_one(Log).lines) == ["$ ethtool -S ens1f0np0", "  = exit 1"]
