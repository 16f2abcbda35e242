"""A small driver for headless Chromium over the DevTools protocol on a pipe, for the tests of the HTML reports.

Chromium started with ``--remote-debugging-pipe`` reads JSON commands on its fd 3 and writes answers and events on
its fd 4, each message ended by a NUL byte. The driver opens one page (a file: URL), records what a reader of the
report would never see but a broken page shows: console errors, uncaught exceptions, error log entries, and every
request that leaves the file (anything but file: and data: URLs: the reports must be self-contained). It evaluates
JavaScript, measures the charts, takes a full-page PNG and prints the page to PDF.

Every wait has a deadline: a Chromium that dies or hangs fails the test with what it wrote on stderr, and the
process group is killed whatever happens. No network is reached: every request goes to a proxy on 127.0.0.1:9,
which refuses it, and is still seen when it is sent.
"""

from __future__ import annotations

import base64
import json
import os
import re
import select
import shutil
import signal
import subprocess
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

BINARIES = ("chromium", "chromium-browser", "google-chrome", "google-chrome-stable")
FLAGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--no-default-browser-check",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--disable-extensions",
    "--disable-dev-shm-usage",  # containers often have a 64 MB /dev/shm
    "--hide-scrollbars",
    "--proxy-server=127.0.0.1:9",  # nothing listens there: a fetch fails here, after it was recorded
    "--remote-debugging-pipe",
]
TIMEOUT = 60.0  # seconds for any one answer from Chromium
LOCAL_SCHEMES = ("file:", "data:")  # what a self-contained page may load

# Every chart of the page as drawn: each <svg> with its box on screen and how many of its shapes have an area or a
# length there, then each chart container (a <figure>, a row of small charts) that holds no <svg> at all.
CHARTS_JS = """
(() => {
  const shapes = 'rect,line,polyline,path,circle,ellipse,polygon,text';
  const charts = [...document.querySelectorAll('svg')].map(s => {
    const box = s.getBoundingClientRect();
    const drawn = [...s.querySelectorAll(shapes)].filter(e => {
      const b = e.getBBox(); return b.width > 0 || b.height > 0;
    }).length;
    return {kind: 'svg', label: s.getAttribute('aria-label') || '', width: box.width, height: box.height,
            drawn: drawn};
  });
  const bare = [...document.querySelectorAll('figure, .multi')].filter(c => !c.querySelector('svg'));
  return charts.concat(bare.map(c => ({kind: 'container', label: c.outerHTML.slice(0, 60), width: 0, height: 0,
                                       drawn: 0})));
})()
"""
SVG_TAG = re.compile(r"<svg\b", re.IGNORECASE)


def find_chromium() -> str | None:
    """The first headless-capable Chromium on PATH, or None."""
    return next((p for p in map(shutil.which, BINARIES) if p), None)


class BrowserError(RuntimeError):
    """Chromium died, hung, or answered a command with an error."""


@dataclass
class Chart:
    kind: str  # "svg", or "container": a <figure> or a row of charts (class multi) that holds no <svg>
    label: str  # the svg's aria-label; the container's HTML
    width: float
    height: float
    drawn: int  # shapes with an area or a length on screen

    @property
    def empty(self) -> bool:
        return self.kind != "svg" or self.width <= 0 or self.height <= 0 or self.drawn == 0


@dataclass
class Page:
    """What one page did in the browser."""

    url: str
    console_errors: list[str] = field(default_factory=list)
    external_requests: list[str] = field(default_factory=list)
    loaded: bool = False


class Chromium:
    """One headless Chromium with one page; use as a context manager (the process is killed on exit)."""

    def __init__(self, binary: str | None = None, *, width: int = 1200, height: int = 900,
                 timeout: float = TIMEOUT) -> None:  # fmt: skip
        self.binary = binary or find_chromium()
        if not self.binary:
            raise BrowserError("no Chromium on PATH (" + ", ".join(BINARIES) + ")")
        self.width, self.height, self.timeout = width, height, timeout
        self._proc: subprocess.Popen[bytes] | None = None
        self._profile: tempfile.TemporaryDirectory[str] | None = None
        self._to_chrome = self._from_chrome = -1
        self._buffer = b""
        self._next_id = 0
        self._session: str | None = None
        self.page = Page(url="about:blank")

    # -- process ---------------------------------------------------------------------------------------------
    def __enter__(self) -> Chromium:
        self._profile = tempfile.TemporaryDirectory(prefix="roce-wizard-chromium-")
        profile = Path(self._profile.name)
        # fd 3 in the child reads what we write; fd 4 in the child writes what we read. A shell puts the pipe ends
        # there before it execs Chromium (no preexec_fn, which is unsafe once the test process has threads; bash, as
        # dash takes only one-digit fd numbers).
        cmd_read, cmd_write = os.pipe()
        out_read, out_write = os.pipe()
        stderr = (profile / "stderr.log").open("wb")
        try:
            self._proc = subprocess.Popen(
                ["bash", "-c", f'exec "$0" "$@" 3<&{cmd_read} 4>&{out_write} {cmd_read}<&- {out_write}>&-',
                 self.binary or "chromium", *FLAGS, f"--user-data-dir={profile / 'profile'}",
                 f"--window-size={self.width},{self.height}", "about:blank"],
                stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=stderr, pass_fds=(cmd_read, out_write),
                start_new_session=True,
                env={**os.environ, "HOME": str(profile)},
            )  # fmt: skip
        except BaseException:
            for fd in (cmd_read, cmd_write, out_read, out_write):
                os.close(fd)
            raise
        finally:
            stderr.close()
        os.close(cmd_read)
        os.close(out_write)
        self._to_chrome, self._from_chrome = cmd_write, out_read
        try:
            self._attach()
        except BaseException:
            self.__exit__(None, None, None)
            raise
        return self

    def __exit__(self, *exc: object) -> None:
        proc, self._proc = self._proc, None
        if proc is not None and proc.poll() is None:
            try:
                os.killpg(proc.pid, signal.SIGTERM)  # the browser and the helpers it started, all in its group
                proc.wait(timeout=10)
            except (ProcessLookupError, subprocess.TimeoutExpired):
                try:
                    os.killpg(proc.pid, signal.SIGKILL)
                except ProcessLookupError:
                    pass
                proc.wait(timeout=10)
        for fd in (self._to_chrome, self._from_chrome):
            if fd >= 0:
                os.close(fd)
        self._to_chrome = self._from_chrome = -1
        if self._profile is not None:
            self._profile.cleanup()
            self._profile = None

    def stderr_tail(self, n: int = 2000) -> str:
        if self._profile is None:
            return ""
        path = Path(self._profile.name) / "stderr.log"
        return path.read_text(errors="replace")[-n:] if path.exists() else ""

    # -- protocol --------------------------------------------------------------------------------------------
    def _write(self, data: bytes, deadline: float) -> None:
        while data:
            _, ready, _ = select.select([], [self._to_chrome], [], max(0.0, deadline - time.monotonic()))
            if not ready:
                raise BrowserError(f"Chromium does not read its commands\n{self.stderr_tail()}")
            try:
                data = data[os.write(self._to_chrome, data) :]
            except BrokenPipeError as e:
                raise BrowserError(f"Chromium exited (rc {self._rc()})\n{self.stderr_tail()}") from e

    def _read_message(self, deadline: float) -> dict[str, Any] | None:
        """The next message, or None when the deadline passed first."""
        while b"\0" not in self._buffer:
            left = deadline - time.monotonic()
            if left <= 0:
                return None
            ready, _, _ = select.select([self._from_chrome], [], [], left)
            if not ready:
                return None
            chunk = os.read(self._from_chrome, 1 << 16)
            if not chunk:
                raise BrowserError(f"Chromium exited (rc {self._rc()})\n{self.stderr_tail()}")
            self._buffer += chunk
        raw, self._buffer = self._buffer.split(b"\0", 1)
        return json.loads(raw)

    def _rc(self) -> int | None:
        if self._proc is None:
            return None
        try:
            return self._proc.wait(timeout=2)
        except subprocess.TimeoutExpired:
            return None

    def send(self, method: str, params: dict[str, Any] | None = None, *, browser: bool = False) -> dict[str, Any]:
        """Send a command (to the page's session unless ``browser``) and return its result; events that arrive
        meanwhile are recorded."""
        self._next_id += 1
        msg: dict[str, Any] = {"id": self._next_id, "method": method, "params": params or {}}
        if not browser:
            msg["sessionId"] = self._session
        timeout = self.timeout
        deadline = time.monotonic() + timeout
        self._write(json.dumps(msg).encode() + b"\0", deadline)
        while True:
            answer = self._read_message(deadline)
            if answer is None:
                raise BrowserError(f"no answer to {method} in {timeout:.0f} s\n{self.stderr_tail()}")
            if answer.get("id") == self._next_id:
                if "error" in answer:
                    raise BrowserError(f"{method}: {answer['error']}")
                return answer.get("result", {})
            self._event(answer)

    def _event(self, msg: dict[str, Any]) -> None:
        method, params = msg.get("method"), msg.get("params", {})
        if not method:
            return
        page = self.page
        if method == "Runtime.consoleAPICalled" and params.get("type") in ("error", "assert"):
            args = " ".join(str(a.get("value", a.get("description", ""))) for a in params.get("args", []))
            page.console_errors.append(f"console.{params['type']}: {args}")
        elif method == "Runtime.exceptionThrown":
            d = params.get("exceptionDetails", {})
            text = d.get("exception", {}).get("description") or d.get("text", "")
            page.console_errors.append(f"uncaught: {text}")
        elif method == "Log.entryAdded" and params.get("entry", {}).get("level") == "error":
            e = params["entry"]
            page.console_errors.append(f"log ({e.get('source')}): {e.get('text')} {e.get('url', '')}".rstrip())
        elif method == "Network.requestWillBeSent":
            url = params.get("request", {}).get("url", "")
            if not url.startswith(LOCAL_SCHEMES):
                page.external_requests.append(url)
        elif method == "Page.loadEventFired":
            page.loaded = True

    def pump(self, seconds: float) -> None:
        """Record the events that arrive in the next ``seconds``."""
        deadline = time.monotonic() + seconds
        while (msg := self._read_message(deadline)) is not None:
            self._event(msg)

    def _attach(self) -> None:
        target = self.send("Target.createTarget", {"url": "about:blank"}, browser=True)["targetId"]
        self._session = self.send("Target.attachToTarget", {"targetId": target, "flatten": True},
                                  browser=True)["sessionId"]  # fmt: skip
        for domain in ("Page", "Runtime", "Network", "Log"):
            self.send(f"{domain}.enable")
        self._metrics(self.height)

    def _metrics(self, height: int) -> None:
        self.send("Emulation.setDeviceMetricsOverride",
                  {"width": self.width, "height": height, "deviceScaleFactor": 1, "mobile": False})  # fmt: skip

    # -- page ------------------------------------------------------------------------------------------------
    def open(self, url: str, *, settle: float = 0.5) -> Page:
        """Load ``url``, wait for its load event, then record what happens in the next ``settle`` seconds."""
        self.page = Page(url=url)
        result = self.send("Page.navigate", {"url": url})
        if result.get("errorText"):
            raise BrowserError(f"cannot open {url}: {result['errorText']}")
        timeout = self.timeout
        deadline = time.monotonic() + timeout
        while not self.page.loaded:
            msg = self._read_message(deadline)
            if msg is None:
                raise BrowserError(f"{url} did not finish loading in {timeout:.0f} s\n{self.stderr_tail()}")
            self._event(msg)
        # the load event carries no URL: make sure it was this document's, not the first about:blank's
        while self.evaluate("document.readyState + ' ' + location.href") != f"complete {url}":
            if time.monotonic() > deadline:
                raise BrowserError(f"{url} did not finish loading in {timeout:.0f} s")
            self.pump(0.05)
        self.pump(settle)
        return self.page

    def evaluate(self, expression: str) -> Any:
        """The value of a JavaScript expression in the page (JSON-able values only)."""
        result = self.send("Runtime.evaluate", {"expression": expression, "returnByValue": True, "awaitPromise": True})
        if "exceptionDetails" in result:
            d = result["exceptionDetails"]
            raise BrowserError(f"{expression!r} threw: {d.get('exception', {}).get('description') or d.get('text')}")
        return result.get("result", {}).get("value")

    def charts(self) -> list[Chart]:
        """Every <svg> in the page as drawn (its box, how many shapes in it have an area or a length), and every
        chart container without one."""
        return [Chart(**c) for c in self.evaluate(CHARTS_JS)]

    def screenshot(self) -> bytes:
        """A PNG of the whole page, ``width`` pixels wide and as tall as the page."""
        height = int(self.evaluate("Math.ceil(document.documentElement.scrollHeight)"))
        self._metrics(max(height, 1))
        try:
            shot = self.send("Page.captureScreenshot", {"format": "png", "captureBeyondViewport": True})
        finally:
            self._metrics(self.height)
        return base64.b64decode(shot["data"])

    def pdf(self) -> bytes:
        """The page printed to PDF (A4-ish default paper, no header or footer), as Print to PDF would."""
        return base64.b64decode(self.send("Page.printToPDF", {"displayHeaderFooter": False})["data"])


@dataclass
class Look:
    """One HTML file as headless Chromium showed it."""

    path: Path
    console_errors: list[str]
    external_requests: list[str]
    declared_charts: int  # <svg> elements in the HTML source
    charts: list[Chart]
    png: bytes
    pdf: bytes = b""

    def faults(self) -> list[str]:
        """What is wrong with the page, one line each; empty when it loaded cleanly, offline, with every chart."""
        out = [f"console error: {e}" for e in self.console_errors]
        out += [f"external request: {u}" for u in self.external_requests]
        svgs = sum(c.kind == "svg" for c in self.charts)
        if svgs != self.declared_charts:
            out.append(f"missing chart: the HTML has {self.declared_charts} <svg>, the page shows {svgs}")
        for c in self.charts:
            if c.kind == "container":
                out.append(f"empty chart: a container without an <svg>: {c.label}")
            elif c.empty:
                out.append(f"empty chart: {c.label or '(no label)'} ({c.width:.0f} x {c.height:.0f} px, "
                           f"{c.drawn} shapes drawn)")  # fmt: skip
        return out

    def keep(self, name: str) -> None:
        """REPORT_SHOTS=DIR keeps the screenshot (and the PDF) as DIR/name.png to look at."""
        keep = os.environ.get("REPORT_SHOTS")
        if not keep:
            return
        Path(keep).mkdir(parents=True, exist_ok=True)
        (Path(keep) / f"{name}.png").write_bytes(self.png)
        if self.pdf:
            (Path(keep) / f"{name}.pdf").write_bytes(self.pdf)


def look_at(path: Path, *, width: int = 1200, pdf: bool = False, binary: str | None = None) -> Look:
    """Open ``path`` in a fresh headless Chromium ``width`` pixels wide: what it logged and fetched, its charts, a
    full-page screenshot and, with ``pdf``, the page printed."""
    with Chromium(binary, width=width) as browser:
        browser.open(path.resolve().as_uri())
        charts = browser.charts()
        png = browser.screenshot()
        printed = browser.pdf() if pdf else b""
        page = browser.page  # events recorded while measuring, shooting and printing count too
    declared = len(SVG_TAG.findall(path.read_text(encoding="utf-8")))
    return Look(path, list(page.console_errors), list(page.external_requests), declared, charts, png, printed)


def png_size(png: bytes) -> tuple[int, int]:
    """Width and height of a PNG, from its header."""
    assert png[:8] == b"\x89PNG\r\n\x1a\n", "not a PNG"
    return int.from_bytes(png[16:20], "big"), int.from_bytes(png[20:24], "big")


def pdf_pages(pdf: bytes) -> int:
    return len(re.findall(rb"/Type\s*/Page[^s]", pdf))
