"""HTML report sections for fabrics of many hosts: sweep charts per rail, per-rail heat maps, incast, cross-rail."""

from __future__ import annotations

from collections import defaultdict
from html import escape

from wizard.validate import svg
from wizard.validate.model import PASS_RATIO, RailResult, Report


def s(status: str) -> str:
    """A status word in its colour."""
    return f'<span class="{escape(status)}">{escape(status.upper())}</span>'


def table(head: list[str], rows: list[list[str]], cls: str = "") -> str:
    th = "".join(f"<th>{escape(h)}</th>" for h in head)
    body = "".join("<tr>" + "".join(f"<td>{c}</td>" for c in row) + "</tr>" for row in rows)
    attr = f' class="{cls}"' if cls else ""
    return f"<table{attr}><tr>{th}</tr>{body}</table>"


def g(value: float | None, digits: int = 2) -> str:
    return "-" if value is None else f"{value:.{digits}f}"


def legend_html() -> str:
    """The heat map colours as HTML swatches (one legend for a row of small maps)."""
    items = "".join(
        f"<span style='display:inline-block;width:12px;height:12px;background:{svg.BANDS[k]};border:1px solid #ccc;"
        f"vertical-align:middle;margin:0 4px 0 12px'></span>{svg.BAND_TEXT[k]}"
        for k in ("pass", "warn", "fail", "none", "wait")
    )
    return f"<p class='small legend'>Colour: share of line rate.{items}. Numbers: % of line rate.</p>"


def sweep_charts(rails: list[RailResult]) -> str:
    """One small chart per rail (its pass line, its pair's curve, the rate and verdict in the title) when each rail
    was swept once: on one chart the rails' curves lie on top of each other. Else one chart per rail with a line
    per host pair, failing pairs in red, the legend giving the range of peaks."""
    swept = [x for x in rails if x.sweep]
    if not swept:
        return "<p><em>no sweep</em></p>"
    by_rail: dict[int, list[RailResult]] = defaultdict(list)
    for x in swept:
        by_rail[x.rail].append(x)
    out = ["<div class='multi'>"]
    if all(len(v) == 1 for v in by_rail.values()):
        for x in swept:
            title = f"rail {x.rail}: {x.client.host} -> {x.server.host} {g(x.gbps, 1)} Gb/s {x.status.upper()}"
            chart = svg.sweep_chart({f"{x.client.host}->{x.server.host}": x.sweep}, unit="Gb/s",
                                    line=x.expected_gbps, failed={f"{x.client.host}->{x.server.host}"}
                                    if x.status == "fail" else set(), title=title, width=340, height=210,
                                    legend=False, label=f"rail {x.rail} sweep: Gb/s by message size")  # fmt: skip
            out.append(f"<figure>{chart}</figure>")
        out.append("</div>")
        return "".join(out)
    for rail, runs in sorted(by_rail.items()):
        series = {f"{x.client.host}->{x.server.host}": x.sweep for x in runs}
        failed = {f"{x.client.host}->{x.server.host}" for x in runs if x.status == "fail"}
        line = min((x.expected_gbps for x in runs if x.expected_gbps), default=None)
        slow = min(runs, key=lambda x: x.gbps if x.gbps is not None else -1.0)
        worst = f"slowest {slow.client.host}->{slow.server.host} {g(slow.gbps, 1)} Gb/s"
        title = f"rail {rail}: {len(runs)} pairs, {len(failed)} failing, {worst}"
        out.append(f"<figure>{svg.sweep_chart(series, unit='Gb/s', line=line, failed=failed, title=title)}</figure>")
    out.append("</div>")
    return "".join(out)


def matrix_section(r: Report) -> str:
    """The all-pairs matrix: all rails together, then one map per rail (the slow rail a total hides)."""
    if not r.matrix:
        return ""
    hosts = list(r.hosts) or sorted({h for c in r.matrix for h in (c.a, c.b)})
    lines = {(frozenset((x.server.host, x.client.host)), x.rail): x.expected_gbps for x in r.together}
    n_rails = max(len(c.rails) for c in r.matrix)
    out = [
        "<h2>All host pairs: heat maps</h2><p class='small'>Every pair once, in rounds of disjoint pairs "
        "(no host runs two tests at once), all rails of a pair at the same time. A pair that is fine with all "
        "rails together can still have one slow rail: the per-rail maps show it.</p>"
    ]
    total = {(c.a, c.b): (c.gbps, c.expected_gbps) for c in r.matrix}
    title = f"all {n_rails} rails together: % of the pair's summed line rate"
    out.append(svg.heat_map(hosts, total, title=title, row_title="host", col_title="peer host"))
    out.append(f"<p>One map per rail (rail i of every host, on rail i's leaf):</p>{legend_html()}")
    out.append("<div class='multi'>")
    for i in range(n_rails):
        cells: dict[tuple[str, str], tuple[float | None, float | None]] = {}
        for c in r.matrix:
            if i < len(c.rails):
                line = lines.get((frozenset((c.a, c.b)), i))
                line = line or ((c.expected_gbps / len(c.rails)) if c.expected_gbps and c.rails else None)
                cells[(c.a, c.b)] = (c.rails[i], line)
        size = 22 if len(hosts) <= 16 else None
        m = svg.heat_map(hosts, cells, title=f"rail {i}: % of line rate", row_title="host", col_title="peer host",
                         size=size, legend=False)  # fmt: skip
        out.append(f"<figure>{m}</figure>")
    out.append("</div>")
    ordered = sorted(r.matrix, key=lambda c: (c.status != "fail", c.round))  # failing pairs first
    rows = [
        [str(c.round), escape(c.a), escape(c.b), g(c.gbps, 1), g(c.expected_gbps, 0),
         escape(" / ".join(g(v, 1) for v in c.rails)), s(c.status), escape(c.hint or "")]
        for c in ordered
    ]  # fmt: skip
    head = ["round", "host A", "host B", "Gb/s", "expected", "per rail", "status", "check"]
    bad = [row for row, c in zip(rows, ordered, strict=True) if c.status == "fail"]
    if bad:
        out.append(f"<p>{len(bad)} of {len(rows)} pairs below the pass mark:</p>")
        out.append(table(head, bad))
    out.append(f"<details><summary class='small'>all {len(rows)} pairs</summary>{table(head, rows)}</details>")
    return "".join(out)


def incast_section(r: Report) -> str:
    """N senders into one receiver port per rail: pauses must appear, drops must not, CNPs where ECN is on."""
    if not r.incast:
        return ""
    bad = sum(x.status == "fail" for x in r.incast)
    out = [
        "<h2>Incast: N senders into one port</h2>"
        f"<p>{len(r.incast)} rounds, {len(r.incast) - bad} pass, {bad} fail. Each round oversubscribes one "
        "receiver port on purpose: with PFC on the lossless priority the senders are paused and nothing is "
        "dropped; with ECN the receiver sends CNPs.</p>"
    ]
    rows = []
    for x in r.incast:
        share = f" ({x.total_gbps / x.line_gbps:.0%})" if x.total_gbps is not None and x.line_gbps else ""
        cause = escape(x.cause or "") + (f"<br><i>fix:</i> {escape(x.fix)}" if x.fix else "")
        rows.append([str(x.rail), str(x.round), escape(f"{x.receiver.host} {x.receiver.netdev}"),
                     escape(x.receiver_switch_port or "-"), str(len(x.senders)),
                     f"{g(x.total_gbps, 1)} / {g(x.line_gbps, 0)}{share}", str(x.pauses), str(x.drops), str(x.cnps),
                     s(x.status), cause])  # fmt: skip
    head = ["rail", "round", "receiver", "switch port", "senders", "Gb/s of line", "pauses", "drops", "CNPs",
            "status", "cause"]  # fmt: skip
    out.append(table(head, rows, cls="incast"))
    for x in r.incast:
        flows = [[escape(f.sender.host), escape(f.sender.netdev), escape(f.switch_port or "-"), g(f.gbps, 1),
                  escape(", ".join(f"{k} +{v}" for k, v in sorted(f.deltas.items()) if v) or "-"),
                  escape("; ".join(f.errors))] for f in x.senders]  # fmt: skip
        moved = ", ".join(f"{k} +{v}" for k, v in sorted(x.receiver_deltas.items()) if v) or "-"
        out.append(f"<details><summary class='small'>rail {x.rail} round {x.round}: {len(x.senders)} senders -> "
                   f"{escape(x.receiver.host)} {escape(x.receiver.netdev)}</summary>"
                   f"<p class='small'>receiver counters moved: {escape(moved)}</p>"
                   f"{table(['sender', 'port', 'switch port', 'Gb/s', 'counters moved', 'errors'], flows)}"
                   "</details>")  # fmt: skip
    return "".join(out)


def cross_section(r: Report) -> str:
    """Rail i of one host to rail j != i of another, through the spine: a rail x rail grid per pair (the diagonal,
    rail i to rail i, is the per-rail test)."""
    if not r.cross_rail:
        return ""
    out = ["<h2>Cross-rail paths (rail x rail through the spine)</h2>"]
    pairs: dict[tuple[str, str], list[RailResult]] = defaultdict(list)
    for x in r.cross_rail:
        pairs[(x.client.host, x.server.host)].append(x)
    for (client, server), runs in pairs.items():
        n = max(max(x.rail, x.peer_rail if x.peer_rail is not None else x.rail) for x in runs) + 1
        names = [f"rail {i}" for i in range(n)]
        cells = {(f"rail {x.rail}", f"rail {x.rail if x.peer_rail is None else x.peer_rail}"): (x.gbps,
                 x.expected_gbps) for x in runs}  # fmt: skip
        out.append(svg.heat_map(names, cells, title=f"{client} -> {server}", row_title=f"{client} rail (client)",
                                col_title=f"{server} rail (server)", symmetric=False))  # fmt: skip
        bad = [x for x in runs if x.status != "pass"]
        if bad:
            rows = [[escape(f"{x.rail} -> {x.peer_rail}"), escape(f"{x.client.netdev} -> {x.server.netdev}"),
                     g(x.gbps), g(x.expected_gbps, 0), s(x.status), escape(x.cause or "")] for x in bad]  # fmt: skip
            out.append(table(["rails", "ports", "Gb/s", "line", "status", "cause"], rows))
    out.append(f"<p class='small'>A path passes at &ge; {PASS_RATIO:.0%} of the slower port's line rate.</p>")
    return "".join(out)
