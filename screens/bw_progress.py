"""Overall progress of a bandwidth test: tests done of the total the run announced, and an ETA from the test
times measured so far (a kind not measured yet is estimated: the run's own estimate, else a typical time).

Pure bookkeeping, no Textual: the page feeds it the validation's events and shows ``line()`` once a second.
"""

from __future__ import annotations

import time
from collections.abc import Callable

KINDS = ("alone", "together", "latency", "nccl")
NAMES = {"alone": "sweeps", "together": "pairs", "latency": "latency", "nccl": "NCCL"}
# Seconds per test before one of its kind has finished: a sweep of 23 sizes, a pair's timed run (per pair; a
# round runs its pairs at once, and the run's own estimate replaces this), one latency test, one NCCL run. From
# the simulated rails-16 run on a busy 2-core machine (sweeps 3.4 s, latency 0.5 s); replaced by the measured
# mean as tests finish.
TYPICAL_S = {"alone": 4.0, "together": 4.5, "latency": 1.0, "nccl": 10.0}
PHASE_KIND = {"rails": "alone", "together": "together", "latency": "latency", "nccl": "nccl"}


def duration(seconds: float) -> str:
    """45 s, 3 min 10 s, 1 h 05 min."""
    s = max(0, round(seconds))
    if s < 60:
        return f"{s} s"
    if s < 3600:
        return f"{s // 60} min {s % 60:02d} s" if s < 600 else f"{s // 60} min"
    return f"{s // 3600} h {s % 3600 // 60:02d} min"


class BwProgress:
    """Counts finished tests per kind and times each kind from when its phase began."""

    def __init__(self, clock: Callable[[], float] = time.monotonic) -> None:
        self.clock = clock
        self.total: dict[str, int] = {}
        self.done: dict[str, int] = dict.fromkeys(KINDS, 0)
        self.began: dict[str, float] = {}  # when each kind's phase started
        self.last: dict[str, float] = {}  # when its latest test finished
        self.typical = dict(TYPICAL_S)
        self.current: str | None = None
        self.started_at = clock()
        self.finished_at: float | None = None

    # -- events ---------------------------------------------------------------------------------------------------
    def plan(self, tests: dict[str, int], seconds: dict[str, float] | None = None) -> None:
        """The run's announced counts per kind (kinds that will not run are 0) and its own estimates of a phase's
        seconds, where it has one (the all-pairs rounds run their pairs side by side: per pair, far less than a
        pair alone)."""
        self.total = {k: int(tests.get(k, 0)) for k in KINDS}
        for kind, total_s in (seconds or {}).items():
            if kind in self.total:
                self.estimate_kind(kind, self.total[kind], total_s)

    def estimate_kind(self, kind: str, tests: int, seconds: float) -> None:
        if tests > 0 and seconds > 0:
            self.typical[kind] = seconds / tests

    def estimate(self, pairs: int, seconds: float) -> None:
        """The run's own estimate of the all-pairs phase: the per-pair time until a pair is measured."""
        self.estimate_kind("together", pairs, seconds)

    def phase(self, name: str) -> None:
        kind = PHASE_KIND.get(name)
        if kind is not None and kind not in self.began:
            self.began[kind] = self.clock()
            self.current = kind

    def finished(self, kind: str, count: int = 1) -> None:
        if kind not in self.done:
            return
        now = self.clock()
        self.began.setdefault(kind, now)
        self.current = kind
        self.done[kind] += count
        self.last[kind] = now

    def end(self) -> None:
        self.finished_at = self.clock()

    # -- figures ----------------------------------------------------------------------------------------------------
    @property
    def tests_done(self) -> int:
        return sum(self.done.values())

    @property
    def tests_total(self) -> int | None:
        return sum(self.total.values()) if self.total else None

    def per_test(self, kind: str) -> float:
        """Measured seconds per test of this kind (its phase's time over its tests), else the typical time. The
        time a first test has been running is no per-test figure: the all-pairs phase runs a round's pairs side
        by side, so multiplying it by the tests left would overstate the wait many times over."""
        done = self.done[kind]
        if kind in self.began and done:
            return (self.last[kind] - self.began[kind]) / done
        return self.typical[kind]

    def measured(self) -> bool:
        return any(self.done[k] and k in self.began for k in KINDS)

    def eta_s(self) -> float | None:
        """Seconds left, or None before the run said how many tests it has."""
        if not self.total:
            return None
        if self.finished_at is not None:
            return 0.0
        left = 0.0
        for kind in KINDS:
            remaining = max(0, self.total[kind] - self.done[kind])
            if not remaining:
                continue
            each = self.per_test(kind)
            left += remaining * each
            if kind == self.current and self.done[kind]:  # the test under way is partly done
                left -= min(each, self.clock() - self.last[kind])
        return max(0.0, left)

    def line(self, width: int = 12) -> str:
        """The progress line: a bar, tests done/total and by kind, elapsed and the ETA ("guess" until a test has
        been timed)."""
        now = self.finished_at if self.finished_at is not None else self.clock()
        elapsed = duration(now - self.started_at)
        total = self.tests_total
        if total is None:
            return f"tests: counted once the hosts are read · {elapsed}"
        done = min(self.tests_done, total)
        filled = round(width * done / total) if total else width
        bar = "█" * filled + "░" * (width - filled)
        kinds = " ".join(f"{NAMES[k]} {self.done[k]}/{self.total[k]}" for k in KINDS if self.total[k])
        eta = self.eta_s()
        if self.finished_at is not None:
            left = "finished"
        elif eta is None:
            left = ""
        else:
            left = f"about {duration(eta)} left" + ("" if self.measured() else " (a guess until a test is timed)")
        # What a narrow pane crops last comes first: the count, then the time left.
        return " · ".join(part for part in (f"{bar} {done}/{total} tests", left, elapsed, kinds) if part)
