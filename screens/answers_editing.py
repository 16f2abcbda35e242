"""Editing the answers from the wizard: stage forms, hosts, the SSH key, import and save of the answers file."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

from screens.dialogs import AskPath
from screens.engine_link import NO_HOSTS
from wizard.answers.model import load_answers
from wizard.errors import AnswersError

if TYPE_CHECKING:
    from screens.app import WizardApp

    _Base = WizardApp
else:
    _Base = object


class AnswersEditing(_Base):
    """Mixed into the app: every change is validated as a whole answers file before it is kept."""

    def _replace(self, data: dict[str, Any]) -> str | None:
        try:
            self.engine.replace(data)
        except AnswersError as exc:
            return "; ".join(exc.problems)
        return None

    def update_section(self, stage: str, section: dict[str, Any]) -> str | None:
        data = self.engine.data()
        data[stage] = section
        problem = self._replace(data)
        if problem is None:
            self.plans.pop(stage, None)
        return problem

    def save_host(self, entry: dict[str, Any]) -> None:
        if not entry.get("name"):
            self.notify("a host needs a name", severity="error")
            return
        data = self.engine.data()
        hosts = [h for h in data["hosts"] if h["name"] != entry["name"]]
        index = next((i for i, h in enumerate(data["hosts"]) if h["name"] == entry["name"]), len(hosts))
        hosts.insert(index, entry)
        data["hosts"] = hosts
        self._hosts_changed(data, f"saved {entry['name']}")

    def remove_host(self, name: str) -> None:
        data = self.engine.data()
        data["hosts"] = [h for h in data["hosts"] if h["name"] != name]
        self._hosts_changed(data, f"removed {name}")

    def set_identity_file(self, path: str | None) -> None:
        data = self.engine.data()
        data["ssh"]["identity_file"] = path
        self._hosts_changed(data, "SSH key file set")

    def _hosts_changed(self, data: dict[str, Any], done: str) -> None:
        problem = self._replace(data)
        if problem:
            self.notify(problem, severity="error", timeout=10)
            return
        self.conn_reports = {}
        self._show_busy()  # the header names the cluster: a first host names a new one
        self.progress.set_hosts(self.engine.host_names)
        if self.main is not None:
            self.main.set_hosts(self.engine.host_names)
        self.notify(done)

    def action_import_answers(self) -> None:
        def chosen(path: Path | None) -> None:
            if path is None:
                return
            try:
                self.engine.answers = load_answers(path)
            except AnswersError as exc:
                self.notify("\n".join(exc.problems[:5]), title=f"cannot import {path}", severity="error", timeout=15)
                return
            self.conn_reports = {}
            self._show_busy()
            self._load_saved()
            self.notify(f"imported {path}")
            self.open_main()

        self.push_screen(AskPath("Import an answers file (hosts and every stage's answers)", "answers.yaml"), chosen)

    def action_save_answers(self) -> None:
        if not self.engine.host_names:  # an answers file needs a host: one without would not load again
            self.notify(NO_HOSTS, severity="warning")
            return

        def chosen(path: Path | None) -> None:
            if path is not None:
                saved = self.engine.save_answers(path)
                self.notify(f"saved {saved}; replay it with: roce-wizard --answers {saved}", timeout=10)

        self.push_screen(
            AskPath("Save the answers file (headless mode replays it)", str(self.engine.answers_path)), chosen
        )
