"""Tests of the Prometheus exporter, its Grafana dashboard and alert rules (issue 16)."""
