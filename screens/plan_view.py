"""The plan of one stage: per host, the changes in order with their impact, why, commands and file diffs."""

from __future__ import annotations

from typing import Any

from rich.text import Text
from textual.containers import VerticalScroll
from textual.widgets import Static

from wizard.step import HostPlan

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
    """One host's plan as text; a dict is the runner's plan event (no diffs), a HostPlan has everything."""
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
    from wizard.step import RemoteCommand

    return RemoteCommand.model_validate(command).shell()


class PlanView(VerticalScroll):
    """Every host's plan for one stage, one block per host."""

    def show(self, hosts: list[str], plans: dict[str, HostPlan | dict[str, Any] | None]) -> None:
        text = Text()
        for host in hosts:
            text.append_text(render_plan(host, plans.get(host)))
            text.append("\n")
        if not hosts:
            text.append("no hosts yet: add them on the Hosts page", style="dim")
        body = self.query("#plan-body")
        if body:
            body.first(Static).update(text)
        else:
            self.mount(Static(text, id="plan-body"))
