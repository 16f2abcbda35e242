"""What the whole-run report holds: per host and stage the saved record, per stage totals, the validation."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

from wizard.engine.step import CheckItem
from wizard.report.serving import ServingSummary
from wizard.validate.model import Report

REPORT_KIND = "roce-wizard-run-report"
REPORT_VERSION = 1


class _Model(BaseModel):
    model_config = ConfigDict(extra="forbid")


class StageRow(_Model):
    """One stage on one host as the state directory recorded it."""

    stage: str
    status: str  # pending / running / done / failed / skipped / interrupted
    started_at: str | None = None
    finished_at: str | None = None
    duration_s: float | None = None
    reason: str = ""
    changes_applied: int = 0
    backups: int = 0
    checks: list[CheckItem] = Field(default_factory=list)

    @property
    def problems(self) -> list[CheckItem]:
        return [c for c in self.checks if c.status in ("fail", "warn")]


class HostSection(_Model):
    host: str
    stages: list[StageRow] = Field(default_factory=list)
    command_in_flight: str | None = None  # a run stopped while this ran
    updated_at: str | None = None
    log: str | None = None  # the log file's path (its content stays in the state directory)
    log_tail: list[str] = Field(default_factory=list)  # the last lines of a host whose stage failed


class StageTotal(_Model):
    """One stage across the fleet: how many hosts are in each status, and its wall time."""

    stage: str
    counts: dict[str, int] = Field(default_factory=dict)
    started_at: str | None = None
    finished_at: str | None = None
    wall_s: float | None = None
    checks: dict[str, int] = Field(default_factory=dict)  # pass / warn / fail / skip over every host


class RunReport(_Model):
    """The whole run, ready for HTML or JSON; every string already redacted."""

    kind: Literal["roce-wizard-run-report"] = REPORT_KIND
    version: int = REPORT_VERSION
    generated_at: str
    state_dir: str
    cluster: str
    simulated: bool
    run_started_at: str | None = None
    run_finished_at: str | None = None
    exit_code: int | None = None
    verdict: Literal["verified", "failed", "incomplete"]
    stages: list[StageTotal] = Field(default_factory=list)
    hosts: list[HostSection] = Field(default_factory=list)
    serving: ServingSummary | None = None  # the inference replicas and the entry point, when the stage served
    validation: Report | None = None  # the latest bwtest saved in <state>/validation/
    validation_note: str = ""  # why there is none, or where it came from
