"""The HTML report of 16 hosts x 8 rails: heat maps per rail, sweep charts with axes, incast and cross-rail grids."""

from __future__ import annotations

import re
from html.parser import HTMLParser

from tests.validate.synthetic16 import build
from wizard.validate import svg
from wizard.validate.html_report import render


class Page(HTMLParser):
    """The parts of the report the tests read: each SVG (by aria-label) with its cells and texts, and tables."""

    def __init__(self, html: str) -> None:
        super().__init__()
        self.svgs: dict[str, dict[str, list]] = {}
        self.tables: list[list[list[str]]] = []
        self._svg: dict[str, list] | None = None
        self._stack: list[str] = []
        self._cell: dict[str, str] | None = None
        self._text: list[str] | None = None
        self._row: list[str] | None = None
        self._td: list[str] | None = None
        self.feed(html)

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        a = {k: v or "" for k, v in attrs}
        if tag == "svg":
            self._svg = self.svgs.setdefault(a.get("aria-label", ""), {"cells": [], "texts": [], "lines": []})
        elif self._svg is not None and tag == "rect" and "data-band" in a:
            self._cell = {"band": a["data-band"], "title": ""}
            self._svg["cells"].append(self._cell)
        elif self._svg is not None and tag == "polyline":
            self._cell = {"band": a.get("stroke", ""), "title": ""}
            self._svg["lines"].append(self._cell)
        elif self._svg is not None and tag == "text":
            self._text = []
        elif tag == "table":
            self.tables.append([])
        elif tag == "tr":
            self._row = []
            self.tables[-1].append(self._row)
        elif tag in ("td", "th"):
            self._td = []
        self._stack.append(tag)

    def handle_endtag(self, tag: str) -> None:
        if tag == "svg":
            self._svg = None
        elif tag == "text" and self._svg is not None and self._text is not None:
            self._svg["texts"].append("".join(self._text))
            self._text = None
        elif tag in ("rect", "polyline"):
            self._cell = None
        elif tag in ("td", "th") and self._row is not None and self._td is not None:
            self._row.append("".join(self._td).strip())
            self._td = None

    def handle_data(self, data: str) -> None:
        if self._stack and self._stack[-1] == "title" and self._cell is not None:
            self._cell["title"] += data
        elif self._text is not None:
            self._text.append(data)
        elif self._td is not None:
            self._td.append(data)


def page() -> tuple[str, Page]:
    report, _ = build()
    html = render(report)
    return html, Page(html)


def cell(p: Page, svg: str, title_start: str) -> dict[str, str]:
    (found,) = [c for c in p.svgs[svg]["cells"] if c["title"].startswith(title_start)]
    return found


def test_the_report_of_16_hosts_stays_self_contained():
    html, p = page()
    assert html.startswith("<!DOCTYPE html>")
    assert not re.search(r"""(src|href)=["']?(https?:|//)""", html), "no external assets"
    assert "<script" not in html and "@import" not in html


def test_one_heat_map_per_rail_and_one_for_all_rails_with_axes_titles_and_every_pair():
    _, p = page()
    maps = ["all 8 rails together: % of the pair's summed line rate", *(f"rail {i}: % of line rate" for i in range(8))]
    for name in maps:
        svg = p.svgs[name]
        assert len(svg["cells"]) == 16 * 15, f"{name}: every host against every other host"
        assert "host" in svg["texts"] and "peer host" in svg["texts"]
        assert svg["texts"].count("gpu-016") == 2, "row and column label"
    legend = p.svgs["all 8 rails together: % of the pair's summed line rate"]["texts"]
    assert "≥ 90% of line rate" in legend and "< 75%" in legend and "no result" in legend
    assert "numbers: % of line rate" in legend


def test_a_slow_rail_is_red_on_its_own_map_while_all_rails_together_stay_green():
    _, p = page()
    together = cell(p, "all 8 rails together: % of the pair's summed line rate", "gpu-003 x gpu-004:")
    assert together["band"] == "pass" and "(93%)" in together["title"]
    slow = cell(p, "rail 2: % of line rate", "gpu-003 x gpu-004:")
    assert slow == {"band": "fail", "title": "gpu-003 x gpu-004: 240.0 of 400 Gb/s (60%)"}
    assert cell(p, "rail 3: % of line rate", "gpu-003 x gpu-004:")["band"] == "pass"
    assert cell(p, "rail 5: % of line rate", "gpu-009 x gpu-010:") == {
        "band": "none",
        "title": "gpu-009 x gpu-010: no result",
    }
    assert cell(p, "all 8 rails together: % of the pair's summed line rate", "gpu-009 x gpu-010:")["band"] == "warn"
    bands = [c["band"] for c in p.svgs["rail 2: % of line rate"]["cells"]]
    assert bands.count("fail") == 2 * 15, "gpu-003's row and column"


def test_sweep_charts_per_rail_have_gbps_and_message_size_axes_and_the_pass_mark():
    _, p = page()
    charts = {k: v for k, v in p.svgs.items() if re.match(r"rail \d: 15 pairs", k)}
    assert len(charts) == 8
    rail2 = next(v for k, v in charts.items() if k.startswith("rail 2:"))
    texts = rail2["texts"]
    assert "Gb/s" in texts and "message size (bytes, log2 scale)" in texts
    assert ["0", "100", "200", "300", "400"] == [t for t in texts if t.isdigit()]
    assert texts[texts.index("2 B") :][:6] == ["2 B", "64 B", "1 KiB", "32 KiB", "1 MiB", "8 MiB"]
    assert "pass 360 Gb/s (90% of 400)" in texts
    red = sorted(line["title"] for line in rail2["lines"] if line["band"] == "#d62728")
    assert red == ["gpu-003->gpu-002", "gpu-004->gpu-003"] and len(rail2["lines"]) == 15
    assert "13 others: 388-396 Gb/s" in texts, "the passing pairs in one entry, with their range of peaks"


def test_the_incast_table_has_a_row_per_round_with_pauses_drops_cnps_and_the_cause():
    _, p = page()
    (table,) = [t for t in p.tables if t and t[0][:4] == ["rail", "round", "receiver", "switch port"]]
    head, *rows = table
    assert head == ["rail", "round", "receiver", "switch port", "senders", "Gb/s of line", "pauses", "drops", "CNPs",
                    "status", "cause"]  # fmt: skip
    assert len(rows) == 8
    assert rows[0][:10] == ["0", "0", "gpu-001 enp24s0np0", "leaf-r0 swp1", "15", "388.0 / 400 (97%)", "18000", "0",
                            "700", "PASS"]  # fmt: skip
    bad = rows[5]
    assert bad[:10] == ["5", "0", "gpu-006 enp192s0np0", "leaf-r5 swp6", "15", "250.0 / 400 (62%)", "0", "5400", "0",
                        "FAIL"]  # fmt: skip
    assert "PFC off" in bad[10] and "enable PFC priority 3 on leaf-r5 swp6" in bad[10]
    senders = [t for t in p.tables if t and t[0][:3] == ["sender", "port", "switch port"]]
    assert len(senders) == 8 and senders[0][1][:3] == ["gpu-002", "enp24s0np0", "leaf-r0 swp2"]


def test_the_cross_rail_grid_is_directed_rail_by_rail_and_names_the_slow_path():
    _, p = page()
    grid = p.svgs["gpu-002 -> gpu-001"]
    assert len(grid["cells"]) == 56, "8 client rails x 8 server rails but not rail i to rail i"
    assert "gpu-002 rail (client)" in grid["texts"] and "gpu-001 rail (server)" in grid["texts"]
    assert cell(p, "gpu-002 -> gpu-001", "rail 6 x rail 1:")["band"] == "fail"
    assert cell(p, "gpu-002 -> gpu-001", "rail 1 x rail 6:")["band"] == "pass"
    (failing,) = [t for t in p.tables if t and t[0][:2] == ["rails", "ports"]]
    assert failing[1][:5] == ["6 -> 1", "enp206s0np0 -> enp64s0np0", "250.00", "400", "FAIL"]


def test_a_directed_grid_does_not_mirror_a_path_that_was_not_measured():
    grid = Page(svg.heat_map(["rail 0", "rail 1"], {("rail 1", "rail 0"): (100.0, 400.0)}, title="g",
                             diagonal=False, symmetric=False)).svgs["g"]  # fmt: skip
    bands = {c["title"].split(":")[0]: c["band"] for c in grid["cells"]}
    assert bands == {"rail 0 x rail 0": "wait", "rail 0 x rail 1": "wait", "rail 1 x rail 0": "fail",
                     "rail 1 x rail 1": "wait"}  # fmt: skip
