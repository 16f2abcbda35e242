"""Headless faces of the event stream: human progress on stderr, JSON lines on stdout."""

from __future__ import annotations

import json
import sys
from typing import TextIO

from wizard.answers.ranges import HOSTS_NAMED, hosts_text
from wizard.engine.events import Event

_MARK = {"done": "ok", "failed": "FAILED", "pending": "waiting", "skipped": "skipped", "running": ".."}
_CHECK_MARK = {"pass": "+", "warn": "!", "fail": "x", "skip": "-"}


class JsonLinesReporter:
    """One JSON object per event on stdout; nothing else ever goes to stdout in --json mode."""

    _encode = json.JSONEncoder(default=str).encode  # json.dumps(..., default=str) builds an encoder per call

    def __init__(self, stream: TextIO | None = None) -> None:
        self.stream = stream or sys.stdout
        self._lines: list[str] = []  # output events not yet written
        self._flush_on: object = None  # the loop a flush is scheduled on

    def __call__(self, event: Event) -> None:
        text = self._encode(event.to_json_dict()) + "\n"
        if event.kind == "output":
            self._lines.append(text)
            self._flush_soon()
            return
        self._flush()
        self.stream.write(text)
        self.stream.flush()

    def _flush_soon(self) -> None:
        """Output lines are written and flushed once per event-loop turn, not one write(2) each: a batch of probes
        hands over thousands of lines in one turn (at 256 hosts the per-line writes were a tenth of the engine's
        time). Every other event, and so the end of each command, is written and flushed at once, in order."""
        import asyncio  # already loaded whenever a loop runs

        try:
            loop = asyncio.get_running_loop()
        except RuntimeError:  # no loop (a direct call): nothing would flush later
            self._flush()
            return
        if self._flush_on is not loop:
            self._flush_on = loop
            loop.call_soon(self._flush)

    def _flush(self) -> None:
        self._flush_on = None
        if self._lines:
            self.stream.write("".join(self._lines))
            self._lines.clear()
            self.stream.flush()


class HumanReporter:
    """Readable progress on stderr: stage headers, per-host outcomes, plans, failed and warned checks."""

    def __init__(self, stream: TextIO | None = None, *, simulated: bool = False, verbose: bool = False) -> None:
        self.stream = stream or sys.stderr
        self.tag = "[simulated] " if simulated else ""
        self.verbose = verbose
        self.simulated_hosts: set[str] = set()

    def _say(self, text: str) -> None:
        self.stream.write(f"{self.tag}{text}\n")
        self.stream.flush()

    def __call__(self, event: Event) -> None:
        d = event.data
        kind = event.kind
        if kind == "host_simulated":
            if not self.tag:
                self._say(f"   {d['host']}: this host reports that it is SIMULATED (a roce-wizard lab host)")
            self.simulated_hosts.add(d["host"])
            return
        if not self.tag and d.get("host") in self.simulated_hosts:
            d = {**d, "host": f"{d['host']} [simulated]"}
        if kind == "run_started":
            hosts = d["hosts"]
            # "hosts a, b, c" for a few; "1024 hosts (gpu-0001 .. gpu-1024)" for a fleet
            named = f"hosts {hosts_text(hosts)}" if len(hosts) <= HOSTS_NAMED else hosts_text(hosts)
            self._say(f"roce-wizard: cluster {d['cluster']}, {named}; stages {', '.join(d['stages'])}")
        elif kind == "stage_started":
            self._say(f"== {d['stage']}: {d['title']}")
        elif kind == "plan" and d["changes"]:
            for change in d["changes"]:
                self._say(f"   {d['host']}: plan [{change['impact']}] {change['summary']}")
        elif kind == "summary":
            for line in d["lines"]:
                self._say(f"   {d['host']}: {line}")
        elif kind == "change_started":
            self._say(f"   {d['host']}: applying {d['summary']}")
        elif kind == "check" and (d["status"] in ("fail", "warn") or self.verbose):
            fix = f" -> fix: {d['fix']}" if d.get("fix") and d["status"] != "pass" else ""
            self._say(f"   {d['host']}: [{_CHECK_MARK[d['status']]}] {d['title']}: {d['evidence']}{fix}")
        elif kind == "host_status" and d["status"] != "running":
            self._say(f"   {d['host']}: {_MARK.get(d['status'], d['status'])} - {d['reason']}")
        elif kind == "output" and self.verbose:
            for line in d["lines"] if "lines" in d else [d["line"]]:
                self._say(f"   {d['host']} | {line}")
        elif kind == "run_finished" and not d.get("interrupted"):  # a stopped run: the CLI's one line says it
            verdict = "all stages verified" if d["exit_code"] == 0 else "not everything is verified"
            self._say(f"roce-wizard: {verdict} (exit {d['exit_code']}); state and logs in {d['state_dir']}")
