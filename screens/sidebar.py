"""The sidebar checklist: every page of the flow with its status; selecting one jumps there."""

from __future__ import annotations

from textual.message import Message
from textual.widgets import Label, ListItem, ListView

from screens.progress import STATUS_MARK, Progress
from screens.vtable import update_if_changed


class Sidebar(ListView):
    """Hosts, each stage with a status mark, and the summary."""

    class Jump(Message):
        """The operator picked a page."""

        def __init__(self, page: str) -> None:
            self.page = page
            super().__init__()

    def __init__(self, pages: list[tuple[str, str]], **kwargs: object) -> None:
        self.pages = pages
        super().__init__(*[self._item(pid, title) for pid, title in pages], **kwargs)  # type: ignore[arg-type]

    @staticmethod
    def _item(page: str, title: str) -> ListItem:
        return ListItem(Label(f"  {title}", id=f"mark-{page}"), id=f"nav-{page}")

    def show(self, progress: Progress, titles: dict[str, str], hosts_ok: bool | None = None) -> None:
        """Refresh every stage's mark from the progress (hosts: the last connection test, if any)."""
        hosts = self.query_one("#mark-hosts", Label)
        hosts_status = "pending" if hosts_ok is None else "done" if hosts_ok else "failed"
        update_if_changed(hosts, f"{STATUS_MARK[hosts_status] if hosts_ok is not None else ' '} Hosts")
        if not hosts.has_class(f"st-{hosts_status}"):
            hosts.set_classes(f"st-{hosts_status}")
        verified = bool(progress.hosts) and all(progress.stage_status(s) == "done" for s in progress.stages)
        update_if_changed(self.query_one("#mark-summary", Label), f"{STATUS_MARK['done'] if verified else ' '} Summary")
        for stage in progress.stages:
            status = progress.stage_status(stage)
            label = self.query_one(f"#mark-{stage}", Label)
            update_if_changed(label, f"{STATUS_MARK.get(status, ' ')} {titles[stage]}")
            if not label.has_class(f"st-{status}"):
                label.set_classes(f"st-{status}")

    def select_page(self, page: str) -> None:
        ids = [pid for pid, _ in self.pages]
        if page in ids:
            self.index = ids.index(page)

    def on_list_view_selected(self, event: ListView.Selected) -> None:
        event.stop()
        if event.item.id:
            self.post_message(self.Jump(event.item.id.removeprefix("nav-")))
