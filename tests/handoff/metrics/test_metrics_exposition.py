"""The exposition is valid Prometheus text: typed families, counters ending in _total, names from the catalogue."""

from __future__ import annotations

import re

from prometheus_client.parser import text_string_to_metric_families

from wizard.metrics.collect import HostReading, Port, PortReading
from wizard.metrics.exposition import render
from wizard.metrics.names import BY_NAME, CATALOGUE
from wizard.metrics.scrape import LintItem, Snapshot

PORT = Port("ens1f0np0", "mlx5_0", 1, 0)


def _snapshot() -> Snapshot:
    stats = {"rx_prio3_pause": 5, "tx_prio3_pause": 2, "rx_discards_phy": 1, "rx_prio3_discards": 0}
    sysfs = {"/sys/class/net/ens1f0np0/carrier": "1", "/sys/class/infiniband/mlx5_0/ports/1/state": "4: ACTIVE"}
    return Snapshot(
        hosts={
            "a": HostReading("a", [PortReading(PORT, stats, sysfs)], finished_at=1.0e9),
            "b": HostReading("b", reason="timeout", detail="b: no answer", duration_s=5.0),
        },
        priority=3,
        simulated=True,
        lint=[LintItem("mtu", "pass"), LintItem("speed", "warn"), LintItem("pfc", "fail")],
        lint_time=1.0e9,
        last_success={"a": 1.0e9},
    )


def test_catalogue_names_follow_prometheus_conventions():
    for m in CATALOGUE:
        assert re.fullmatch(r"roce_(port|wizard)_[a-z0-9_]+", m.name), m.name
        assert m.name.endswith("_total") == (m.kind == "counter"), m.name
        assert not re.search(r"_(ms|us|microseconds|mbps|kb)(_|$)", m.name), m.name  # base units only


def test_rendered_text_parses_and_every_family_has_the_catalogue_type():
    families = list(text_string_to_metric_families(render(_snapshot())))
    seen = {}
    for fam in families:
        for s in fam.samples:
            meta = BY_NAME[s.name]
            assert fam.type == meta.kind, s.name
            assert set(s.labels) == set(meta.labels), s.name
            seen[(s.name, tuple(sorted(s.labels.items())))] = s.value
    port = (("host", "a"), ("netdev", "ens1f0np0"), ("rail", "0"), ("rdma_device", "mlx5_0"))
    key = tuple(sorted((*port, ("direction", "rx"), ("priority", "3"))))
    assert seen[("roce_port_pfc_pause_frames_total", key)] == 5
    assert seen[("roce_wizard_lint_status", (("check", "speed"),))] == 1.0
    assert seen[("roce_wizard_lint_status", (("check", "pfc"),))] == 2.0
    assert seen[("roce_wizard_host_scrape_error", (("host", "b"), ("reason", "timeout")))] == 1.0
    assert seen[("roce_wizard_simulated", ())] == 1.0
    assert not [k for k in seen if k[0].startswith("roce_port_") and ("host", "b") in k[1]]


def test_no_series_is_emitted_twice():
    text = render(_snapshot())
    lines = [line for line in text.splitlines() if line and not line.startswith("#")]
    assert len(lines) == len({line.rsplit(" ", 1)[0] for line in lines})
