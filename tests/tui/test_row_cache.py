"""Pages with 1,000 hosts rebuild the rows of the hosts that changed, not every row on every event: the progress says
which host an event concerned, the facts index re-reads only the facts files discovery reported on."""

from __future__ import annotations

import json
from pathlib import Path

from screens.facts_index import FactsIndex
from screens.fleet import Entry, RowCache
from screens.progress import Progress
from wizard.engine.events import Event

HOSTS = [f"gpu-{i:04d}" for i in range(1, 1001)]


def rows(cache: RowCache, progress: Progress) -> dict[str, Entry]:
    cell = progress.cell
    return cache.entries(
        (id(progress), progress.epoch),
        progress.hosts,
        lambda h: progress.host_revision.get(h),
        lambda h: Entry([h, cell("discovery", h).status], cell("discovery", h).status == "failed", h),
    )


def test_an_event_about_one_host_rebuilds_that_hosts_row_alone() -> None:
    progress = Progress(["discovery"], HOSTS)
    cache = RowCache()
    assert len(rows(cache, progress)) == 1000 and cache.built == 1000
    progress.apply(Event("host_status", {"stage": "discovery", "host": "gpu-0500", "status": "failed", "reason": "x"}))
    shown = rows(cache, progress)
    assert cache.built == 1001, "one row rebuilt"
    assert shown["gpu-0500"].row == ["gpu-0500", "failed"] and shown["gpu-0500"].failed
    assert list(shown) == HOSTS, "in the hosts' order"
    # A stage starting resets every host's checks: every row is rebuilt.
    progress.apply(Event("stage_started", {"stage": "discovery", "title": "Discovery"}))
    rows(cache, progress)
    assert cache.built == 2001


def write_facts(root: Path, host: str, hostname: str) -> None:
    (root / "facts").mkdir(parents=True, exist_ok=True)
    (root / "facts" / f"{host}.json").write_text(json.dumps({"discovery": {"hostname": hostname}}))


def test_the_facts_index_rereads_only_the_hosts_it_is_told_about(tmp_path: Path) -> None:
    for host in ("a", "b"):
        write_facts(tmp_path, host, host)
    index = FactsIndex(tmp_path)
    assert index.refresh(["a", "b"]) and set(index.summaries) == {"a", "b"}
    first = index.stamp("b")
    write_facts(tmp_path, "b", "b-renamed-" + "x" * 40)  # another size: another stamp
    assert not index.refresh(["a", "b"], only=["a"]), "b was not named: its file is not looked at"
    assert index.stamp("b") == first
    assert index.refresh(["a", "b"], only=["b"]) and index.stamp("b") != first
    # A full refresh drops hosts no longer listed.
    before = index.epoch
    index.refresh(["a"])
    assert set(index.summaries) == {"a"} and index.epoch == before + 1
