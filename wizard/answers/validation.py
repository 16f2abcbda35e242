"""The ``validation:`` section: pass marks of `bwtest` and `verify`, each default with its source."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field

PASS_SOURCE = (
    "90 % of line rate: roce-correctness.md item 58 (each rail >= 90 % of its port), the mark NVIDIA's "
    "ngc_multinode_perf and k8s-launch-kit's ib_write_bw threshold gate on"
)
LATENCY_SOURCE = "5 us typical ib_write_lat: roce-correctness.md items 58-59 (back-to-back 25GbE is ~1.5-3 us)"


class ValidationSection(BaseModel):
    model_config = ConfigDict(extra="forbid")

    pass_ratio: float = Field(default=0.9, ge=0.5, le=1.0)
    """A rail passes at this share of its discovered line rate (default 0.9, see PASS_SOURCE)."""
    latency_alarm_us: float = Field(default=5.0, gt=0, le=1000)
    """Typical ib_write_lat above this many microseconds fails the rail (default 5)."""
    regression_pct: float = Field(default=5.0, gt=0, le=90)
    """`bwtest --compare`: a host port this many percent slower than in the earlier run is a regression (default 5;
    ib_write_bw repeats within 1-2 % on a healthy port)."""

    def pass_source(self) -> str:
        if self.pass_ratio == 0.9:
            return PASS_SOURCE
        return f"{self.pass_ratio:.0%} of line rate: the answers' validation.pass_ratio"

    def latency_source(self) -> str:
        return LATENCY_SOURCE if self.latency_alarm_us == 5.0 else "the answers' validation.latency_alarm_us"
