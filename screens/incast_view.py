"""The incast result on the bandwidth page: one row per N-to-1 round, and the detail of the highlighted one."""

from __future__ import annotations

from rich.markup import escape
from textual.app import ComposeResult
from textual.containers import Vertical
from textual.widgets import DataTable, Static

from wizard.validate.model import IncastRound

STATUS = {"pass": "[green]PASS[/]", "fail": "[red]FAIL[/]", "warn": "[yellow]WARN[/]", "skip": "[dim]SKIP[/]"}
# What an operator reads first comes first: 80 columns show status .. CNPs, the rest scrolls.
COLUMNS = ("status", "rail", "rnd", "receiver", "Gb/s of line", "pauses", "drops", "CNPs", "senders", "cause")


def senders_text(x: IncastRound) -> str:
    """How many senders, and which when few (the detail lists them all)."""
    names = [f.sender.host for f in x.senders]
    if len(names) <= 2:
        return f"{len(names)}: {', '.join(names)}" if names else "0"
    return f"{len(names)}: {names[0]}..{names[-1]}"


def row(x: IncastRound) -> tuple[str, ...]:
    total = "-" if x.total_gbps is None else f"{x.total_gbps:.0f}"
    line = "-" if not x.line_gbps else f"{x.line_gbps:.0f}"
    share = f"{x.total_gbps / x.line_gbps:.0%}" if x.total_gbps is not None and x.line_gbps else "-"
    receiver = f"{x.receiver.host} {x.receiver.netdev}"
    return (STATUS.get(x.status, x.status), str(x.rail), str(x.round), receiver, f"{total}/{line} {share}",
            str(x.pauses), str(x.drops), str(x.cnps), senders_text(x), escape(x.cause or ""))  # fmt: skip


def detail(x: IncastRound) -> str:
    """The round in words: receiver and its switch port, cause and fix, each sender with its switch port."""
    port = f" on {x.receiver_switch_port}" if x.receiver_switch_port else ""
    head = f"rail {x.rail} round {x.round}: {len(x.senders)} senders -> {x.receiver.host} {x.receiver.netdev}{port}"
    lines = [escape(head)]
    if x.cause:
        lines.append(f"[b]cause:[/b] {escape(x.cause)}")
    if x.fix:
        lines.append(f"[b]fix:[/b] {escape(x.fix)}")
    flows = []
    for f in x.senders:
        rate = "-" if f.gbps is None else f"{f.gbps:.1f}"
        moved = ", ".join(f"{k} +{v}" for k, v in sorted(f.deltas.items()) if v and "bytes" not in k)
        sw = f" ({f.switch_port})" if f.switch_port else ""
        flows.append(f"{f.sender.host} {f.sender.netdev}{sw} {rate} Gb/s" + (f" [{moved}]" if moved else ""))
    if flows:
        lines.append("[b]senders:[/b] " + escape("; ".join(flows)))
    return "\n".join(lines)


class IncastView(Vertical):
    """Rounds as they arrive; the summary line counts them, the detail follows the cursor."""

    DEFAULT_CSS = """
    IncastView #incast-summary { height: 1; }
    IncastView DataTable { height: 1fr; min-height: 4; }
    IncastView #incast-detail { height: auto; max-height: 8; padding: 0 1; background: $boost; }
    """

    def __init__(self) -> None:
        super().__init__(id="bw-incast-view")
        self.rounds: list[IncastRound] = []

    def compose(self) -> ComposeResult:
        yield Static("incast: no round yet (bwtest --incast: N senders into one receiver port per rail)",
                     id="incast-summary")  # fmt: skip
        yield DataTable(id="bw-incast", zebra_stripes=True, cursor_type="row")
        yield Static("", id="incast-detail")

    def on_mount(self) -> None:
        self.query_one(DataTable).add_columns(*COLUMNS)

    def add(self, x: IncastRound) -> None:
        self.rounds.append(x)
        table = self.query_one(DataTable)
        table.add_row(*row(x))
        failed = [r for r in self.rounds if r.status == "fail"]
        summary = f"incast: {len(self.rounds)} rounds, {len(self.rounds) - len(failed)} pass, {len(failed)} fail"
        self.query_one("#incast-summary", Static).update(summary)
        # Show the first failure (what the operator wants to read) until the cursor picks another row.
        shown = failed[0] if failed else self.rounds[-1]
        self.query_one("#incast-detail", Static).update(detail(shown))

    def on_data_table_row_highlighted(self, event: DataTable.RowHighlighted) -> None:
        if 0 <= event.cursor_row < len(self.rounds) and self.query_one(DataTable).has_focus:
            self.query_one("#incast-detail", Static).update(detail(self.rounds[event.cursor_row]))

    def clear(self) -> None:
        self.rounds.clear()
        self.query_one(DataTable).clear()
        self.query_one("#incast-detail", Static).update("")
