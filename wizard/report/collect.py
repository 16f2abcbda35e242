"""Read a state directory (run, hosts, logs, the latest bandwidth test) into one redacted RunReport."""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path

from pydantic import ValidationError

from wizard.engine.stage_order import STAGE_IDS
from wizard.engine.state import HostRecord, StateStore, now
from wizard.errors import StateError
from wizard.report.model import HostSection, RunReport, StageRow, StageTotal
from wizard.report.redact import redact_tree, report_redactor
from wizard.report.serving import collect_serving

LOG_TAIL_LINES = 25
_TAIL_BYTES = 256 * 1024  # logs grow to megabytes; the tail of a failed host is all the report shows
_OUTPUT = re.compile(r"^\S+   \| ")  # a command's stdout line in a host log (HostLogs.line)


def parse_time(stamp: str | None) -> datetime | None:
    if not stamp:
        return None
    try:  # the state writes 2026-01-01T00:00:00Z, bwtest 2026-01-01T00:00:00+00:00
        moment = datetime.fromisoformat(stamp)
    except ValueError:
        return None
    return moment if moment.tzinfo else moment.replace(tzinfo=UTC)


def seconds_between(start: str | None, end: str | None) -> float | None:
    a, b = parse_time(start), parse_time(end)
    return (b - a).total_seconds() if a and b and b >= a else None


def collect(state_dir: Path, *, redact: Callable[[str], str] | None = None) -> RunReport:
    """The whole run saved in ``state_dir``; raises StateError when it holds no run."""
    store = StateStore(state_dir)
    run = store.load_run()
    if run is None:
        raise StateError(f"no saved run in {state_dir} (run.json missing); run roce-wizard with --state-dir first")
    names = run.hosts or store.host_names()
    records = {name: store.host(name) for name in names}
    stages = _stage_order(records.values())
    redact = redact or report_redactor()
    hosts = [_host_section(store, records[name], stages, redact) for name in names]
    totals = [_total(stage, hosts) for stage in stages]
    validation, note = _validation(state_dir, run.finished_at)
    report = RunReport(
        generated_at=now(),
        state_dir=str(state_dir),
        cluster=run.cluster,
        simulated=run.demo,
        run_started_at=run.started_at,
        run_finished_at=run.finished_at,
        exit_code=run.exit_code,
        verdict=_verdict(hosts),
        stages=totals,
        hosts=hosts,
        serving=collect_serving(store, names),
        validation=validation,
        validation_note=note,
    )
    # One pass over every string of the finished document: nothing can slip past a field forgotten here.
    return redact_tree(report, redact)


def _stage_order(records: object) -> list[str]:
    """The wizard's stages in their fixed order, then any other stage a record names (a newer wizard's)."""
    extra: list[str] = []
    for record in records:  # type: ignore[attr-defined]
        extra += [s for s in record.stages if s not in STAGE_IDS and s not in extra]
    return [*STAGE_IDS, *extra]


def _host_section(
    store: StateStore, record: HostRecord, stages: list[str], redact: Callable[[str], str]
) -> HostSection:
    rows = []
    for stage in stages:
        saved = record.stages.get(stage)
        if saved is None:
            rows.append(StageRow(stage=stage, status="pending", reason="not run"))
            continue
        rows.append(
            StageRow(
                stage=stage,
                status=saved.status,
                started_at=saved.started_at,
                finished_at=saved.finished_at,
                duration_s=seconds_between(saved.started_at, saved.finished_at),
                reason=saved.reason,
                changes_applied=saved.changes_applied,
                backups=len(saved.backups),
                checks=saved.checks,
            )
        )
    log = store.logs_dir / f"{record.host}.log"
    failed = any(r.status == "failed" for r in rows) or record.command_in_flight
    return HostSection(
        host=record.host,
        stages=rows,
        command_in_flight=record.command_in_flight,
        updated_at=record.updated_at,
        log=str(log) if log.exists() else None,
        # redacted as one text: a key or a token can span lines
        log_tail=redact("\n".join(tail(log, LOG_TAIL_LINES, commands_only=True))).splitlines() if failed else [],
    )


def tail(path: Path, lines: int, *, commands_only: bool = False) -> list[str]:
    """The last ``lines`` lines of a log (read from its end: a host's log can be megabytes); ``commands_only``:
    without the commands' standard output (counter dumps), leaving commands, exit codes, errors and messages."""
    try:
        with path.open("rb") as handle:
            size = handle.seek(0, 2)
            handle.seek(max(0, size - _TAIL_BYTES))
            text = handle.read().decode("utf-8", errors="replace")
    except OSError:
        return []
    kept = [line for line in text.splitlines() if not (commands_only and _OUTPUT.match(line))]
    return kept[-lines:]


def _total(stage: str, hosts: list[HostSection]) -> StageTotal:
    rows = [r for h in hosts for r in h.stages if r.stage == stage]
    starts = [r.started_at for r in rows if r.started_at]
    ends = [r.finished_at for r in rows if r.finished_at]
    first, last = (min(starts) if starts else None), (max(ends) if ends else None)
    checks = Counter(c.status for r in rows for c in r.checks)
    return StageTotal(
        stage=stage,
        counts=dict(Counter(r.status for r in rows)),
        started_at=first,
        finished_at=last,
        wall_s=seconds_between(first, last),
        checks={k: checks[k] for k in ("pass", "warn", "fail", "skip") if checks[k]},
    )


def _verdict(hosts: list[HostSection]) -> str:
    statuses = {r.status for h in hosts for r in h.stages}
    if "failed" in statuses or any(h.command_in_flight for h in hosts):
        return "failed"
    return "verified" if hosts and statuses <= {"done", "skipped"} else "incomplete"


def _validation(state_dir: Path, run_finished: str | None) -> tuple[object, str]:
    from wizard.validate import store

    path = store.results_dir(state_dir) / "latest.json"
    try:
        report = store.load_latest(state_dir)
    except (ValidationError, ValueError, OSError) as exc:
        return None, f"the saved bandwidth test {path} could not be read ({type(exc).__name__}); run bwtest again"
    if report is None:
        return None, (
            "no bandwidth test in this state directory: run `roce-wizard bwtest --state-dir "
            f"{state_dir}` (add --demo for the simulated cluster) and make this report again"
        )
    note = f"latest bandwidth test, {report.started} to {report.finished or 'interrupted'}"
    finished = parse_time(report.finished or report.started)
    if finished and (ran := parse_time(run_finished)) and finished < ran:
        note += f"; the wizard ran again afterwards (finished {run_finished}): the test may not show the hosts as now"
    return report, note
