"""The Textual app. This version shows the stages and how to run them headless; the full wizard follows."""

from __future__ import annotations

from pathlib import Path

from textual.app import App, ComposeResult
from textual.binding import Binding
from textual.widgets import Footer, Header, Static

from wizard.cli import STAGE_IDS

_TEXT = """[b]roce-wizard[/b]: from bare GPU servers to a verified RoCE fabric.

The interactive screens are not in this version yet. Everything runs headless today:

  roce-wizard --demo                          the whole flow against the [b]simulated[/b] cluster
  roce-wizard --answers answers.yaml          your cluster (see assets/answers.example.yaml)
  roce-wizard plan --answers answers.yaml     what would change, per host, without changing it
  roce-wizard status                          saved progress per stage and host

Stages, in order: {stages}
"""


class PlaceholderApp(App[int]):
    TITLE = "roce-wizard"
    BINDINGS = [Binding("q", "quit", "Quit")]

    def compose(self) -> ComposeResult:
        yield Header()
        yield Static(_TEXT.format(stages=", ".join(STAGE_IDS)), id="intro")
        yield Footer()


def run_app(
    state_dir: Path | None = None, *, demo: bool = False, faults: list[str] | None = None, reset: bool = False
) -> int:
    PlaceholderApp().run()
    return 0
