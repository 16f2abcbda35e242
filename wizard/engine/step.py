"""What a stage is: read-only probes, a pure plan of exact changes, and pure verification checks."""

from __future__ import annotations

import difflib
import shlex
from abc import ABC, abstractmethod
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from enum import StrEnum
from typing import TYPE_CHECKING, Any, ClassVar, Literal

from pydantic import BaseModel, ConfigDict, Field

if TYPE_CHECKING:
    from wizard.answers.model import Answers, HostEntry
    from wizard.engine.predict import Prediction
    from wizard.executors.base import Executor


class Impact(StrEnum):
    """How much a change can hurt: safe runs unattended; the others need --yes or a confirmation."""

    SAFE = "safe"
    DISRUPTIVE = "disruptive"
    REBOOT = "reboot"


_IMPACT_ORDER = {Impact.SAFE: 0, Impact.DISRUPTIVE: 1, Impact.REBOOT: 2}


class _Model(BaseModel):
    model_config = ConfigDict(extra="forbid")


class RemoteCommand(_Model):
    """One command, built as an argv (quoted with shlex when sent), never as a shell pipeline."""

    argv: list[str]
    sudo: bool = True
    input: str | None = None
    timeout_s: float | None = None
    ok_exit_codes: list[int] = Field(default_factory=lambda: [0])

    def shell(self) -> str:
        """The command line as an operator would type it (used by plan output and commands.sh)."""
        line = shlex.join(self.argv)
        if self.input is not None:
            line = f"printf '%s' {shlex.quote(self.input)} | {('sudo ' if self.sudo else '')}{line}"
            return line
        return f"sudo {line}" if self.sudo else line


class FileWrite(_Model):
    """A file the stage installs, with the content it had before (None: new file)."""

    path: str
    content: str
    mode: int = 0o644
    owner: str = "root"
    group: str = "root"
    before: str | None = None
    secret: bool = False
    """The content is a credential (e.g. a Ray token): never printed, exported or stored with the plan."""

    def diff(self) -> str:
        """Unified diff from the current content to the new one (a secret's content is never shown)."""
        if self.secret:
            return f"(content of {self.path} not shown: it holds a secret)\n"
        before = (self.before or "").splitlines(keepends=True)
        after = self.content.splitlines(keepends=True)
        label = "/dev/null" if self.before is None else f"a{self.path}"
        return "".join(difflib.unified_diff(before, after, label, f"b{self.path}"))


class Change(_Model):
    """One reviewable unit of work on one host: files first, then commands, then an optional reboot."""

    summary: str
    why: str = ""
    impact: Impact = Impact.SAFE
    files: list[FileWrite] = Field(default_factory=list)
    commands: list[RemoteCommand] = Field(default_factory=list)
    reboot: bool = False
    revert: list[RemoteCommand] = Field(default_factory=list)
    """What the host runs after restoring the old files when the wizard cannot reach it again (default for
    netplan files: ``netplan apply``)."""
    creates_files: list[str] = Field(default_factory=list)
    """Files a command creates (not a FileWrite: a key generated on the host): recorded before the change runs, so
    rollback removes them and a later rewrite does not back up the wizard's own file as if it were the original."""
    creates_links: list[str] = Field(default_factory=list)
    """Virtual interfaces (bonds) this change brings into being. netplan apply leaves a device it no longer
    configures in place, holding its members, so a revert or a rollback deletes these first."""


class HostPlan(_Model):
    """The ordered changes a stage would make on one host, or why it makes none."""

    stage: str
    host: str
    changes: list[Change] = Field(default_factory=list)
    noop_reason: str | None = None
    notes: list[str] = Field(default_factory=list)
    blockers: list[str] = Field(default_factory=list)
    predicted: list[str] = Field(default_factory=list)
    """Predicted values this plan was made from (only `roce-wizard plan`, ahead of earlier stages): a real run
    re-reads the host after each stage and plans from what is there."""
    predicted_checks: list[str] = Field(default_factory=list)
    """Shell lines that stop an exported script when one of those predictions did not come true."""

    @property
    def impact(self) -> Impact:
        worst = Impact.SAFE
        for change in self.changes:
            if _IMPACT_ORDER[change.impact] > _IMPACT_ORDER[worst]:
                worst = change.impact
        return worst

    @property
    def empty(self) -> bool:
        return not self.changes

    def payload(self) -> dict[str, Any]:
        """The plan as an event: what changes, where and how risky; file contents stay out."""
        return {
            "impact": self.impact.value,
            "noop_reason": self.noop_reason,
            "notes": self.notes,
            "blockers": self.blockers,
            "changes": [
                {
                    "summary": c.summary,
                    "impact": c.impact.value,
                    "why": c.why,
                    "files": [f.path for f in c.files],
                    "commands": [cmd.shell() for cmd in c.commands] + (["systemctl reboot"] if c.reboot else []),
                }
                for c in self.changes
            ],
        }


CheckStatus = Literal["pass", "fail", "warn", "skip"]


class CheckItem(_Model):
    """One verification item with the evidence behind its verdict and, when it fails, the fix."""

    id: str
    title: str
    status: CheckStatus
    evidence: str = ""
    fix: str | None = None


@dataclass(slots=True)
class ClusterView:
    """Everything a pure plan or check may look at: the answers and the latest facts of every host."""

    answers: Answers
    facts: Mapping[str, dict[str, Any]] = field(default_factory=dict)  # a run's are StoredFacts, read on use

    def host(self, name: str) -> HostEntry:
        for entry in self.answers.hosts:
            if entry.name == name:
                return entry
        raise KeyError(name)

    def stage_facts(self, host: str, stage: str) -> dict[str, Any] | None:
        return self.facts.get(host, {}).get(stage)


@dataclass(slots=True)
class ProbeContext:
    """What a probe gets: the host, its executor and the answers."""

    host: HostEntry
    executor: Executor
    answers: Answers
    facts: dict[str, Any]


class Step(ABC):
    """A stage of the bring-up. Probes read; ``plan`` and ``checks`` are pure functions of facts."""

    id: ClassVar[str]
    title: ClassVar[str]
    summary: ClassVar[str]
    dependent_probes: ClassVar[dict[str, str]] = {}
    """Read-only commands ``prefetch`` cannot declare, as fnmatch patterns of the command line -> what they depend
    on (e.g. ``"ethtool *": "per netdev that lspci found in this read"``): the host log names them with that reason
    when they cost a round trip of their own."""

    @abstractmethod
    async def probe(self, ctx: ProbeContext) -> dict[str, Any]:
        """Read the host's current state for this stage (no changes). Returns JSON-able facts."""

    @abstractmethod
    def plan(self, view: ClusterView, host: str) -> HostPlan:
        """The exact changes needed on ``host`` to reach the answers' state, from facts only."""

    @abstractmethod
    def checks(self, view: ClusterView, host: str) -> list[CheckItem]:
        """Verification items for ``host`` from fresh facts; a 'fail' item fails the stage on that host."""

    def predict(self, view: ClusterView, host: str, plan: HostPlan) -> Prediction | None:
        """How ``plan``, once applied, changes the facts later stages plan from (None: it changes none of them).

        Used only to plan every stage ahead on hosts where the earlier stages have not run yet.
        """
        return None

    def prefetch(self, ctx: ProbeContext) -> list[tuple[Sequence[str] | str, bool]]:
        """Read-only commands (argv, sudo) the probe will run whatever the host shows: the engine fetches them in
        one exec before ``probe`` runs (wizard/engine/prefetch.py). Commands that depend on an earlier probe's output
        need not be listed: the engine learns them from the first read and batches them from then on."""
        return []

    def describe(self, view: ClusterView, host: str) -> list[str]:
        """A few lines for people about what this stage found on ``host`` (shown after its checks)."""
        return []

    def apply_waves(self, view: ClusterView, hosts: list[str]) -> list[list[str]]:
        """The hosts to change, in waves: a later wave is probed and planned again once the earlier ones are done
        (a host that copies what another installed, e.g. a lock file). Default: one wave, every host at once."""
        return [hosts]

    async def boot_causes(self, executor: Executor, facts: dict[str, Any]) -> list[str]:
        """Read-only, after a reboot that lost this stage's state: what on the host's boot path kept its configuration
        from being applied (a service that did not start, a file that took precedence). Empty by default: the
        stage's plan then says what it would re-apply (wizard/engine/reboot_check.py)."""
        return []

    def cluster_checks(self, view: ClusterView) -> dict[str, list[CheckItem]]:
        """Checks that compare hosts with each other (differences, pairing); empty by default."""
        return {}

    async def cluster_probe(self, view: ClusterView, executors: dict[str, Executor]) -> dict[str, dict[str, Any]]:
        """Read-only tests that need several hosts at once (a ping across a rail, an NCCL run).

        Runs after every host's probe, right before the checks, on the hosts still in the run. Returns extra
        facts per host; the runner stores them under ``facts[host][stage]["cluster"]``.
        """
        return {}
