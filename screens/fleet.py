"""Helpers for pages that show hundreds of hosts: filters, host-range compression, plan grouping, progress lines.

Pure Python (no Textual): every function is linear in the hosts it is given, so a key press costs the same
whether a stage has 2 hosts or 1,000.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any

from screens.progress import Progress
from wizard.engine.events import HOST_READ, PROBING
from wizard.engine.step import HostPlan

_NUMBERED = re.compile(r"^(.*?)(\d+)$")
NO_LEAF = "(leaf not known)"


@dataclass(frozen=True, slots=True)
class HostFilter:
    """What a page shows: every row, or only failed ones, narrowed by words that must all appear in the row."""

    text: str = ""
    failed_only: bool = False

    @property
    def words(self) -> list[str]:
        return self.text.lower().split()

    @property
    def active(self) -> bool:
        return bool(self.text.strip()) or self.failed_only

    def matches(self, haystack: str, failed: bool) -> bool:
        """``haystack`` is the row's searchable text, lower-cased (host, ports, checks, switch names)."""
        if self.failed_only and not failed:
            return False
        return all(word in haystack for word in self.words)

    def describe(self, shown: int, total: int, noun: str = "hosts") -> str:
        parts = []
        if self.failed_only:
            parts.append("failed only")
        if self.text.strip():
            parts.append(f"matching '{self.text.strip()}'")
        return f"{shown}/{total} {noun}" + (f" ({', '.join(parts)})" if parts else "")


def compress_hosts(names: Iterable[str], limit: int = 0) -> str:
    """gpu-001, gpu-002, gpu-003, gpu-007 -> 'gpu-001..gpu-003, gpu-007' (runs of consecutive numbers with the same
    prefix and width); ``limit`` > 0 cuts the list after that many characters and says how many hosts are left."""
    parts: list[str] = []
    counts: list[int] = []
    run: list[str] = []
    last: tuple[str, int, int] | None = None
    for name in names:
        m = _NUMBERED.match(name)
        key = (m.group(1), int(m.group(2)), len(m.group(2))) if m else None
        if run and key and last and key[0] == last[0] and key[2] == last[2] and key[1] == last[1] + 1:
            run.append(name)
        else:
            if run:
                parts.append(run[0] if len(run) == 1 else f"{run[0]}..{run[-1]}")
                counts.append(len(run))
            run = [name]
        last = key
    if run:
        parts.append(run[0] if len(run) == 1 else f"{run[0]}..{run[-1]}")
        counts.append(len(run))
    if limit <= 0:
        return ", ".join(parts)
    out, used = "", 0
    for part, count in zip(parts, counts, strict=True):
        candidate = f"{out}, {part}" if out else part
        if len(candidate) > limit and out:
            return f"{out} (+{sum(counts) - used} more)"
        out, used = candidate, used + count
    return out


def plan_key(plan: HostPlan | dict[str, Any] | None) -> str | None:
    """The plan as text, without the host field: two hosts share a key only when their plans are the same byte for
    byte (commands, file contents, what the files held before). Nothing is rewritten, so a plan that names its own
    host or addresses is never grouped with another."""
    if plan is None:
        return None
    if isinstance(plan, HostPlan):
        return plan.model_dump_json(exclude={"host"})
    return json.dumps({k: v for k, v in plan.items() if k != "host"}, sort_keys=True, default=str)


@dataclass(slots=True)
class PlanGroup:
    """One distinct plan and the hosts that have exactly it (None: hosts not planned yet)."""

    plan: HostPlan | dict[str, Any] | None
    hosts: list[str] = field(default_factory=list)


class PlanGrouper:
    """Groups plans by ``plan_key``; keys are remembered per plan object, so a redraw re-serialises only new plans."""

    def __init__(self) -> None:
        self._keys: dict[int, tuple[object, str | None]] = {}

    def key(self, plan: HostPlan | dict[str, Any] | None) -> str | None:
        if plan is None:
            return None
        known = self._keys.get(id(plan))
        if known is not None and known[0] is plan:
            return known[1]
        key = plan_key(plan)
        self._keys[id(plan)] = (plan, key)
        return key

    def group(self, hosts: list[str], plans: dict[str, HostPlan | dict[str, Any] | None]) -> list[PlanGroup]:
        """Groups in the order of each group's first host; the cache keeps only plans still shown."""
        groups: dict[str | None, PlanGroup] = {}
        live: dict[int, tuple[object, str | None]] = {}
        for host in hosts:
            plan = plans.get(host)
            key = self.key(plan)
            if plan is not None:
                live[id(plan)] = self._keys[id(plan)]
            group = groups.get(key)
            if group is None:
                group = groups[key] = PlanGroup(plan)
            group.hosts.append(host)
        self._keys = live
        return list(groups.values())


def stage_counts(progress: Progress, stage: str) -> dict[str, int]:
    """How many hosts are in each status; "waiting" counts the pending hosts that wait for the operator, and a
    running host is "probing" until its probe answered, then "read" until the stage goes on (plan, changes)."""
    counts: dict[str, int] = {}
    cells = progress.cells
    for host in progress.hosts:
        cell = cells.get((stage, host))
        if cell is None:
            status = "pending"
        elif cell.status == "running":
            status = "probing" if cell.reason == PROBING else "read" if cell.reason == HOST_READ else "running"
        else:
            status = "waiting" if cell.status == "pending" and cell.reason else cell.status
        counts[status] = counts.get(status, 0) + 1
    return counts


def duration(seconds: float) -> str:
    """'45 s', '3 min 20 s', '1 h 05 min': an ETA a reader takes in at a glance."""
    whole = max(0, round(seconds))
    if whole < 60:
        return f"{whole} s"
    if whole < 3600:
        return f"{whole // 60} min {whole % 60:02d} s"
    return f"{whole // 3600} h {whole % 3600 // 60:02d} min"


def stage_progress_line(progress: Progress, stage: str, now: float | None = None) -> str:
    """'discovery: 0/1000 done, 412 read, 3 failed, 585 probing, about 1 min 20 s left' (the words present, most
    telling first; the time left comes from the rate hosts finished their probe so far in this session)."""
    counts = stage_counts(progress, stage)
    total = sum(counts.values())
    done = counts.pop("done", 0)
    order = ("read", "failed", "running", "probing", "waiting", "pending", "skipped")
    rest = [f"{counts[word]} {word}" for word in order if counts.get(word)]
    rest += [f"{n} {word}" for word, n in sorted(counts.items()) if word not in order]
    clock = progress.clocks.get(stage)
    eta = clock.eta_s(counts.get("probing", 0), now) if clock is not None else None
    if eta is not None:
        rest.append(f"about {duration(eta)} left")
    return f"{stage}: {done}/{total} done" + "".join(f", {part}" for part in rest)


def host_failed(progress: Progress, host: str, stages: Iterable[str]) -> bool:
    """Failed (or waiting for the operator) in any of the stages, or a failed check there."""
    return any(progress.cell(stage, host).failed for stage in stages)


@dataclass(slots=True)
class Entry:
    """One host's row, whether it counts as failed, and the lower-cased text a filter searches."""

    row: list[Any]
    failed: bool
    haystack: str


class RowCache:
    """A page's rows per host, rebuilt only for hosts whose inputs moved (at 1,000 hosts, rebuilding every row on
    each event of a running stage made a key pressed meanwhile wait for it).

    ``whole`` changes when every row may have (hosts replaced, progress reloaded, a stage started); ``stamp(host)``
    is what one host's row was built from (its progress revision, its facts file, its connection report)."""

    def __init__(self) -> None:
        self._whole: Any = None
        self._stamps: dict[str, Any] = {}
        self._entries: dict[str, Entry] = {}
        self.built = 0
        """Rows built so far (tests check that a host's event rebuilds that host's row alone)."""

    def entries(
        self, whole: Any, hosts: Iterable[str], stamp: Callable[[str], Any], build: Callable[[str], Entry]
    ) -> dict[str, Entry]:
        if whole != self._whole:
            self._whole, self._stamps, self._entries = whole, {}, {}
        stamps, cached, out = self._stamps, self._entries, {}
        for host in hosts:
            now = stamp(host)
            entry = cached.get(host)
            if entry is None or stamps.get(host) != now:
                entry = cached[host] = build(host)
                stamps[host] = now
                self.built += 1
            out[host] = entry
        return out

    def for_hosts(self, progress: Progress, index: Any, build: Callable[[str], Entry]) -> dict[str, Entry]:
        """The rows of a page that lists ``progress.hosts`` from their progress and their discovery facts (``index``:
        the app's FactsIndex): a host's row is rebuilt when either moved."""
        revision = progress.host_revision
        return self.entries(
            (id(progress), progress.epoch, id(index), index.epoch),
            progress.hosts,
            lambda host: (revision.get(host), index.stamp(host)),
            build,
        )


def filtered_rows(
    entries: dict[str, Entry],
    flt: HostFilter,
    grouped: bool,
    leaf_of: Callable[[str], str | None],
    header: Callable[[str, list[str], int], list[Any]],
) -> tuple[list[list[Any]], list[str | None], set[int], int]:
    """(rows, row keys, indexes of leaf header rows, hosts shown): the entries the filter lets through, in order, or
    grouped by leaf under a header row each (``header(leaf, hosts, failed)``; its key is None)."""
    shown = [h for h, e in entries.items() if flt.matches(e.haystack, e.failed)] if flt.active else list(entries)
    if not grouped:
        return [entries[h].row for h in shown], list(shown), set(), len(shown)
    rows: list[list[Any]] = []
    keys: list[str | None] = []
    headers: set[int] = set()
    for leaf, hosts in by_leaf(shown, leaf_of):
        headers.add(len(rows))
        rows.append(header(leaf, hosts, sum(1 for h in hosts if entries[h].failed)))
        keys.append(None)
        rows.extend(entries[h].row for h in hosts)
        keys.extend(hosts)
    return rows, keys, headers, len(shown)


def leaf_count(hosts: list[str], failed: int) -> str:
    """'32 hosts, 1 failed' for a leaf's header row."""
    words = f"{len(hosts)} host" + ("" if len(hosts) == 1 else "s")
    return words + (f", {failed} failed" if failed else "")


def by_leaf(hosts: list[str], leaf_of: Callable[[str], str | None]) -> list[tuple[str, list[str]]]:
    """Hosts grouped by their leaves across rails (``leaf_of``: facts_index.leaf_group's phrase, 'leaf-r0..r7', so
    hosts cabled alike share a group and a mis-cabled one stands apart), groups in name order, hosts without a known
    leaf last."""
    groups: dict[str, list[str]] = {}
    for host in hosts:
        groups.setdefault(leaf_of(host) or NO_LEAF, []).append(host)
    return sorted(groups.items(), key=lambda item: (item[0] == NO_LEAF, item[0]))


def problems_label(checks: list[dict[str, Any]]) -> str:
    """A host's failed and warned checks in a table cell, in words: the first failure (else warning) by its title,
    then how many more ('rail 0 cabling (LLDP) +3 more'); '' when none."""
    problems = sorted((c for c in checks if c.get("status") in ("fail", "warn")), key=lambda c: c["status"] != "fail")
    if not problems:
        return ""
    more = len(problems) - 1
    return str(problems[0].get("title", "?")) + (f" +{more} more" if more else "")
