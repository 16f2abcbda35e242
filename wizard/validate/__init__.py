"""Fabric validation: perftest per rail and all pairs, latency, NCCL, consistency lint, counters, doctor, reports."""
