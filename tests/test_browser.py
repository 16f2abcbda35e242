"""The browser checks of the HTML reports can fail: the driver in tests/browser.py reports a console error, a fetch
from the network (refused on the machine itself) and a chart that is empty, hidden or missing; and a Chromium that
dies or hangs fails the test instead of hanging it."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from tests.browser import BrowserError, Chromium, find_chromium, look_at, png_size

needs_chromium = pytest.mark.skipif(
    find_chromium() is None, reason="no Chromium on PATH (tests/install-lab-tools.sh installs Debian's chromium)"
)
CHART = "<svg role='img' aria-label='bars' width='300' height='100'><rect x='0' y='10' width='200' height='20'/></svg>"


def page(tmp_path: Path, body: str) -> Path:
    path = tmp_path / "page.html"
    path.write_text(f"<!DOCTYPE html><html><head><meta charset='utf-8'></head><body>{body}</body></html>")
    return path


@needs_chromium
def test_a_self_contained_page_with_a_drawn_chart_has_no_faults(tmp_path: Path) -> None:
    seen = look_at(page(tmp_path, f"<h1>report</h1><figure>{CHART}</figure>"), width=800)
    assert seen.faults() == []
    assert [(c.label, c.width, c.height) for c in seen.charts] == [("bars", 300, 100)]
    assert png_size(seen.png)[0] == 800


@needs_chromium
def test_a_console_error_and_an_uncaught_exception_are_faults(tmp_path: Path) -> None:
    seen = look_at(page(tmp_path, "<script>console.error('chart data missing'); null.x;</script>" + CHART))
    assert "console error: console.error: chart data missing" in seen.faults()
    assert any(f.startswith("console error: uncaught: TypeError") for f in seen.faults())


@needs_chromium
def test_an_image_from_the_network_is_a_fault_and_the_fetch_is_refused_on_this_machine(tmp_path: Path) -> None:
    seen = look_at(page(tmp_path, "<img src='http://example.invalid/x.png'>" + CHART))
    assert seen.external_requests == ["http://example.invalid/x.png"]
    assert "external request: http://example.invalid/x.png" in seen.faults()
    # the proxy on 127.0.0.1:9 refused it: nothing left the machine
    assert any("ERR_PROXY_CONNECTION_FAILED" in e for e in seen.console_errors), seen.console_errors


@needs_chromium
def test_an_empty_a_hidden_and_a_bare_chart_container_are_faults(tmp_path: Path) -> None:
    empty = "<svg role='img' aria-label='empty' width='300' height='100'></svg>"
    hidden = f"<div style='display:none'>{CHART.replace('bars', 'hidden')}</div>"
    body = f"{empty}{hidden}<figure class='bare'></figure>"
    faults = look_at(page(tmp_path, body)).faults()
    assert "empty chart: empty (300 x 100 px, 0 shapes drawn)" in faults
    assert "empty chart: hidden (0 x 0 px, 0 shapes drawn)" in faults
    assert 'empty chart: a container without an <svg>: <figure class="bare"></figure>' in faults
    assert len(faults) == 3


@needs_chromium
def test_a_chart_in_the_html_that_the_page_does_not_show_is_missing(tmp_path: Path) -> None:
    seen = look_at(page(tmp_path, f"{CHART}<textarea>{CHART}</textarea>"))  # the second is text, not a drawing
    assert seen.faults() == ["missing chart: the HTML has 2 <svg>, the page shows 1"]


def fake_browser(tmp_path: Path, script: str) -> str:
    path = tmp_path / "fake-chromium"
    path.write_text(f"#!/bin/sh\n{script}\n")
    path.chmod(0o755)
    return str(path)


def test_a_browser_that_exits_at_once_fails_with_its_exit_status(tmp_path: Path) -> None:
    binary = fake_browser(tmp_path, "echo 'cannot open display' >&2; exit 3")
    with pytest.raises(BrowserError, match=r"(?s)Chromium exited.*cannot open display"), Chromium(binary, timeout=30):
        pass


def test_a_browser_that_never_answers_times_out_and_is_killed(tmp_path: Path) -> None:
    pid_file = tmp_path / "pid"
    binary = fake_browser(tmp_path, f"echo $$ > {pid_file}; exec sleep 300")
    with pytest.raises(BrowserError, match="no answer to Target.createTarget in 1 s"), Chromium(binary, timeout=1):
        pass
    with pytest.raises(ProcessLookupError):
        os.kill(int(pid_file.read_text()), 0)
