"""The plan of one stage: per host, the changes in order with their impact, why, commands and file diffs."""

from __future__ import annotations

from typing import Any

from rich.text import Text
from textual.app import ComposeResult
from textual.containers import Vertical, VerticalScroll
from textual.widgets import Static

from screens.fleet import HostFilter, PlanGroup, PlanGrouper, compress_hosts
from screens.vtable import VirtualTable, update_if_changed
from wizard.engine.step import HostPlan

IMPACT_STYLE = {"safe": "green", "disruptive": "bold yellow", "reboot": "bold red"}


def _diff_lines(diff: str) -> Text:
    text = Text()
    for line in diff.splitlines():
        style = "green" if line.startswith("+") else "red" if line.startswith("-") else "dim"
        if line.startswith(("+++", "---", "@@")):
            style = "cyan"
        text.append(f"      {line}\n", style=style)
    return text


def render_plan(host: str, plan: HostPlan | dict[str, Any] | None) -> Text:
    """One host's plan as text (``host`` may name several: "same plan on 998 hosts: ..."); a dict is the runner's
    plan event (no diffs), a HostPlan has everything."""
    text = Text()
    text.append(f"{host}", style="bold")
    if plan is None:
        text.append("  not planned yet (press p)\n", style="dim")
        return text
    doc = plan.model_dump(mode="json") if isinstance(plan, HostPlan) else plan
    changes = doc.get("changes", [])
    impact = plan.impact.value if isinstance(plan, HostPlan) else doc.get("impact", "safe")
    if doc.get("blockers"):
        text.append("  REFUSED\n", style="bold red")
        for blocker in doc["blockers"]:
            text.append(f"  ✘ {blocker}\n", style="red")
    elif not changes:
        text.append("  nothing to change", style="green")
        text.append(f" ({doc['noop_reason']})\n" if doc.get("noop_reason") else "\n", style="dim")
    else:
        text.append(f"  {len(changes)} change(s), ", style="")
        text.append(f"{impact}\n", style=IMPACT_STYLE.get(impact, ""))
    for note in doc.get("notes", []):
        text.append(f"  note: {note}\n", style="italic")
    for number, change in enumerate(changes, 1):
        impact_word = change["impact"]
        text.append(f"  {number}. ")
        text.append(f"[{impact_word}]", style=IMPACT_STYLE.get(impact_word, ""))
        text.append(f" {change['summary']}\n")
        if change.get("why"):
            text.append(f"     why: {change['why']}\n", style="dim")
        for file in change.get("files", []):
            if isinstance(file, str):
                text.append(f"     write {file}\n", style="cyan")
                continue
            text.append(f"     write {file['path']} (mode {file['mode']:04o})\n", style="cyan")
        if isinstance(plan, HostPlan):
            for file in plan.changes[number - 1].files:
                text.append_text(_diff_lines(file.diff()))
        commands = change.get("commands", [])
        for command in commands:
            line = command if isinstance(command, str) else _shell(command)
            text.append(f"     $ {line}\n", style="magenta")
        if change.get("reboot") is True:
            text.append("     $ sudo systemctl reboot\n", style="bold red")
    return text


def _shell(command: dict[str, Any]) -> str:
    from wizard.engine.step import RemoteCommand

    return RemoteCommand.model_validate(command).shell()


class PlanView(Vertical):
    """One stage's plans, each distinct plan once with the hosts that have it: a table of the distinct plans (when
    there is more than one) and the highlighted one in full below. Only that one plan is rendered, so 1,000 hosts
    with 1,000 different plans cost what one costs."""

    DEFAULT_CSS = """
    PlanView #plan-summary { height: auto; max-height: 2; color: $text-muted; }
    PlanView #plan-groups { height: auto; max-height: 7; }
    PlanView #plan-detail { height: 1fr; }
    """

    def __init__(self, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.grouper = PlanGrouper()
        self.groups: list[PlanGroup] = []
        self._shown: tuple[Any, ...] | None = None

    def compose(self) -> ComposeResult:
        yield Static("", id="plan-summary")
        yield VirtualTable("hosts", "count", "plan", max_width=60, id="plan-groups")
        with VerticalScroll(id="plan-detail"):
            yield Static("", id="plan-body")

    def show(
        self,
        hosts: list[str],
        plans: dict[str, HostPlan | dict[str, Any] | None],
        flt: HostFilter | None = None,
        failed: set[str] | None = None,
    ) -> None:
        flt = flt or HostFilter()
        failed = failed or set()
        groups = self.grouper.group(hosts, plans)
        shown: list[PlanGroup] = []
        for group in groups:
            matching = [h for h in group.hosts if flt.matches(h.lower(), h in failed)]
            if matching:
                shown.append(PlanGroup(group.plan, matching))
        self.groups = shown
        planned = sum(len(g.hosts) for g in groups if g.plan is not None)
        distinct = sum(1 for g in groups if g.plan is not None)
        summary = self.query_one("#plan-summary", Static)
        if not hosts:
            update_if_changed(summary, "no hosts yet: add them on the Hosts page")
        elif not planned:
            update_if_changed(summary, f"no plan yet for {len(hosts)} host(s): press p")
        else:
            update_if_changed(
                summary,
                f"{distinct} distinct plan(s) on {planned}/{len(hosts)} hosts"
                + (f" · {flt.describe(sum(len(g.hosts) for g in shown), len(hosts))}" if flt.active else "")
                + (" · ↑↓ picks one" if len(shown) > 1 else ""),
            )
        table = self.query_one("#plan-groups", VirtualTable)
        table.display = len(shown) > 1
        rows = [(compress_hosts(g.hosts, limit=46), str(len(g.hosts)), _plan_word(g.plan)) for g in shown]
        table.set_rows(rows, [self.grouper.key(g.plan) or "" for g in shown])
        self._detail(table.cursor_row)

    def _detail(self, index: int) -> None:
        if not self.groups:
            update_if_changed(self.query_one("#plan-body", Static), Text("no host matches the filter", style="dim"))
            self._shown = None
            return
        group = self.groups[max(0, min(index, len(self.groups) - 1))]
        shown = (id(group.plan), tuple(group.hosts))
        if shown == self._shown:
            return
        self._shown = shown
        hosts = group.hosts
        label = hosts[0] if len(hosts) == 1 else f"same plan on {len(hosts)} hosts: {compress_hosts(hosts, limit=300)}"
        update_if_changed(self.query_one("#plan-body", Static), render_plan(label, group.plan))

    def on_virtual_table_row_highlighted(self, event: VirtualTable.RowHighlighted) -> None:
        event.stop()
        self._detail(event.cursor_row)


def _plan_word(plan: HostPlan | dict[str, Any] | None) -> str:
    if plan is None:
        return "not planned yet"
    if isinstance(plan, HostPlan):  # no model_dump: 1,000 distinct plans are listed on every redraw
        blockers, impact = plan.blockers, plan.impact.value
        summaries = [c.summary for c in plan.changes]
    else:
        blockers, impact = plan.get("blockers") or [], plan.get("impact", "safe")
        summaries = [c["summary"] for c in plan.get("changes", [])]
    if blockers:
        return "REFUSED: " + blockers[0]
    if not summaries:
        return "nothing to change"
    return f"{len(summaries)} change(s), {impact}: " + "; ".join(summaries)
