"""Results of a validation run: per-rail bandwidth, latency, all-pairs matrix, lint, counters, NCCL, verdict."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

from wizard.engine.step import CheckItem
from wizard.validate.fleet_model import FleetSummary

Status = Literal["pass", "fail", "warn", "skip"]
PASS_RATIO = 0.9  # a rail passes at >= 90 % of its discovered line rate (roce-correctness.md items 22, 23)
WARN_RATIO = 0.75  # amber between this and the pass mark: slow, but not a dead or mis-cabled port
LATENCY_ALARM_US = 5.0  # typical ib_write_lat above this on back-to-back 25GbE points at a problem (items 58, 59)


def share_band(share: float | None) -> str:
    """pass / warn / fail by the share of line rate (the heat map's colours, terminal and HTML); none: no rate."""
    if share is None:
        return "none"
    return "pass" if share >= PASS_RATIO else "warn" if share >= WARN_RATIO else "fail"


class _Model(BaseModel):
    model_config = ConfigDict(extra="forbid")


class RailEnd(_Model):
    """One side of a rail test: host, port and what perftest is told to use."""

    host: str
    netdev: str
    device: str
    gid_index: int | None = None
    ipv4: str | None = None
    network: str | None = None  # the rail subnet of that address, e.g. 192.168.11.0/24
    speed_gbps: float | None = None
    ib: bool = False  # an InfiniBand port: addressed by LID, no GID index, no traffic class
    ib_sl: int | None = None  # the service level on InfiniBand (fabric.ib_sl)
    leaf: str | None = None  # the switch LLDP sees on the port (its leaf on a switched fabric)
    leaf_port: str | None = None  # that switch's port (LLDP port id)


class RailResult(_Model):
    """One ib_write_bw run over one rail between two hosts."""

    rail: int
    server: RailEnd
    client: RailEnd
    mode: Literal["alone", "together", "cross"] = "alone"
    peer_rail: int | None = None  # mode "cross": the server's rail (the client's is ``rail``), through the spine
    gbps: float | None = None  # average Gb/s at the largest message size
    expected_gbps: float | None = None  # the discovered line rate of the slower end
    mtu: int | None = None  # the path MTU perftest reports
    sweep: list[tuple[int, float]] = Field(default_factory=list)  # (message bytes, average Gb/s)
    status: Status = "skip"
    cause: str | None = None
    fix: str | None = None
    errors: list[str] = Field(default_factory=list)
    command: str = ""
    output: str = ""  # the client's perftest output as printed (for the ticket)
    note: str | None = None  # how gbps was worked out when perftest's own figure could not be used

    @property
    def ratio(self) -> float | None:
        if self.gbps is None or not self.expected_gbps:
            return None
        return self.gbps / self.expected_gbps

    @property
    def label(self) -> str:
        return f"rail {self.rail}: {self.client.host} {self.client.netdev} -> {self.server.host} {self.server.netdev}"


class LatencyResult(_Model):
    rail: int
    server: RailEnd
    client: RailEnd
    typical_us: float | None = None
    p99_us: float | None = None
    p99_9_us: float | None = None
    threshold_us: float = LATENCY_ALARM_US
    status: Status = "skip"
    cause: str | None = None
    errors: list[str] = Field(default_factory=list)


class Aggregate(_Model):
    """All rails of a host pair at once."""

    hosts: tuple[str, str]
    gbps: float
    expected_gbps: float
    status: Status


class PairCell(_Model):
    """One cell of the all-pairs matrix (the pair's rails run together)."""

    a: str
    b: str
    round: int
    gbps: float | None
    expected_gbps: float | None
    rails: list[float | None] = Field(default_factory=list)
    status: Status = "skip"
    hint: str | None = None  # the host/port/cable to look at when the cell is slow


class IncastFlow(_Model):
    """One sender of an incast round: its rail port, the switch port LLDP found for it, what it got and saw."""

    sender: RailEnd
    switch_port: str | None = None  # "leaf-r2 swp5" from the LLDP neighbour of the sender's port
    gbps: float | None = None
    deltas: dict[str, int] = Field(default_factory=dict)  # counters that moved on the sender's port
    errors: list[str] = Field(default_factory=list)


class IncastRound(_Model):
    """N senders into one receiver port on one rail at once: the link is oversubscribed N:1 on purpose, so PFC
    must pause the senders (no drops, no out-of-sequence) and, with ECN on, the receiver must send CNPs."""

    rail: int
    round: int
    receiver: RailEnd
    sender_rail: int | None = None  # --cross-rail --incast: the senders' rail (through the spine); None: the same
    seconds: float | None = None  # how long the senders ran
    receiver_switch_port: str | None = None
    senders: list[IncastFlow] = Field(default_factory=list)
    line_gbps: float | None = None  # the receiver port's line rate: the most the senders can get together
    total_gbps: float | None = None
    receiver_deltas: dict[str, int] = Field(default_factory=dict)
    pauses: int = 0  # pause frames on the lossless priority the senders received
    drops: int = 0  # discards, out-of-sequence and sequence errors on every port of the round
    cnps: int = 0  # CNPs the receiver sent (np_cnp_sent)
    status: Status = "skip"
    cause: str | None = None  # names host, port and switch port
    fix: str | None = None


class CheckResult(CheckItem):
    """A lint item or a doctor check: a stage's CheckItem that also names the host it was seen on."""

    host: str | None = None


class CounterDelta(_Model):
    """How a port's PFC/ECN counters moved during the tests."""

    host: str
    netdev: str
    deltas: dict[str, int] = Field(default_factory=dict)
    status: Status = "pass"
    note: str = ""


class NcclResult(_Model):
    status: Status = "skip"
    reason: str = ""
    transport: str | None = None
    busbw: list[tuple[int, float]] = Field(default_factory=list)  # (bytes, GB/s out-of-place bus bandwidth)
    peak_busbw: float | None = None


class Report(_Model):
    """Everything a validation run found; saved with the state and exported as JSON and HTML."""

    simulated: bool
    cluster: str
    hosts: list[str]
    started: str
    finished: str | None = None
    tclass: int = 0
    lint: list[CheckResult] = Field(default_factory=list)
    rails: list[RailResult] = Field(default_factory=list)
    together: list[RailResult] = Field(default_factory=list)
    aggregate: list[Aggregate] = Field(default_factory=list)
    latency: list[LatencyResult] = Field(default_factory=list)
    matrix: list[PairCell] = Field(default_factory=list)
    counters: list[CounterDelta] = Field(default_factory=list)
    cross_rail: list[RailResult] = Field(default_factory=list)  # bwtest --cross-rail: rail i -> rail j
    incast: list[IncastRound] = Field(default_factory=list)  # bwtest --incast
    nccl: NcclResult = Field(default_factory=NcclResult)
    verdict: Literal["pass", "fail"] = "fail"
    causes: list[str] = Field(default_factory=list)  # most likely first, each naming host/port and the fix
    pass_ratio: float = PASS_RATIO  # the pass mark this run judged by (the answers' validation.pass_ratio)
    fleet: FleetSummary | None = None  # bwtest --quick / --budget / --suspects / --compare
