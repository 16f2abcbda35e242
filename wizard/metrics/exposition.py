"""Snapshot -> Prometheus metric families (prometheus_client), a Collector for the HTTP server and the text
exposition ``--once`` prints."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Callable, Iterator

from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily, Metric
from prometheus_client.registry import Collector, CollectorRegistry

from wizard.metrics.collect import Sample, port_samples
from wizard.metrics.names import BY_NAME, CATALOGUE, LINT_STATUS
from wizard.metrics.scrape import Snapshot


def samples(snap: Snapshot) -> list[Sample]:
    """Every sample of the snapshot; a stale host shows only its host-level gauges, never old port values (a gap
    is what Prometheus' rate() must see, not a flat line that hides a pause storm)."""
    out: list[Sample] = []
    for name, r in snap.hosts.items():
        host = {"host": name}
        out += [
            ("roce_wizard_host_up", host, float(r.up)),
            ("roce_wizard_host_scrape_stale", host, float(not r.up)),
            ("roce_wizard_host_scrape_duration_seconds", host, r.duration_s),
            ("roce_wizard_host_ports", host, float(len(r.ports))),
        ]
        if r.reason is not None:
            out.append(("roce_wizard_host_scrape_error", {**host, "reason": r.reason}, 1.0))
        if name in snap.last_success:
            out.append(("roce_wizard_host_last_success_timestamp_seconds", host, snap.last_success[name]))
        for reading in r.ports:
            out += port_samples(name, reading, snap.priority)
    for item in snap.lint or []:
        out.append(("roce_wizard_lint_status", {"check": item.id}, float(LINT_STATUS.get(item.status, 0))))
    if snap.lint_time is not None:
        out.append(("roce_wizard_lint_last_run_timestamp_seconds", {}, snap.lint_time))
    out += [
        ("roce_wizard_lossless_priority", {"priority": str(snap.priority)}, 1.0),
        ("roce_wizard_simulated", {}, float(snap.simulated)),
        ("roce_wizard_scrape_duration_seconds", {}, snap.duration_s),
    ]
    return out


def families(snap: Snapshot) -> list[Metric]:
    """The snapshot's samples grouped into typed families, in catalogue order; duplicates keep the first."""
    grouped: dict[str, dict[tuple[str, ...], float]] = defaultdict(dict)
    for name, labels, value in samples(snap):
        meta = BY_NAME[name]  # a name missing from the catalogue is a bug: fail loudly
        key = tuple(labels.get(label, "") for label in meta.labels)
        grouped[name].setdefault(key, value)
    out: list[Metric] = []
    for meta in CATALOGUE:
        if meta.name not in grouped:
            continue
        cls = CounterMetricFamily if meta.kind == "counter" else GaugeMetricFamily
        fam = cls(meta.family, meta.help, labels=list(meta.labels))
        for key, value in grouped[meta.name].items():
            fam.add_metric(list(key), value)
        out.append(fam)
    return out


class RoceCollector(Collector):
    """Asks ``source`` for a snapshot on every collect (every HTTP scrape)."""

    def __init__(self, source: Callable[[], Snapshot]) -> None:
        self.source = source

    def describe(self) -> list[Metric]:
        return []  # registering must not scrape the cluster

    def collect(self) -> Iterator[Metric]:
        yield from families(self.source())


def registry_for(source: Callable[[], Snapshot]) -> CollectorRegistry:
    registry = CollectorRegistry(auto_describe=False)
    registry.register(RoceCollector(source))
    return registry


def render(snap: Snapshot) -> str:
    """The text exposition format (what ``/metrics`` serves) of one snapshot."""
    from prometheus_client import generate_latest

    return generate_latest(registry_for(lambda: snap)).decode("utf-8")
