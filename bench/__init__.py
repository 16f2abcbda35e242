"""Benchmarks: each prints the figures the README quotes, with its command (``python -m bench.NAME`` or
``python bench/NAME.py`` from the repository root)."""
