"""The app's handle on the engine: answers being edited, the state directory, targets (or the simulated lab)."""

from __future__ import annotations

import contextlib
from pathlib import Path
from typing import Any

import yaml
from pydantic import ValidationError

from steps import all_steps
from wizard.answers.model import Answers, parse_answers
from wizard.answers.profiles import demo_answers
from wizard.answers.write import dump_answers
from wizard.engine.events import EventBus
from wizard.engine.session import (
    Session,
    check_faults,
    demo_state_dir,
    open_session,
    production_targets,
    simulated_targets,
)
from wizard.engine.state import StateStore
from wizard.executors.ssh import SshTarget
from wizard.paths import default_state_dir, example_answers

ANSWERS_FILE = "answers.yaml"


class EngineLink:
    """Owns what outlives one action: the answers, the state directory, and (demo) the running lab."""

    def __init__(
        self,
        state_dir: Path | None,
        *,
        demo: bool,
        faults: list[str] | None = None,
        reset: bool = False,
        profile: str | None = None,
    ) -> None:
        self.demo = demo
        self.profile = profile  # the simulated cluster's shape (--profile rails-16); None: the reference pair
        self.faults = list(faults or [])
        self.password: str | None = None
        self.bus = EventBus()
        self.steps = all_steps()
        self.answers = self._initial_answers(state_dir)
        if demo:
            check_faults(self.answers, self.faults)
            self.state_dir = demo_state_dir(self.answers, state_dir, reset=reset)
        else:
            self.state_dir = state_dir or default_state_dir(self.answers.cluster.name)
        self._stack: contextlib.AsyncExitStack | None = None
        self._targets: dict[str, SshTarget] | None = None
        self._lab_hosts: list[str] = []

    # -- answers ------------------------------------------------------------------------------------------
    def _initial_answers(self, state_dir: Path | None) -> Answers:
        """Answers saved with earlier progress, else the demo profile's answers (the reference example)."""
        if state_dir is not None and (state_dir / ANSWERS_FILE).exists():
            return parse_answers((state_dir / ANSWERS_FILE).read_text(encoding="utf-8"), str(state_dir / ANSWERS_FILE))
        path = demo_answers(self.profile) if self.demo else example_answers()
        return parse_answers(path.read_text(encoding="utf-8"), str(path))

    @property
    def store(self) -> StateStore:
        """A fresh view of the state directory (runs write it through their own store)."""
        return StateStore(self.state_dir)

    @property
    def answers_path(self) -> Path:
        return self.state_dir / ANSWERS_FILE

    def data(self) -> dict[str, Any]:
        return self.answers.model_dump(mode="json")

    def replace(self, data: dict[str, Any]) -> Answers:
        """Validate new answers exactly as headless mode would; raises AnswersError naming each bad key."""
        try:
            self.answers = Answers.model_validate(data)
        except ValidationError:
            # The answers-file path words every problem with its key, as headless mode shows it.
            self.answers = parse_answers(yaml.safe_dump(data, sort_keys=False), "answers")
        return self.answers

    def save_answers(self, path: Path | None = None) -> Path:
        """Write the answers file headless mode replays (by default next to the saved progress)."""
        target = path or self.answers_path
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(dump_answers(self.answers), encoding="utf-8")
        return target

    @property
    def host_names(self) -> list[str]:
        return [h.name for h in self.answers.hosts]

    # -- sessions -----------------------------------------------------------------------------------------
    async def targets(self) -> dict[str, SshTarget]:
        """Where each host is reached; the demo (re)starts its lab when the host list changed."""
        if not self.demo:
            return production_targets(self.answers, self.password)
        if self._targets is None or self._lab_hosts != self.host_names:
            await self.close()
            check_faults(self.answers, self.faults)
            stack = contextlib.AsyncExitStack()
            self._targets = await stack.enter_async_context(
                simulated_targets(self.answers, self.faults, self.password, self.state_dir, self.profile or "reference")
            )
            self._stack = stack
            self._lab_hosts = self.host_names
        return self._targets

    async def open(self) -> Session:
        """A fresh runner and connections for one action (the lab, if any, stays up)."""
        targets = await self.targets()
        self.save_answers()
        return open_session(
            self.answers, self.steps, targets, self.state_dir, self.bus, simulated=self.demo, password=self.password
        )

    async def close(self) -> None:
        stack, self._stack, self._targets = self._stack, None, None
        if stack is not None:
            await stack.aclose()
