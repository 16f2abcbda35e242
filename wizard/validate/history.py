"""Every bwtest run is kept in ``<state>/validation/bwtest-<finished>.json``: `bwtest --history` lists them and
`bwtest --compare [RUN]` names the host ports that got slower since an earlier one.

A port's rate in a run is the best of the flows through it (all rails at once with a peer): a port that got slower
is slower with every peer, so its best drops; a port whose one peer got slower still has its other flows (with a
median of two flows, a healthy neighbour of a slow port looked 25 % slower)."""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass
from pathlib import Path

from pydantic import BaseModel, ConfigDict, Field

from wizard.errors import UsageError
from wizard.validate.fleet_model import Regression
from wizard.validate.model import Report
from wizard.validate.store import results_dir

Port = tuple[str, int]


class _End(BaseModel):
    model_config = ConfigDict(extra="ignore")
    host: str


class _Flow(BaseModel):
    model_config = ConfigDict(extra="ignore")
    rail: int
    mode: str = "alone"
    gbps: float | None = None
    client: _End
    server: _End


class RunRates(BaseModel):
    """What ``--compare`` reads of an earlier run: each flow's two hosts, rail, mode and rate, nothing else. A
    1,024-host run's file is 22 MB, and read whole into a Report it was the largest thing a fleet run held (at its
    end, beside the run's own report)."""

    model_config = ConfigDict(extra="ignore")
    started: str
    finished: str | None = None
    rails: list[_Flow] = Field(default_factory=list)
    together: list[_Flow] = Field(default_factory=list)


def runs(state_dir: Path) -> list[Path]:
    """Saved runs, oldest first (the file names sort by when each run finished)."""
    folder = results_dir(state_dir)
    return sorted(folder.glob("bwtest-*.json")) if folder.is_dir() else []


def find_run(state_dir: Path, name: str | None, *, before: Path | None = None) -> Path:
    """The run ``name`` names (a file name, its stem, or a unique part of it such as a date); with no name the run
    before ``before`` (the run just saved), else the latest."""
    saved = runs(state_dir)
    if before is not None:
        saved = [p for p in saved if p.name != before.name]
    if not saved:
        raise UsageError(f"--compare: no earlier run in {results_dir(state_dir)} (each bwtest run is kept there)")
    if name is None:
        return saved[-1]
    hits = [p for p in saved if name in (p.name, p.stem) or name in p.stem]
    if len(hits) != 1:
        listing = ", ".join(p.stem for p in saved[-5:])
        what = "matches no" if not hits else f"matches {len(hits)}"
        raise UsageError(f"--compare {name!r} {what} saved run (latest: {listing}); `bwtest --history` lists them")
    return hits[0]


def load(path: Path) -> Report:
    return Report.model_validate_json(path.read_text(encoding="utf-8"))


def load_rates(path: Path) -> RunRates:
    # bytes, not text: the validator reads UTF-8 itself, and a decoded copy of a fleet run's file was megabytes more
    return RunRates.model_validate_json(path.read_bytes())


def port_rates(report: Report | RunRates) -> dict[Port, float]:
    """Best Gb/s of the same-rail flows through each host port (cross-rail runs left out: another path)."""
    rates: dict[Port, list[float]] = defaultdict(list)
    for x in report.together + [x for x in report.rails if x.mode == "alone"]:
        if x.gbps is None:
            continue
        rates[(x.client.host, x.rail)].append(x.gbps)
        rates[(x.server.host, x.rail)].append(x.gbps)
    return {port: max(values) for port, values in rates.items()}


@dataclass(frozen=True)
class EarlierRates:
    """What `--compare` keeps of the earlier run while the new one runs: each host port's best rate, and when."""

    rates: dict[Port, float]
    since: str  # the date the earlier run finished

    @classmethod
    def of(cls, run: Report | RunRates) -> EarlierRates:
        return cls(port_rates(run), (run.finished or run.started)[:10])


def earlier_rates(path: Path) -> EarlierRates:
    """Read before the new run starts, when the controller holds little: at 1,024 hosts the earlier run's flows are
    tens of MiB as objects, and read at the end they came on top of the new run's facts, results and report."""
    return EarlierRates.of(load_rates(path))


def compare(
    before: Report | RunRates | EarlierRates, after: Report, run: str, threshold_pct: float
) -> list[Regression]:
    """Host ports at least ``threshold_pct`` slower in ``after`` than in ``before``, worst first."""
    earlier = before if isinstance(before, EarlierRates) else EarlierRates.of(before)
    old, new, since = earlier.rates, port_rates(after), earlier.since
    found = []
    for port in sorted(old.keys() & new.keys()):
        was, now = old[port], new[port]
        if was <= 0:
            continue
        change = (now - was) / was * 100
        if change <= -threshold_pct:
            found.append(
                Regression(
                    host=port[0],
                    rail=port[1],
                    before_gbps=round(was, 1),
                    after_gbps=round(now, 1),
                    change_pct=round(change, 1),
                    since=since,
                    run=run,
                )  # fmt: skip
            )
    return sorted(found, key=lambda r: r.change_pct)


def describe(r: Regression) -> str:
    """`gpu-0412 rail 3: 351 -> 318 Gb/s (-9 %) since 2026-11-20`."""
    rates = f"{r.before_gbps:.0f} -> {r.after_gbps:.0f} Gb/s"
    return f"{r.host} rail {r.rail}: {rates} ({r.change_pct:.0f} %) since {r.since}"


def history_lines(state_dir: Path) -> list[str]:
    """One line per saved run: when, mode, verdict, hosts, suspects."""
    lines = []
    for path in runs(state_dir):
        try:
            r = load(path)
        except ValueError as exc:
            lines.append(f"{path.stem}  unreadable: {str(exc).splitlines()[0]}")
            continue
        mode = r.fleet.budget.mode if r.fleet else "all-pairs"
        suspects = f", {len(r.fleet.suspects)} suspect(s)" if r.fleet and r.fleet.suspects else ""
        tag = " SIMULATED" if r.simulated else ""
        lines.append(f"{path.stem}  {mode:9} {r.verdict.upper():4} {len(r.hosts)} hosts{suspects}{tag}")
    return lines
