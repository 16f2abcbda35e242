"""The app's handle on the engine: answers being edited, the state directory, targets (or the simulated lab)."""

from __future__ import annotations

import contextlib
import re
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
from wizard.errors import AnswersError, WizardError
from wizard.executors.ssh import SshTarget
from wizard.paths import default_state_dir, default_state_root

ANSWERS_FILE = "answers.yaml"
NO_HOSTS = "add a host first (Hosts page), or import an inventory or an answers file (ctrl+p)"


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
        answers: Answers | None = None,
        switch_os: str | None = None,
        engine: str | None = None,
    ) -> None:
        """``answers``: the file ``roce-wizard tui --answers`` opened (it wins over saved ones); else the state
        directory's saved answers, else (a real cluster) the last ones used, else none: an empty bring-up."""
        self.demo = demo
        self.profile = profile  # the simulated cluster's shape (--profile rails-16); None: the reference pair
        self.switch_os = switch_os  # the NOS of the simulated switches (--switch-os); None: what the state holds
        self.faults = list(faults or [])
        self.worker_process = not demo if engine is None else engine == "process"
        """Host work runs in an engine process of its own (wizard/engine/worker.py) for real hosts. The demo keeps it
        on the engine thread beside its simulated hosts, which live in this process anyway (moving only the
        wizard's half out would leave the larger half in); ``engine`` chooses either for tests and benchmarks."""
        self.password: str | None = None
        self.bus = EventBus()
        self.steps = all_steps()
        self.unnamed = False
        """An empty bring-up: the cluster takes its name from its first host until a run uses the state directory."""
        self._state_dir: Path | None = None
        if answers is None and state_dir is None and not demo:
            state_dir = last_used_state_dir()
        self._answers = answers if answers is not None else self._initial_answers(state_dir)
        if demo:
            check_faults(self.answers, self.faults)
            self._state_dir = demo_state_dir(self.answers, state_dir, reset=reset)
        elif state_dir is not None or not self.unnamed:
            self._state_dir = state_dir or default_state_dir(self.answers.cluster.name)
        self._stack: contextlib.AsyncExitStack | None = None
        self._targets: dict[str, SshTarget] | None = None
        self._lab_hosts: list[str] = []

    # -- answers ------------------------------------------------------------------------------------------
    def _initial_answers(self, state_dir: Path | None) -> Answers:
        """Answers saved with earlier progress, else the demo profile's answers, else (a real cluster) no hosts: the
        example's hosts are somebody else's servers, never a default."""
        if state_dir is not None and (state_dir / ANSWERS_FILE).exists():
            return parse_answers((state_dir / ANSWERS_FILE).read_text(encoding="utf-8"), str(state_dir / ANSWERS_FILE))
        if self.demo:
            path = demo_answers(self.profile)
            return parse_answers(path.read_text(encoding="utf-8"), str(path))
        self.unnamed = True
        return empty_answers()

    @property
    def answers(self) -> Answers:
        return self._answers

    @answers.setter
    def answers(self, answers: Answers) -> None:
        """Answers imported whole (an answers file) bring their own cluster name."""
        self._answers, self.unnamed = answers, False

    @property
    def state_dir(self) -> Path:
        """Where progress, facts and logs go: the one given or chosen at start, else (an empty bring-up not run yet)
        the default directory of the cluster's name as it stands."""
        return self._state_dir or default_state_dir(self.answers.cluster.name)

    @property
    def state_dir_pending(self) -> bool:
        """An empty bring-up without --state-dir, not run yet: its directory waits for the cluster's name."""
        return self._state_dir is None

    @property
    def cluster_label(self) -> str:
        """The header's name for the cluster: 'new cluster' until an empty bring-up has a host to name it after."""
        return "new cluster" if self.unnamed and not self.answers.hosts else self.answers.cluster.name

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
        if self.unnamed and data.get("hosts"):
            # An empty bring-up is named after its first host (gpu-001 -> gpu) until a run pins the state directory.
            data = {**data, "cluster": {**(data.get("cluster") or {}), "name": cluster_name_for(data["hosts"][0])}}
        if not data.get("hosts"):
            raise AnswersError(["hosts: keep at least one host (add the new one before removing this one)"])
        try:
            self._answers = Answers.model_validate(data)
        except ValidationError:
            # The answers-file path words every problem with its key, as headless mode shows it.
            self._answers = parse_answers(yaml.safe_dump(data, sort_keys=False), "answers")
        return self._answers

    def save_answers(self, path: Path | None = None) -> Path:
        """Write the answers file headless mode replays (by default next to the saved progress)."""
        target = path or self.answers_path
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(dump_answers(self.answers), encoding="utf-8")
        return target

    @property
    def worker_log(self) -> Path:
        """Where the engine processes' own complaints go (their tracebacks, Python's warnings)."""
        return (default_state_root() if self.state_dir_pending else self.store.logs_dir) / "wizard-engine.log"

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
                simulated_targets(
                    self.answers,
                    self.faults,
                    self.password,
                    self.state_dir,
                    self.profile or "reference",
                    self.switch_os,
                )
            )
            self._stack = stack
            self._lab_hosts = self.host_names
        return self._targets

    async def prepare(self) -> dict[str, SshTarget]:
        """Before host work: hosts are there, the state directory is pinned, the answers are saved where the work
        reads them, and (the demo) the lab is up. Returns where each host is reached."""
        if not self.answers.hosts:
            raise WizardError(NO_HOSTS)
        self._state_dir, self.unnamed = self.state_dir, False  # its progress lives there from now on
        targets = await self.targets()
        self.save_answers()
        return targets

    async def open(self) -> Session:
        """A fresh runner and connections for one action (the lab, if any, stays up)."""
        targets = await self.prepare()
        return open_session(
            self.answers, self.steps, targets, self.state_dir, self.bus, simulated=self.demo, password=self.password
        )

    async def close(self) -> None:
        stack, self._stack, self._targets = self._stack, None, None
        if stack is not None:
            await stack.aclose()


def empty_answers() -> Answers:
    """Answers with no hosts and every section at its default: what a real bring-up starts from. Built without
    validation, which asks for at least one host; the first host added goes through ``replace`` and is validated."""
    return Answers.model_construct(version=1, hosts=[])


def cluster_name_for(host: dict[str, Any]) -> str:
    """A cluster name from its first host: the name without its number ('gpu-001' -> 'gpu', 'server1' -> 'server')."""
    name = str(host.get("name") or "")
    stem = re.sub(r"[-_.]*\d+$", "", name).rstrip("-_.")
    return stem or name or "cluster"


def last_used_state_dir() -> Path | None:
    """The real cluster's state directory whose answers were saved last (demo and moved-aside ones left out), so a
    wizard opened without --state-dir goes on where the operator left off; None when there is none."""
    root = default_state_root()
    found = []
    for path in root.glob(f"*/{ANSWERS_FILE}") if root.is_dir() else []:
        if path.parent.name.startswith("demo-") or ".old-" in path.parent.name:
            continue
        with contextlib.suppress(OSError):
            found.append((path.stat().st_mtime_ns, path.parent))
    return max(found)[1] if found else None
