"""The fleet part of a run in words: suspects first (with their evidence), regressions, coverage and the budget.
The CLI prints these lines; the TUI and the HTML report show the same facts."""

from __future__ import annotations

from wizard.validate.fleet_model import Budget, Coverage, FleetSummary, Suspect
from wizard.validate.history import describe

MAX_FLEET_CAUSES = 20  # a fleet's run leads with its suspects; the per-flow causes behind them stay in the saved JSON

KIND_WORDS = {
    "everything": "every test",
    "host_port": "host port",
    "host": "host",
    "leaf": "leaf",
    "uplink": "leaf uplinks",
    "pair": "pair (not yet told apart)",
}


def suspect_lines(s: Suspect, evidence: int = 3) -> list[str]:
    status = "" if s.status == "suspect" else f" [{s.status.upper()}]"
    lines = [f"{KIND_WORDS[s.kind]}: {s.part}{status}"]
    lines += [f"    {e}" for e in s.evidence[:evidence]]
    lines += [f"    re-test: {t}" for t in s.retest[:4]]
    return lines


def coverage_line(c: Coverage) -> str:
    line = (
        f"covered {c.hosts}/{c.hosts_total} hosts, {c.ports}/{c.ports_total} host ports, "
        f"{c.leaves}/{c.leaves_total} leaves, {c.pairs} host pairs, {c.cross_leaf} flows through the spine"
    )
    if c.untested_hosts:
        more = len(c.untested_hosts) - 5
        line += f"; not tested: {', '.join(c.untested_hosts[:5])}" + (f" (+{more})" if more > 0 else "")
    return line


def budget_line(b: Budget) -> str:
    ran = sum(1 for r in b.rounds if r.ran)
    limit = f" of a {b.budget_s:.0f} s budget" if b.budget_s is not None else ""
    line = f"{b.mode}: {ran}/{len(b.rounds)} rounds, {b.used_s:.0f} s of fabric time{limit}"
    skipped = [r.kind for r in b.rounds if not r.ran]
    if skipped:
        line += f"; not run: {', '.join(skipped)}"
    return line


def summary_lines(fleet: FleetSummary | None) -> list[str]:
    if fleet is None:
        return []
    lines = [budget_line(fleet.budget), coverage_line(fleet.coverage)]
    if fleet.budget.stopped:
        lines.append(f"stopped: {fleet.budget.stopped}")
    if fleet.suspects:
        lines.append(f"{len(fleet.suspects)} suspect(s), most certain first:")
        for s in fleet.suspects:
            lines += [f"  {line}" for line in suspect_lines(s)]
    elif fleet.budget.rounds:
        lines.append("no suspects: every slow flow is explained, or none was slow")
    if fleet.compared_with is not None:
        if fleet.regressions:
            lines.append(f"{len(fleet.regressions)} regression(s) since {fleet.compared_with}:")
            lines += [f"  {describe(r)}" for r in fleet.regressions]
        else:
            lines.append(f"no host port slower than in {fleet.compared_with}")
    if fleet.thresholds is not None:
        t = fleet.thresholds
        lines.append(f"pass mark: {t.pass_ratio:.0%} of line rate ({t.pass_source})")
    return lines
