"""A scrape reads every host in one batch each, bounded: a hanging or dead host is stale, the others report."""

from __future__ import annotations

import asyncio
import time

from prometheus_client.parser import text_string_to_metric_families

from wizard.answers.model import parse_answers
from wizard.executors.base import CommandResult, HostUnreachable
from wizard.metrics.collect import Port
from wizard.metrics.exposition import render
from wizard.metrics.scrape import LintItem, Scraper

ANSWERS = parse_answers(
    "version: 1\ncluster: {name: m}\nhosts:\n"
    "  - {name: good, address: 10.0.0.1}\n  - {name: hung, address: 10.0.0.2}\n  - {name: dead, address: 10.0.0.3}\n"
)
PORTS = [Port("ens1f0np0", "mlx5_0", 1, 0), Port("ens1f1np1", "mlx5_1", 1, 1)]


class FakeHost:
    """Answers a batch like a healthy mlx5 host; ``pauses`` grows by 10 per batch."""

    def __init__(self, name: str, *, hang: bool = False, dead: bool = False) -> None:
        self.name, self.hang, self.dead = name, hang, dead
        self.batches: list[list[str]] = []
        self.pauses = 0

    async def run_batch(self, commands, *, sudo=False, timeout_s=None):  # type: ignore[no-untyped-def]
        self.batches.append([" ".join(c) for c in commands])
        if self.dead:
            raise HostUnreachable(self.name, "connection refused")
        if self.hang:
            await asyncio.sleep(60)
        self.pauses += 10
        out = []
        for argv in commands:
            if argv[0] == "ethtool":
                text = f"NIC statistics:\n     rx_prio3_pause: {self.pauses}\n     rx_discards_phy: 0\n"
            else:
                text = "".join(f"{p}:1\n" for p in argv[3:] if p.endswith(("/carrier", "np_cnp_sent")))
            out.append(CommandResult(" ".join(argv), 0, text.rstrip("\n"), "", 0.0, text))
        return out


def _scraper(**hosts: FakeHost) -> Scraper:
    scraper = Scraper(ANSWERS, hosts, timeout_s=0.5)
    scraper.topology = {name: PORTS for name in hosts}
    scraper.lint = [LintItem("mtu", "pass"), LintItem("pfc", "fail", "good ens1f0np0: PFC 00000000")]
    return scraper


def _value(text: str, name: str, **labels: str) -> float | None:
    for fam in text_string_to_metric_families(text):
        for s in fam.samples:
            if s.name == name and all(s.labels.get(k) == v for k, v in labels.items()):
                return s.value
    return None


async def test_a_hanging_host_is_stale_after_the_timeout_while_the_others_report():
    good, hung, dead = FakeHost("good"), FakeHost("hung", hang=True), FakeHost("dead", dead=True)
    scraper = _scraper(good=good, hung=hung, dead=dead)
    start = time.monotonic()
    snap = await scraper.scrape()
    assert time.monotonic() - start < 1.5  # bounded by the 0.5 s timeout, not the 60 s hang
    text = render(snap)
    assert _value(text, "roce_wizard_host_up", host="good") == 1.0
    assert _value(text, "roce_wizard_host_up", host="hung") == 0.0
    assert _value(text, "roce_wizard_host_scrape_stale", host="hung") == 1.0
    assert _value(text, "roce_wizard_host_scrape_error", host="hung", reason="timeout") == 1.0
    assert _value(text, "roce_wizard_host_scrape_error", host="dead", reason="unreachable") == 1.0
    assert _value(text, "roce_port_pfc_pause_frames_total", host="good", netdev="ens1f1np1", priority="3") == 10
    # a stale host shows no port series at all: rate() sees a gap, never a flat line that hides a storm
    assert _value(text, "roce_port_link_up", host="hung") is None
    assert _value(text, "roce_wizard_host_last_success_timestamp_seconds", host="hung") is None


async def test_each_scrape_is_one_batch_per_host_with_every_port_in_it():
    good = FakeHost("good")
    scraper = _scraper(good=good)
    await scraper.scrape()
    snap = await scraper.scrape()
    assert len(good.batches) == 2
    assert [c for c in good.batches[0] if c.startswith("ethtool")] == ["ethtool -S ens1f0np0", "ethtool -S ens1f1np1"]
    # counters move between scrapes: the second scrape shows the second reading
    text = render(snap)
    assert _value(text, "roce_port_pfc_pause_frames_total", host="good", netdev="ens1f0np0", direction="rx") == 20


async def test_lint_becomes_status_gauges_and_the_lossless_priority_is_exported():
    text = render(await _scraper(good=FakeHost("good")).scrape())
    assert _value(text, "roce_wizard_lint_status", check="mtu") == 0.0
    assert _value(text, "roce_wizard_lint_status", check="pfc") == 2.0
    assert _value(text, "roce_wizard_lossless_priority", priority=str(ANSWERS.roce.priority)) == 1.0
    assert _value(text, "roce_wizard_simulated") == 0.0


async def test_a_host_whose_probe_failed_is_unreachable_until_a_refresh_finds_its_ports():
    scraper = _scraper(good=FakeHost("good"))
    scraper.topology.pop("good")
    scraper.probe_errors["good"] = "good: connection refused"
    snap = await scraper.scrape()
    assert snap.hosts["good"].reason == "unreachable" and "refused" in snap.hosts["good"].detail
