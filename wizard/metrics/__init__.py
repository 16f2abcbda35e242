"""Prometheus exporter for the RoCE fabric: per-port PFC/ECN/CNP/discard counters, link state and the lint."""
