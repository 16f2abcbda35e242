"""One stage's page: answers form, plan, checklist, live logs and help, with Apply / Verify / Skip / Plan."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from pydantic import BaseModel
from textual.app import ComposeResult
from textual.containers import Horizontal, Vertical
from textual.widgets import Button, Label, Markdown, Static, TabbedContent, TabPane

from screens.checklist import Checklist
from screens.form import SectionForm
from screens.help_text import help_markdown
from screens.log_panel import LogPanel
from screens.plan_view import PlanView
from screens.progress import STATUS_MARK

if TYPE_CHECKING:
    from screens.app import WizardApp

TABS = ("plan", "checks", "logs", "answers", "help")


class StagePage(Vertical):
    """Everything about one stage; the app pushes new data in through ``refresh_view``."""

    def __init__(self, stage: str, title: str, summary: str, model: type[BaseModel] | None, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.stage = stage
        self.title = title
        self.summary = summary
        self.model = model

    @property
    def wizard(self) -> WizardApp:
        return self.app  # type: ignore[return-value]

    def compose(self) -> ComposeResult:
        yield Label("", id="stage-title", classes="page-title")
        yield Static(self.summary, classes="page-summary")
        with TabbedContent(id="stage-tabs"):
            with TabPane("Plan 1", id="tab-plan"):
                yield PlanView(id="plan")
            with TabPane("Checks 2", id="tab-checks"):
                yield Checklist(id="checklist")
            with TabPane("Logs 3", id="tab-logs"):
                yield LogPanel(self.wizard.buffers, self.wizard.engine.host_names, id="logs")
            with TabPane("Answers 4", id="tab-answers"):
                if self.model is not None:
                    yield SectionForm(self.stage, self.model, self.wizard.engine.data().get(self.stage, {}), id="form")
                else:
                    yield Static("This stage has no answers: it only reads.", classes="dim")
            with TabPane("Help 5", id="tab-help"):
                yield Markdown(help_markdown(self.stage), id="help")
        with Horizontal(classes="actions"):
            yield Button("Apply (a)", id="apply", variant="primary", compact=True)
            yield Button("Verify (v)", id="verify", compact=True)
            yield Button("Plan (p)", id="plan-btn", compact=True)
            yield Button("Skip (s)", id="skip", compact=True)
            yield Button("Rollback (u)", id="rollback", compact=True)

    def on_mount(self) -> None:
        self.refresh_view()

    def refresh_view(self) -> None:
        """Redraw title, plan and checklist from the app's progress and plans."""
        progress = self.wizard.progress
        status = progress.stage_status(self.stage)
        counts = ", ".join(f"{n} {word}" for word, n in sorted(progress.counts(self.stage).items()))
        title = self.query_one("#stage-title", Label)
        title.update(f"{STATUS_MARK.get(status, '')} {self.title}  ·  {status}  ({counts})")
        title.set_classes(f"page-title st-{status}")
        plans: dict[str, Any] = {}
        for host in progress.hosts:
            plans[host] = self.wizard.plans.get(self.stage, {}).get(host) or progress.cell(self.stage, host).plan
        self.query_one(PlanView).show(progress.hosts, plans)
        self.query_one(Checklist).show(progress, [self.stage])

    def show_tab(self, name: str) -> None:
        for tabs in self.query(TabbedContent):
            tabs.active = f"tab-{name}"

    def on_button_pressed(self, event: Button.Pressed) -> None:
        event.stop()
        buttons = {"apply": "apply", "verify": "verify", "plan-btn": "plan", "skip": "skip", "rollback": "rollback"}
        action = buttons.get(event.button.id or "")
        if action:
            self.wizard.start_action(action, self.stage)

    def on_section_form_changed(self, event: SectionForm.Changed) -> None:
        event.stop()
        if event.data is not None:
            problem = self.wizard.update_section(self.stage, event.data)
            if problem:
                event.form.show_problem(problem)
