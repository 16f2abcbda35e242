"""The shipped alert rules and Grafana dashboard: checked by promtool, and only using names the exporter emits."""

from __future__ import annotations

import json
import re
import shutil
import subprocess
from pathlib import Path

import pytest
import yaml

from wizard.metrics.names import BY_NAME

ASSETS = Path(__file__).parents[3] / "assets" / "monitoring"
RULES = ASSETS / "prometheus-alerts.yaml"
DASHBOARD = ASSETS / "grafana-dashboard.json"
PROMTOOL = shutil.which("promtool")
needs_promtool = pytest.mark.skipif(PROMTOOL is None, reason="promtool not installed (apt-get install prometheus)")
PORT = 'job="roce",instance="x",host="server1",netdev="ens1f0np0",rdma_device="mlx5_0",rail="0"'


def _alerts() -> dict[str, str]:
    rules = yaml.safe_load(RULES.read_text())["groups"][0]["rules"]
    return {r["alert"]: r["expr"] for r in rules}


def _dashboard_exprs() -> list[str]:
    return [t["expr"] for p in json.loads(DASHBOARD.read_text())["panels"] for t in p["targets"]]


def _metric_names(expr: str) -> set[str]:
    # label values sit in quotes and template variables start with $: neither is a metric name
    bare = re.sub(r'"[^"]*"', '""', expr)
    return set(re.findall(r"\broce_[a-z0-9_]+\b", bare))


@pytest.mark.parametrize("source", ["alerts", "dashboard"])
def test_every_expression_uses_only_metric_names_the_exporter_emits(source: str):
    exprs = list(_alerts().values()) if source == "alerts" else _dashboard_exprs()
    assert exprs
    for expr in exprs:
        names = _metric_names(expr)
        assert names, expr
        assert names <= set(BY_NAME), f"{expr}: unknown {names - set(BY_NAME)}"


def test_the_alerts_cover_pause_storms_lossless_drops_link_flaps_and_broken_consistency():
    alerts = _alerts()
    assert {"RocePfcPauseStorm", "RoceLosslessPriorityDrops", "RoceLinkFlapping", "RoceConsistencyBroken"} <= set(
        alerts
    )
    assert "roce_wizard_lossless_priority" in alerts["RoceLosslessPriorityDrops"]


def test_the_dashboard_has_a_host_variable_and_the_panels_the_issue_asks_for():
    dash = json.loads(DASHBOARD.read_text())
    host = next(v for v in dash["templating"]["list"] if v["name"] == "host")
    assert "roce_wizard_host_up" in host["definition"]
    used = set().union(*(_metric_names(e) for e in _dashboard_exprs()))
    for name in ("roce_port_pfc_pause_frames_total", "roce_port_cnp_sent_total", "roce_port_ecn_marked_packets_total",
                 "roce_port_discards_total", "roce_port_link_up", "roce_wizard_lint_status"):  # fmt: skip
        assert name in used, name
    ids = [p["id"] for p in dash["panels"]]
    assert len(ids) == len(set(ids))


@needs_promtool
def test_promtool_accepts_the_alert_rules():
    result = subprocess.run([PROMTOOL, "check", "rules", str(RULES)], capture_output=True, text=True)
    assert result.returncode == 0, result.stdout + result.stderr
    assert "SUCCESS: 9 rules found" in result.stdout


@needs_promtool
def test_promtool_parses_every_dashboard_expression(tmp_path: Path):
    # Grafana's variables replaced by what they stand for, each expression checked as a recording rule
    rules = [{"record": f"roce:dashboard_expr_{i}", "expr": e.replace("$__rate_interval", "5m").replace("$host", ".*")}
             for i, e in enumerate(_dashboard_exprs())]  # fmt: skip
    path = tmp_path / "dashboard-rules.yaml"
    path.write_text(yaml.safe_dump({"groups": [{"name": "dashboard", "rules": rules}]}))
    result = subprocess.run([PROMTOOL, "check", "rules", str(path)], capture_output=True, text=True)
    assert result.returncode == 0, result.stdout + result.stderr


def _case(series: list[tuple[str, str]], alert: str, eval_time: str, expected: list[str]) -> dict:  # type: ignore[type-arg]
    return {
        "interval": "1m",
        "input_series": [{"series": s, "values": v} for s, v in series],
        "promql_expr_test": [
            {
                "expr": _alerts()[alert],
                "eval_time": eval_time,
                "exp_samples": [
                    {"labels": labels, "value": float(value)} for labels, value in (e.rsplit(" ", 1) for e in expected)
                ],
            }
        ],  # fmt: skip
    }


@needs_promtool
def test_promtool_unit_tests_fire_each_alert_on_its_fault_and_stay_quiet_when_healthy(tmp_path: Path):
    prio = 'job="roce",instance="x"'
    tests = [
        # paused 45 s of every minute: 75 % of the time
        _case([(f'roce_port_pfc_pause_duration_seconds_total{{{PORT},priority="3",direction="tx"}}', "0+45x12")],
              "RocePfcPauseStorm", "10m", [f'{{{PORT},priority="3",direction="tx"}} 0.75']),
        _case([(f'roce_port_pfc_pause_duration_seconds_total{{{PORT},priority="3",direction="tx"}}', "0+6x12")],
              "RocePfcPauseStorm", "10m", []),
        # drops on priority 3 (lossless) alert; drops on priority 0 (lossy) do not
        _case([(f'roce_port_priority_rx_discards_total{{{PORT},priority="3"}}', "0+1x12"),
               (f'roce_port_priority_rx_discards_total{{{PORT},priority="0"}}', "0+100x12"),
               (f'roce_wizard_lossless_priority{{{prio},priority="3"}}', "1x12")],
              "RoceLosslessPriorityDrops", "10m", [f'{{{PORT},priority="3"}} 5']),
        _case([(f'roce_port_priority_rx_discards_total{{{PORT},priority="3"}}', "0x12"),
               (f'roce_wizard_lossless_priority{{{prio},priority="3"}}', "1x12")],
              "RoceLosslessPriorityDrops", "10m", []),
        _case([(f"roce_port_carrier_changes_total{{{PORT}}}", "0+1x20")], "RoceLinkFlapping", "20m",
              [f"{{{PORT}}} 15"]),
        _case([(f"roce_port_carrier_changes_total{{{PORT}}}", "4x20")], "RoceLinkFlapping", "20m", []),
        _case([(f'roce_wizard_lint_status{{{prio},check="pfc"}}', "2x5"),
               (f'roce_wizard_lint_status{{{prio},check="mtu"}}', "0x5")],
              "RoceConsistencyBroken", "3m", [f'roce_wizard_lint_status{{{prio},check="pfc"}} 2']),
        _case([(f'roce_port_pfc_enabled{{{PORT},priority="3"}}', "0x5"),
               (f'roce_port_pfc_enabled{{{PORT},priority="0"}}', "0x5"),
               (f'roce_wizard_lossless_priority{{{prio},priority="3"}}', "1x5")],
              "RocePfcDisabledOnLosslessPriority", "3m", [f'{{{PORT},priority="3"}} 0']),
        _case([(f"roce_port_link_up{{{PORT}}}", "0x5")], "RoceLinkDown", "3m", [f"roce_port_link_up{{{PORT}}} 0"]),
    ]  # fmt: skip
    path = tmp_path / "alerts-test.yaml"
    path.write_text(yaml.safe_dump({"rule_files": [str(RULES)], "evaluation_interval": "1m", "tests": tests}))
    result = subprocess.run([PROMTOOL, "test", "rules", str(path)], capture_output=True, text=True)
    assert result.returncode == 0, result.stdout + result.stderr
    assert "SUCCESS" in result.stdout
