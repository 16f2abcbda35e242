"""The helpers behind the scaled pages: host-range compression, byte-for-byte plan grouping, filters, progress
lines, the host finder's ranking and log buffers that shrink per host as the fleet grows."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from screens.fleet import HostFilter, PlanGrouper, compress_hosts, stage_progress_line
from screens.host_finder import SHOWN, find_hosts
from screens.log_buffer import LogBuffers
from screens.progress import Progress
from tests.tui.fleet_fakes import network_plan
from wizard.engine.events import Event

ROOT = Path(__file__).resolve().parents[2]


def test_compress_hosts_joins_runs_of_consecutive_numbers_with_the_same_prefix_and_width() -> None:
    names = ["gpu-001", "gpu-002", "gpu-003", "gpu-007", "gpu-009", "gpu-010", "login", "gpu-0011", "r1n01", "r1n02"]
    assert compress_hosts(names) == "gpu-001..gpu-003, gpu-007, gpu-009..gpu-010, login, gpu-0011, r1n01..r1n02"
    assert compress_hosts([f"gpu-{i:03d}" for i in range(1, 999)]) == "gpu-001..gpu-998"


def test_compress_hosts_with_a_limit_says_how_many_hosts_it_left_out() -> None:
    names = [f"h{i}" for i in range(0, 40, 2)]  # no two consecutive: 20 parts
    assert compress_hosts(names, limit=12) == "h0, h2, h4 (+17 more)"


def test_plans_group_only_when_identical_apart_from_the_host_field() -> None:
    grouper = PlanGrouper()
    plans = {
        "a": network_plan("a", own_file=False),
        "b": network_plan("b", own_file=False),
        "c": network_plan("c", own_file=True),  # its file says "# rails of c": another plan
        "d": None,
    }
    groups = grouper.group(["a", "b", "c", "d"], plans)
    assert [g.hosts for g in groups] == [["a", "b"], ["c"], ["d"]]
    assert groups[2].plan is None
    event = {"impact": "safe", "changes": [], "noop_reason": "already set", "notes": [], "blockers": []}
    groups = grouper.group(["x", "y"], {"x": dict(event, host="x"), "y": dict(event, noop_reason="other")})
    assert [g.hosts for g in groups] == [["x"], ["y"]]


def test_host_filter_needs_every_word_and_failed_only_drops_healthy_rows() -> None:
    flt = HostFilter("leaf-03 swp9", failed_only=False)
    assert flt.matches("gpu-0073 ens1f0np0 leaf-03/swp9", failed=False)
    assert not flt.matches("gpu-0073 ens1f0np0 leaf-03/swp8", failed=False)
    assert not HostFilter("", failed_only=True).matches("anything", failed=False)
    assert HostFilter("", failed_only=True).describe(5, 1000) == "5/1000 hosts (failed only)"


def test_stage_progress_line_counts_each_status_most_telling_first() -> None:
    hosts = [f"h{i}" for i in range(10)]
    progress = Progress(["network"], hosts)
    statuses = ["done"] * 6 + ["failed"] + ["running"] * 2 + ["pending"]
    for host, status in zip(hosts, statuses, strict=True):
        progress.apply(Event("host_status", {"stage": "network", "host": host, "status": status, "reason": ""}))
    assert stage_progress_line(progress, "network") == "network: 6/10 done, 1 failed, 2 running, 1 pending"


def test_progress_counts_failed_checks_as_they_arrive_and_forgets_them_when_the_stage_starts_again() -> None:
    progress = Progress(["roce"], ["a"])
    check = {"stage": "roce", "host": "a", "id": "x", "title": "X", "evidence": "", "fix": None}
    progress.apply(Event("check", dict(check, status="fail")))
    progress.apply(Event("check", dict(check, status="pass")))
    assert progress.cell("roce", "a").fails == 1 and progress.cell("roce", "a").failed
    progress.apply(Event("stage_started", {"stage": "roce", "title": "RoCE"}))
    assert progress.cell("roce", "a").fails == 0 and not progress.cell("roce", "a").failed


def test_host_finder_ranks_whole_names_then_prefixes_then_earliest_matches() -> None:
    hosts = ["gpu-0200", "gpu-1200", "gpu-0020", "x-gpu-0200", "gpu-02001"]
    assert [h for _, h, _ in find_hosts(hosts, "gpu-0200")] == ["gpu-0200", "gpu-02001", "x-gpu-0200"]
    assert [h for _, h, _ in find_hosts(hosts, "200")] == ["gpu-0200", "gpu-1200", "gpu-02001", "x-gpu-0200"]
    assert len(find_hosts([f"gpu-{i:04d}" for i in range(1000)], "gpu")) == SHOWN
    assert len(find_hosts([f"gpu-{i:04d}" for i in range(1000)], "gpu", limit=None)) == 1000


def test_log_buffers_keep_fewer_lines_per_host_on_a_big_fleet() -> None:
    buffers = LogBuffers(keep=2000)
    buffers.set_host_count(2)
    assert buffers.keep == 2000
    for i in range(500):
        buffers.add("h1", f"line {i}")
    buffers.set_host_count(1000)
    assert buffers.keep == 200
    assert buffers.tail("h1") == [f"line {i}" for i in range(300, 500)]


def test_the_scale_benchmark_quick_mode_completes_and_reports_latency_and_memory() -> None:
    """Only that it runs and prints its table (timings depend on the machine; never asserted)."""
    result = subprocess.run(
        [sys.executable, str(ROOT / "bench" / "tui_scale.py"), "--hosts", "64", "--rate", "500"],
        capture_output=True,
        text=True,
        timeout=600,
        cwd=ROOT,
    )
    assert result.returncode == 0, result.stderr[-2000:]
    lines = result.stdout.splitlines()
    assert lines[0].startswith("$ python bench/tui_scale.py --hosts 64")
    assert lines[1].split() == ["page", "keys", "median", "ms", "p95", "ms", "max", "ms", "missed"]
    pages = {line.split()[0] for line in lines[2:-1]}
    assert {"hosts", "discovery", "network", "summary"} <= pages
    assert "peak RSS" in lines[-1] and "network: 39/64 done, 1 failed, 24 running" in lines[-1]


def test_a_leaf_per_rail_numbered_like_the_rails_reads_as_one_span() -> None:
    from screens.facts_index import leaf_group

    assert leaf_group(tuple(f"leaf-r{rail}" for rail in range(8))) == "leaf-r0..r7"
    assert leaf_group(tuple(f"pod2-leaf-r{rail:02d}" for rail in range(8))) == "pod2-leaf-r00..r07"  # pod kept
    assert leaf_group(("ib-sw-1", "ib-sw-2")) == "ib-sw-1..2"  # numbered from 1 on rail 0
    assert leaf_group(("leaf-1",) * 8) == "leaf-1"  # every rail on one switch


def test_a_rail_off_the_pattern_is_named_with_its_leaf_and_unknown_rails_with_a_question_mark() -> None:
    from screens.facts_index import leaf_group

    wrong = tuple("leaf-r4" if rail == 3 else f"leaf-r{rail}" for rail in range(8))  # lab's wrong_leaf on rail 3
    assert leaf_group(wrong) == "leaf-r0..r7, r3: leaf-r4"
    assert leaf_group(tuple("leaf-x9" if rail == 7 else f"leaf-r{rail}" for rail in range(8))) == (
        "leaf-r0..r6, r7: leaf-x9"
    )
    assert leaf_group(("leaf-r0", None, "leaf-r2", None)) == "leaf-r0..r2, r1/r3: ?"
    assert leaf_group(("leaf-r0", *[None] * 7)) == "leaf-r0, 7 rails: ?"
    assert leaf_group((None, None)) is None
    odd = ("leaf-r0", "leaf-r1", "x", "y", "z", "leaf-r5", "leaf-r6", "leaf-r7")
    assert leaf_group(odd) == "leaf-r0..r7, r2: x, r3: y +1 more"


def test_leaves_that_follow_no_pattern_are_listed_distinct_and_cut_after_two() -> None:
    from screens.facts_index import leaf_group

    assert leaf_group(("leaf-a1", "leaf-b7", "c", "d", "e", "f", "g", "h")) == "leaf-a1, leaf-b7 +6"
    assert leaf_group(("spine", "leaf-b7")) == "spine, leaf-b7"


def test_a_host_problem_cell_reads_as_words_with_the_first_failure_first() -> None:
    from screens.fleet import problems_label

    checks = [
        {"title": "link speed", "status": "warn"},
        {"title": "rail 0 cabling (LLDP)", "status": "fail"},
        {"title": "GPU count", "status": "pass"},
        {"title": "MTU", "status": "fail"},
        {"title": "firmware", "status": "warn"},
    ]
    assert problems_label(checks) == "rail 0 cabling (LLDP) +3 more"
    assert problems_label([checks[0]]) == "link speed"
    assert problems_label([checks[2]]) == ""
