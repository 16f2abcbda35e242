"""The page renders in a real browser, offline: headless Chromium draws it on screen and prints it to PDF."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
from pathlib import Path

import pytest

from wizard.cli.report import main as report_cmd

CHROMIUM = next((p for p in map(shutil.which, ("chromium", "chromium-browser", "google-chrome")) if p), None)
pytestmark = pytest.mark.skipif(CHROMIUM is None, reason="no headless Chromium on this machine")
# The page must not reach for the network: Chromium gets a proxy that does not exist, so a fetch would fail.
FLAGS = ["--headless", "--no-sandbox", "--disable-gpu", "--hide-scrollbars", "--proxy-server=127.0.0.1:9",
         "--no-first-run", "--disable-extensions"]  # fmt: skip


def chromium(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "HOME": str(cwd)}  # a profile of its own, not the user's
    return subprocess.run([CHROMIUM or "chromium", *FLAGS, f"--user-data-dir={cwd / 'profile'}", *args],
                          capture_output=True, text=True, timeout=120, cwd=cwd, env=env)  # fmt: skip


@pytest.mark.slow
@pytest.mark.parametrize("which", ["demo_state", "failed_state"])
def test_headless_chromium_draws_the_page_and_prints_it(which: str, request, tmp_path: Path) -> None:
    state = request.getfixturevalue(which)
    page = tmp_path / "report.html"
    assert report_cmd(["--state-dir", str(state), "--html", str(page)]) == 0
    shot, pdf = tmp_path / "report.png", tmp_path / "report.pdf"
    result = chromium("--window-size=1200,2400", f"--screenshot={shot}", page.as_uri(), cwd=tmp_path)
    assert shot.exists(), result.stderr[-2000:]
    png = shot.read_bytes()
    assert png[:8] == b"\x89PNG\r\n\x1a\n" and int.from_bytes(png[16:20], "big") == 1200
    assert len(png) > 50_000  # a blank page compresses to a few kB; text, tables and charts do not
    result = chromium("--no-pdf-header-footer", f"--print-to-pdf={pdf}", page.as_uri(), cwd=tmp_path)
    assert pdf.exists(), result.stderr[-2000:]
    data = pdf.read_bytes()
    pages = len(re.findall(rb"/Type\s*/Page[^s]", data))
    assert data.startswith(b"%PDF") and pages >= 2
    keep = os.environ.get("REPORT_SHOTS")  # REPORT_SHOTS=DIR keeps the pictures to look at
    if keep:
        Path(keep).mkdir(parents=True, exist_ok=True)
        shutil.copy(shot, Path(keep) / f"{which}.png")
        shutil.copy(pdf, Path(keep) / f"{which}.pdf")
