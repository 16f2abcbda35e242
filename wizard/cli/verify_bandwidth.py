"""The short same-rail bandwidth check ``verify`` ends with: every rail of every host under load, in minutes.

Checks read state; only traffic shows a rail that is configured right and still slow (a cable that trained low, a
switch port without PFC, a PCIe link that fell back). bwtest measures all pairs, which grows with the number of
hosts (N-1 rounds); verify pairs each host with its ring neighbours instead (wizard/validate/schedule.py
ring_rounds: at most three rounds of disjoint pairs, every rail of a pair at once, 2 s each), so the check takes
the same time on 2 hosts and on 1,000. The pass line and the causes are bwtest's own (wizard/validate/verdict.py).
"""

from __future__ import annotations

from typing import Any

SECONDS = 2.0


async def bandwidth_check(session: Any, *, simulated: bool) -> tuple[bool, list[str]]:
    """(passed, lines naming what failed) for the answers' hosts; saves nothing."""
    from wizard.validate.run import Options, Validation

    options = Options(sweep=False, latency=False, nccl=False, together_s=SECONDS, neighbours_only=True)
    report = await Validation(session.answers, session.executors, simulated=simulated, options=options).run()
    lines = []
    for x in report.together:
        if x.status != "pass":
            ratio = f" ({x.ratio:.0%} of {x.expected_gbps:.0f})" if x.ratio is not None else ""
            rate = f"{x.gbps:.1f} Gb/s{ratio}" if x.gbps is not None else "no result"
            lines.append(f"{x.label}: {rate}")
    lines += [f"cause: {cause}" for cause in report.causes]
    rails = len(report.together)
    summary = f"same-rail bandwidth: {rails - sum(x.status != 'pass' for x in report.together)}/{rails} rail runs pass"
    return report.verdict == "pass", [summary, *lines]
