"""The fleet part of the HTML report: suspects first, regressions, the budget bar and coverage, then one row per
leaf (flows through it, how many slow, the median rate) that opens onto its host ports. Nothing here grows as the
square of the hosts: a 1,000-host run is a few hundred leaf rows, not a million-cell grid."""

from __future__ import annotations

from html import escape

from wizard.validate.fleet_model import FleetSummary
from wizard.validate.fleet_text import KIND_WORDS, budget_line, coverage_line
from wizard.validate.history import describe
from wizard.validate.leaf_view import LeafRow, leaf_rows, slow_with
from wizard.validate.model import Report
from wizard.validate.suspects import Flow, flows_of

CSS = """
.budget{background:#eee;border-radius:3px;height:14px;width:420px;position:relative;margin:4px 0}
.budget>span{display:block;height:14px;border-radius:3px;background:#2b7}
.budget.over>span{background:#c33}
details.leaf{margin:2px 0}
details.leaf summary{cursor:pointer}
td.slow{color:#b00;font-weight:bold}
"""


def fleet_section(r: Report) -> str:
    f = r.fleet
    if f is None:
        return ""
    out = [f"<style>{CSS}</style><h2>Fleet validation</h2>"]
    out.append(_suspects(f))
    if f.compared_with is not None:
        out.append(f"<h3>Regressions since {escape(f.compared_with)}</h3>")
        items = "".join(f"<li>{escape(describe(x))}</li>" for x in f.regressions)
        out.append(f"<ul>{items}</ul>" if items else "<p>No host port slower than in that run.</p>")
    out.append(_budget(f))
    out.append(_leaves(flows_of(r.together + r.cross_rail)))
    if f.thresholds is not None:
        t = f.thresholds
        out.append(f"<p class='small'>Pass mark {t.pass_ratio:.0%} of line rate: {escape(t.pass_source)}. Latency "
                   f"alarm {t.latency_alarm_us:g} us: {escape(t.latency_source)}. A regression: "
                   f"{t.regression_pct:g} % slower than the earlier run.</p>")  # fmt: skip
    return "".join(out)


def _suspects(f: FleetSummary) -> str:
    if not f.suspects:
        return "<h3>Suspects</h3><p>None: no slow flow is left unexplained.</p>" if f.budget.rounds else ""
    rows = []
    for s in f.suspects:
        evidence = "<br>".join(escape(e) for e in s.evidence + [f"re-test: {t}" for t in s.retest])
        rows.append(f"<tr><td>{escape(KIND_WORDS[s.kind])}</td><td><b>{escape(s.part)}</b></td>"
                    f"<td>{escape(s.status)}</td><td>{evidence}</td></tr>")  # fmt: skip
    head = "<tr><th>part</th><th>where</th><th>status</th><th>evidence</th></tr>"
    return f"<h3>Suspects, most certain first</h3><table>{head}{''.join(rows)}</table>"


def _budget(f: FleetSummary) -> str:
    b = f.budget
    out = [f"<h3>Coverage and budget</h3><p>{escape(budget_line(b))}</p>"]
    if b.budget_s:
        share = min(1.0, b.used_s / b.budget_s)
        over = " over" if b.stopped else ""
        out.append(f"<div class='budget{over}' title='{b.used_s:.0f} of {b.budget_s:.0f} s'>"
                   f"<span style='width:{share * 100:.0f}%'></span></div>")  # fmt: skip
    if b.stopped:
        out.append(f"<p><b>Stopped early</b>: {escape(b.stopped)}</p>")
    out.append(f"<p>{escape(coverage_line(f.coverage))}</p>")
    if f.coverage.untested_leaves:
        out.append(f"<p>Leaves not tested: {escape(', '.join(f.coverage.untested_leaves))}</p>")
    rounds = "".join(
        f"<tr><td>{i + 1}</td><td>{escape(x.kind)}</td><td>{escape(x.why)}</td><td>{x.pairs}</td>"
        f"<td>{x.seconds:.0f} s</td><td>{'run' if x.ran else 'not run'}</td></tr>"
        for i, x in enumerate(b.rounds)
    )
    head = "<tr><th>#</th><th>round</th><th>what it tells</th><th>tests</th><th>time</th><th></th></tr>"
    out.append(f"<table>{head}{rounds}</table>")
    return "".join(out)


def _leaves(flows: list[Flow]) -> str:
    """Per leaf: flows through it, the slow ones, the median rate; opened, its host ports."""
    rows = leaf_rows(flows)
    if not rows:
        return ""
    out = ["<h3>Per leaf</h3><p class='small'>Slowest leaves first; open one for its host ports.</p>"]
    for row in rows:
        mid = f"{row.median_gbps:.0f} Gb/s median" if row.median_gbps is not None else "no rate"
        mark = " class='slow'" if row.slow else ""
        out.append(f"<details class='leaf'><summary><b>{escape(row.leaf)}</b>: {len(row.flows)} flows, "
                   f"<span{mark}>{row.slow} slow</span>, {mid}</summary>{_ports(row)}</details>")  # fmt: skip
    return "".join(out)


def _ports(row: LeafRow) -> str:
    body = []
    for (host, rail), mine in row.ports():
        slow = sum(1 for f in mine if not f.ok)
        cls = " class='slow'" if slow else ""
        peers = slow_with((host, rail), mine, 3) or "all fast"
        body.append(f"<tr><td>{escape(host)}</td><td>{rail}</td><td>{len(mine)}</td><td{cls}>{slow}</td>"
                    f"<td>{escape(peers)}</td></tr>")  # fmt: skip
    head = "<tr><th>host</th><th>rail</th><th>flows</th><th>slow</th><th>slow with</th></tr>"
    return f"<table>{head}{''.join(body)}</table>"
