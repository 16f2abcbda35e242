"""One stage's page: answers form, plan, checklist, live logs and help, with Apply / Verify / Skip / Plan."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from pydantic import BaseModel
from textual.app import ComposeResult
from textual.containers import Horizontal, Vertical
from textual.widgets import Button, Label, Markdown, Static, TabbedContent, TabPane

from screens.checklist import Checklist
from screens.filter_bar import FilterBar
from screens.fleet import HostFilter, stage_progress_line
from screens.form import SectionForm
from screens.help_text import help_markdown
from screens.log_panel import LogPanel
from screens.plan_view import PlanView
from screens.progress import STATUS_MARK
from screens.vtable import update_if_changed

if TYPE_CHECKING:
    from screens.app import WizardApp

TABS = ("plan", "checks", "logs", "answers", "help")


TAB_TRIES = 20  # frames a tab key waits for the page's tabs (a page composes in one or two)


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
        yield FilterBar("/ filter: host, check, evidence · f failed", id="stage-filter")
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

    drawn = 0
    """How many times the shown tab was redrawn (the scale benchmark waits for it)."""

    @property
    def filter(self) -> HostFilter:
        return self.query_one(FilterBar).filter

    def _failed_hosts(self) -> set[str]:
        progress = self.wizard.progress
        return {h for h in progress.hosts if progress.cell(self.stage, h).status == "failed"}

    def refresh_view(self) -> None:
        """Redraw the title and the tab shown (the others are redrawn when they are opened)."""
        progress = self.wizard.progress
        status = progress.stage_status(self.stage)
        title = self.query_one("#stage-title", Label)
        line = stage_progress_line(progress, self.stage).split(": ", 1)[1]
        update_if_changed(title, f"{STATUS_MARK.get(status, '')} {self.title}  ·  {line}")
        if not title.has_class(f"st-{status}"):
            title.set_classes(f"page-title st-{status}")
        tab = self.query_one(TabbedContent).active
        flt = self.filter
        if tab == "tab-plan":
            plans: dict[str, Any] = {}
            stage_plans = self.wizard.plans.get(self.stage, {})
            for host in progress.hosts:
                plans[host] = stage_plans.get(host) or progress.cell(self.stage, host).plan
            view = self.query_one(PlanView)
            view.show(progress.hosts, plans, flt, self._failed_hosts())
            self.query_one(FilterBar).show_count(sum(len(g.hosts) for g in view.groups), len(progress.hosts))
        elif tab == "tab-checks":
            checklist = self.query_one(Checklist)
            checklist.show(progress, [self.stage], flt=flt)
            self.query_one(FilterBar).show_count(checklist.shown, checklist.total, "checks")
        elif tab == "tab-logs":
            failed = self._failed_hosts()
            hosts = [h for h in progress.hosts if flt.matches(h.lower(), h in failed)]
            self.query_one(LogPanel).set_hosts(hosts, keep_host=True)
            self.query_one(FilterBar).show_count(len(hosts), len(progress.hosts))
        self.drawn += 1

    def on_filter_bar_changed(self, event: FilterBar.Changed) -> None:
        event.stop()
        self.refresh_view()

    def on_tabbed_content_tab_activated(self, event: TabbedContent.TabActivated) -> None:
        event.stop()
        if self.is_mounted:
            self.refresh_view()

    def show_host(self, host: str) -> None:
        """The host picker chose ``host``: its log, and the plan and checks narrowed to it."""
        self.query_one(FilterBar).set_text(host)
        if self.query_one(TabbedContent).active not in ("tab-plan", "tab-checks", "tab-logs"):
            self.show_tab("logs")
        self.query_one(LogPanel).show_host(host)

    def show_tab(self, name: str, *, tries: int = 0) -> None:
        for tabs in self.query(TabbedContent):
            if not tabs.query(f"#--content-tab-tab-{name}"):
                # A tab key pressed right after the page change, before its tabs are composed: Textual refuses a
                # tab it cannot see yet (ValueError, which ended the wizard); try again after the next frames.
                if tries < TAB_TRIES:
                    self.call_after_refresh(self.show_tab, name, tries=tries + 1)
                continue
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
