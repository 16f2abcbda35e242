"""The whole-run report: every stage on every host, checks, timings and the bandwidth results, as HTML or JSON."""
