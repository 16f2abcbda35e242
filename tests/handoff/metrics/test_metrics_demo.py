"""`roce-wizard metrics --once --demo` against the simulated cluster, clean and with faults."""

from __future__ import annotations

from pathlib import Path

import pytest
from prometheus_client.parser import text_string_to_metric_families

from tests.handoff.metrics.conftest import metrics
from wizard.metrics.names import BY_NAME

pytestmark = pytest.mark.slow


def _series(text: str) -> dict[str, dict[tuple[tuple[str, str], ...], float]]:
    out: dict[str, dict[tuple[tuple[str, str], ...], float]] = {}
    for fam in text_string_to_metric_families(text):
        assert fam.samples, fam.name
        for s in fam.samples:
            assert BY_NAME[s.name].kind == fam.type
            out.setdefault(s.name, {})[tuple(sorted(s.labels.items()))] = s.value
    return out


def _by(series: dict, name: str, **labels: str) -> dict[str, float]:  # type: ignore[type-arg]
    """host:netdev (or host) -> value of the samples of ``name`` matching ``labels``."""
    out = {}
    for key, value in series.get(name, {}).items():
        d = dict(key)
        if all(d.get(k) == v for k, v in labels.items()):
            out[f"{d['host']}:{d['netdev']}" if "netdev" in d else d.get("host", d.get("check", ""))] = value
    return out


def test_clean_demo_scrape_reads_every_rail_port_of_both_hosts(prepared):
    _, result = prepared
    s = _series(result.stdout)
    assert _by(s, "roce_wizard_host_up") == {"server1": 1.0, "server2": 1.0}
    assert _by(s, "roce_wizard_host_ports") == {"server1": 4.0, "server2": 4.0}
    link = _by(s, "roce_port_link_up")
    assert len(link) == 8 and set(link.values()) == {1.0}
    assert set(_by(s, "roce_port_pfc_enabled", priority="3").values()) == {1.0}
    assert set(_by(s, "roce_port_pfc_enabled", priority="0").values()) == {0.0}
    assert set(_by(s, "roce_port_mtu_bytes").values()) == {9000.0}
    assert set(_by(s, "roce_port_rdma_state_id").values()) == {4.0}
    assert len(_by(s, "roce_port_pfc_pause_frames_total", priority="3", direction="rx")) == 8
    assert len(_by(s, "roce_port_cnp_sent_total")) == 8
    assert set(_by(s, "roce_wizard_lint_status").values()) == {0.0}
    assert s["roce_wizard_simulated"][()] == 1.0


def test_link_down_and_pfc_off_show_in_the_metrics_and_the_lint(state_copy: Path):
    result = metrics("--demo", "--once", "--state-dir", str(state_copy),
                     "--fault", "server2:link_down=ens2f1np1", "--fault", "server1:pfc_off")  # fmt: skip
    assert result.returncode == 0, result.stderr[-2000:]
    s = _series(result.stdout)
    link = _by(s, "roce_port_link_up")
    # back to back: the peer port on server1 loses its link too
    assert {k for k, v in link.items() if v == 0} == {"server1:ens2f1np1", "server2:ens2f1np1"}
    assert _by(s, "roce_port_rdma_state_id")["server2:ens2f1np1"] == 1.0
    pfc = _by(s, "roce_port_pfc_enabled", priority="3")
    assert {k for k, v in pfc.items() if v == 0} == {f"server1:{n}" for n in
                                                      ("ens1f0np0", "ens1f1np1", "ens2f0np0", "ens2f1np1")}  # fmt: skip
    # without PFC mlx5e counts global pause instead of per-priority pause frames
    assert len(_by(s, "roce_port_global_pause_frames_total", direction="rx")) == 4
    lint = _by(s, "roce_wizard_lint_status")
    assert lint["pfc"] == 2.0 and lint["link"] == 2.0 and lint["mtu"] == 0.0


def test_an_unreachable_host_is_stale_while_the_other_reports(state_copy: Path):
    result = metrics("--demo", "--once", "--state-dir", str(state_copy), "--fault", "server2:unreachable")
    assert result.returncode == 1
    assert "stale: server2 (unreachable)" in result.stderr
    s = _series(result.stdout)
    assert _by(s, "roce_wizard_host_up") == {"server1": 1.0, "server2": 0.0}
    assert _by(s, "roce_wizard_host_scrape_stale") == {"server1": 0.0, "server2": 1.0}
    assert _by(s, "roce_wizard_host_scrape_error") == {"server2": 1.0}
    assert {k.split(":")[0] for k in _by(s, "roce_port_link_up")} == {"server1"}
    assert _by(s, "roce_wizard_lint_status")["hosts"] == 2.0
