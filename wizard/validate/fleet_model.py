"""What a fleet-sized validation run adds to its report: the budget it ran under, what it covered, the parts it
suspects (with their evidence) and the regressions against an earlier run."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

SuspectKind = Literal["everything", "host_port", "host", "leaf", "uplink", "pair"]


class _Model(BaseModel):
    model_config = ConfigDict(extra="forbid")


class Suspect(_Model):
    """A part most likely at fault, named the way an operator finds it: host and port, with the leaf and switch port
    LLDP gave; or a leaf, or a leaf's uplinks, or a whole host."""

    kind: SuspectKind
    part: str  # "gpu-0412 rail 3 (enp154s0np0, leaf-su13-r3 swp12)"
    host: str | None = None
    rail: int | None = None
    netdev: str | None = None
    leaf: str | None = None
    leaf_port: str | None = None
    evidence: list[str] = Field(default_factory=list)  # most telling first
    score: float = 0.0  # share of the tests through the part that were slow (1.0: every one)
    status: Literal["suspect", "confirmed", "cleared"] = "suspect"
    retest: list[str] = Field(default_factory=list)  # what `bwtest --suspects` measured on it


class Coverage(_Model):
    """What the run tested (all tests through a host port count) and what it did not."""

    pairs: int = 0
    hosts: int = 0
    hosts_total: int = 0
    ports: int = 0  # host rail ports tested at least once
    ports_total: int = 0
    leaves: int = 0  # leaves with at least one tested port
    leaves_total: int = 0
    cross_leaf: int = 0  # tests that went through the spine (two leaves)
    untested_hosts: list[str] = Field(default_factory=list)
    untested_leaves: list[str] = Field(default_factory=list)


class RoundRecord(_Model):
    """One round of disjoint tests in the schedule, run or left out."""

    kind: str  # same-leaf, cross-leaf, cross-rail, all-pairs, retest
    why: str  # what it can tell (shown while it runs and in the report)
    pairs: int
    seconds: float  # its estimated fabric time
    ran: bool = False


class Budget(_Model):
    """The schedule and the budget it ran under (fabric time: the hosts' clock, scaled back on a simulated lab)."""

    mode: Literal["quick", "all-pairs", "suspects"] = "all-pairs"
    budget_s: float | None = None
    used_s: float = 0.0
    rounds: list[RoundRecord] = Field(default_factory=list)
    stopped: str | None = None  # why the run stopped before its last round


class Regression(_Model):
    """A host port slower than in an earlier run."""

    host: str
    rail: int
    before_gbps: float
    after_gbps: float
    change_pct: float
    since: str  # when the earlier run finished (ISO date)
    run: str  # the earlier run's file name


class Thresholds(_Model):
    """Pass marks the run used, and where each comes from."""

    pass_ratio: float
    pass_source: str
    latency_alarm_us: float
    latency_source: str
    regression_pct: float


class FleetSummary(_Model):
    budget: Budget = Field(default_factory=Budget)
    coverage: Coverage = Field(default_factory=Coverage)
    suspects: list[Suspect] = Field(default_factory=list)
    regressions: list[Regression] = Field(default_factory=list)
    compared_with: str | None = None
    thresholds: Thresholds | None = None
