"""The main screen: sidebar checklist on the left, one page at a time on the right, keys in the footer."""

from __future__ import annotations

import importlib.util
from typing import TYPE_CHECKING, Any

from textual.actions import SkipAction
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal
from textual.screen import Screen
from textual.widget import Widget
from textual.widgets import ContentSwitcher, Header, Input, Label

from screens.discovery_page import DiscoveryPage
from screens.filter_bar import FilterBar
from screens.footer import KeyFooter
from screens.host_finder import HostFinder
from screens.hosts_page import HostsPage
from screens.log_panel import LogPanel
from screens.sidebar import Sidebar
from screens.stage_page import TABS, StagePage
from screens.summary_page import SummaryPage

if TYPE_CHECKING:
    from screens.app import WizardApp

STAGE_ACTIONS = ("apply", "verify", "plan", "skip")


class MainScreen(Screen[None]):
    """Navigation (next/back/jump) and the keys that act on the page shown."""

    DEFAULT_CSS = "MainScreen { layers: default finder; }"

    BINDINGS = [
        Binding("n", "go(1)", "Next"),
        Binding("b", "go(-1)", "Back"),
        Binding("t", "test", "Test"),
        Binding("a", "stage('apply')", "Apply"),
        Binding("v", "stage('verify')", "Verify"),
        Binding("p", "stage('plan')", "Plan"),
        Binding("s", "stage('skip')", "Skip"),
        Binding("u", "stage('rollback')", "Roll back"),
        Binding("L", "full_log", "Full log", show=False),
        Binding("B", "bandwidth", "Bandwidth test"),
        Binding("R", "report", "Run report", show=False),
        Binding("question_mark,f1", "help", "Help"),
        Binding("right_square_bracket", "host(1)", "Next host", show=False),
        Binding("left_square_bracket", "host(-1)", "Previous host", show=False),
        Binding("escape", "leave_field", "Leave field", show=False),
        Binding("h", "find_host", "Find host"),
        Binding("f", "failed_only", "Failed only", show=False),
        # Priority bindings run as the key arrives, before the keys queued behind it are sent on to the focused
        # widget: "/leaf" typed fast (or pasted) lands in the filter, not "a" on the Apply binding. "/" typed in a
        # text field is a "/" (action_filter skips); ctrl+f reaches the filter from anywhere, a field included.
        Binding("slash", "filter(True)", "Filter", show=False, priority=True),
        Binding("ctrl+f", "filter", "Filter", show=False, priority=True),
        Binding("g", "group", "Group by leaf", show=False),
        *[Binding(str(i + 1), f"tab('{name}')", name.title(), show=False) for i, name in enumerate(TABS)],
    ]

    def __init__(self, page: str = "hosts", **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.page = page

    @property
    def wizard(self) -> WizardApp:
        return self.app  # type: ignore[return-value]

    def compose(self) -> ComposeResult:
        wizard = self.wizard
        yield Header()
        if wizard.engine.demo:
            yield Label("SIMULATED CLUSTER · hosts run on 127.0.0.1 · nothing real is changed", classes="sim-banner")
        with Horizontal():
            yield Sidebar(wizard.pages(), id="sidebar")
            with ContentSwitcher(id="pages"):
                yield self._make_page(self.page)
        yield KeyFooter()
        yield HostFinder(id="finder")

    def _make_page(self, page: str) -> Widget:
        """Pages are built on first visit: building all of them up front took seconds on a busy machine."""
        if page == "hosts":
            return HostsPage(id="hosts")
        if page == "discovery":
            return DiscoveryPage(id="discovery")
        if page == "summary":
            return SummaryPage(id="summary")
        step = next(s for s in self.wizard.engine.steps if s.id == page)
        return StagePage(step.id, step.title, step.summary, self.wizard.section_model(step.id), id=step.id)

    def on_mount(self) -> None:
        self.show_page(self.page)
        self.refresh_all()

    # -- pages ---------------------------------------------------------------------------------------------
    @property
    def page_ids(self) -> list[str]:
        return [pid for pid, _ in self.wizard.pages()]

    def show_page(self, page: str) -> None:
        self.page = page
        switcher = self.query_one(ContentSwitcher)
        if not switcher.query_children(f"#{page}"):
            switcher.mount(self._make_page(page))
        switcher.current = page
        self.query_one(Sidebar).select_page(page)
        self.refresh_page()
        self.refresh_bindings()

    def current(self) -> Any:
        return self.query_one(f"#{self.page}")

    def refresh_page(self) -> None:
        pages = self.query_one(ContentSwitcher).query_children(f"#{self.page}")
        if pages and hasattr(pages.first(), "refresh_view") and pages.first().is_mounted:
            pages.first().refresh_view()

    def refresh_all(self) -> None:
        """Sidebar marks and the page shown (other pages redraw when they are opened)."""
        reports = self.wizard.conn_reports
        hosts_ok = all(r.ok for r in reports.values()) if reports else None
        self.query_one(Sidebar).show(self.wizard.progress, self.wizard.titles(), hosts_ok)
        self.refresh_page()

    def ingest(self, batch: dict[str, list[str]]) -> None:
        page = self.current()
        if isinstance(page, StagePage):
            for panel in page.query(LogPanel):  # none until the page has been composed
                panel.ingest(batch)

    def set_hosts(self, hosts: list[str]) -> None:
        self.wizard.buffers.set_host_count(len(hosts))
        self.wizard.facts_changed()
        for panel in self.query(LogPanel):
            panel.set_hosts(hosts)
        self.refresh_all()

    def on_sidebar_jump(self, event: Sidebar.Jump) -> None:
        self.show_page(event.page)

    # -- actions -------------------------------------------------------------------------------------------
    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        if action == "stage":
            if self.page == "discovery":
                return parameters[0] in ("apply", "verify")
            return self.page in self.wizard.progress.stages
        if action == "test":
            return self.page == "hosts"
        if action == "bandwidth":
            return self.page == "summary" and importlib.util.find_spec("screens.bwtest") is not None
        if action in ("tab",):
            return isinstance(self.current(), StagePage)
        if action in ("failed_only", "filter"):
            return bool(self.current().query(FilterBar))
        if action == "group":
            return isinstance(self.current(), HostsPage | DiscoveryPage | SummaryPage)
        return True

    def action_go(self, delta: int) -> None:
        if self.page == "hosts" and delta > 0 and not self.wizard.conn_reports:
            self.notify("tip: test the connections first (t); stages stop on hosts that do not answer", timeout=4)
        ids = self.page_ids
        index = max(0, min(len(ids) - 1, ids.index(self.page) + delta))
        self.show_page(ids[index])

    def action_stage(self, action: str) -> None:
        self.wizard.start_action(action, self.page)
        if action in ("apply", "verify") and isinstance(self.current(), StagePage):
            self.current().show_tab("logs")
        elif action == "plan" and isinstance(self.current(), StagePage):
            self.current().show_tab("plan")

    def action_test(self) -> None:
        self.wizard.start_action("test", None)

    def action_tab(self, name: str) -> None:
        self.show_tab(name)

    def show_tab(self, name: str) -> None:
        page = self.current()
        if isinstance(page, StagePage):
            page.show_tab(name)

    def action_host(self, delta: int) -> None:
        page = self.current()
        if isinstance(page, StagePage):
            page.query_one(LogPanel).step_host(delta)
        elif isinstance(page, DiscoveryPage):
            page.step_host(delta)

    def _filter_bar(self) -> FilterBar | None:
        bars = self.current().query(FilterBar)
        return bars.first() if bars else None

    def action_failed_only(self) -> None:
        bar = self._filter_bar()
        if bar is not None:
            bar.toggle_failed()

    def action_filter(self, typed_in_fields: bool = False) -> None:
        bar = self._filter_bar()
        if bar is None or (typed_in_fields and isinstance(self.app.focused, Input)):
            raise SkipAction()  # the key goes on to the focused widget: "/" in a path, or a page with no filter
        bar.focus_text()

    def action_group(self) -> None:
        bar = self._filter_bar()
        if bar is None:
            return
        if bar.toggle_grouped() and not any(s.leaf for s in self.wizard.facts_index().summaries.values()):
            self.notify("no leaf known yet: discovery reads each rail's from its LLDP neighbour", timeout=4)

    def action_find_host(self) -> None:
        """Search the hosts by name (substring or fuzzy) and show the chosen one on this page."""
        self.query_one(HostFinder).open()

    def pick_host(self, host: str) -> None:
        page = self.current()
        if hasattr(page, "show_host"):
            page.show_host(host)

    def action_full_log(self) -> None:
        page = self.current()
        host = None
        if isinstance(page, StagePage):
            host = page.query_one(LogPanel).host
        elif isinstance(page, DiscoveryPage):
            host = page.host
        self.wizard.open_full_log(host)

    def action_bandwidth(self) -> None:
        self.wizard.open_bandwidth_test()

    async def action_report(self) -> None:
        """The whole-run HTML report (every stage, check, timing and the last bandwidth test) next to the state."""
        from screens.report_action import report_action

        await report_action(self.app, self.wizard.engine.state_dir)

    def action_help(self) -> None:
        self.wizard.open_help(self.page)

    def action_leave_field(self) -> None:
        self.query_one(Sidebar).focus()
