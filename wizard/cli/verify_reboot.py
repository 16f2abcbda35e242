"""``roce-wizard verify --reboot``: reboot the hosts in waves and name what did not survive, and why.

First the stages are verified as they are: a host that already fails would only show the same failure after its
reboot, and proves nothing about persistence, so nothing is rebooted until every stage holds. Then the waves
(wizard/engine/reboot_waves.py: at most --max-unavailable hosts, one serving group at a time, the entry host last)
are rebooted one after the other (wizard/engine/reboot_check.py), each verified before the next starts.
"""

from __future__ import annotations

import argparse
import json
import sys
from typing import Any

from wizard.engine.reboot_check import HostReboot, rolling_reboot
from wizard.engine.reboot_waves import Serving, plan_waves
from wizard.errors import EXIT_OK

EXIT_BROKEN = 1


def serving(runner: Any) -> Serving | None:
    """The inference service's groups and entry host, where the inference stage is done somewhere."""
    done = [h.name for h in runner.answers.hosts if runner.store.host(h.name).stage("inference").status == "done"]
    if "inference" not in runner.steps or not done or runner.answers.inference is None:
        return None
    from steps.inference.entry import entry_host
    from steps.inference.layout import build_layout

    view = runner.view()
    try:
        layout = build_layout(view)
    except Exception:  # noqa: BLE001 - without a layout every host is its own unit: still at most N at once
        return None
    groups = [[n.host for n in group] for group in layout.groups()]
    return Serving(groups=groups, entry=entry_host(view, layout) if len(groups) > 1 else None)


def confirmed(args: argparse.Namespace, waves: list[list[str]], tag: str) -> bool:
    """Rebooting hosts is disruptive: --yes, or a yes typed at the terminal (verify.main refused neither)."""
    if args.yes:
        return True
    hosts = sum(len(w) for w in waves)
    return input(f"{tag}Reboot {hosts} host(s) in {len(waves)} wave(s)? [y/N] ").strip().lower() in ("y", "yes")


async def reboot_check(args: argparse.Namespace, session: Any, stages: list[str], emit: Any) -> int:
    """The rolling reboot after a passing verify; prints per host what survived and what did not."""
    tag = "[simulated] " if args.demo else ""
    hosts = [h.name for h in session.answers.hosts]
    waves = plan_waves(hosts, args.max_unavailable, serving(session.runner))
    emit(f"rolling reboot: {len(hosts)} host(s) in {len(waves)} wave(s) of at most {args.max_unavailable}: "
         + "; ".join(", ".join(w) for w in waves))  # fmt: skip
    if not confirmed(args, waves, tag):
        return EXIT_BROKEN
    results, left = await rolling_reboot(session, stages, waves, boot_timeout_s=args.boot_timeout, emit=emit)
    _print(results, left, stages, as_json=args.json, tag=tag)
    return EXIT_OK if all(r.held for r in results) and not left else EXIT_BROKEN


def _print(results: list[HostReboot], left: list[list[str]], stages: list[str], *, as_json: bool, tag: str) -> None:
    if as_json:
        for r in results:
            print(json.dumps({
                "host": r.host, "wave": r.wave, "rebooted": r.rebooted, "came_back": r.came_back, "seconds": r.seconds,
                "last_seen": r.last_seen or None, "lost": r.lost, "causes": r.causes,
            }))  # fmt: skip
    lines: list[str] = []
    for r in results:
        if not r.rebooted:
            lines.append(f"{tag}{r.host}: not rebooted: {r.last_seen}")
            continue
        if not r.came_back:
            lines.append(f"{tag}{r.host}: did not come back from the reboot: {r.last_seen}")
            continue
        if not r.lost:
            lines.append(f"{tag}{r.host}: back after {r.seconds:.0f} s; {', '.join(stages)} survived the reboot")
            continue
        for stage, checks in r.lost.items():
            lines.append(f"{tag}{r.host}: {stage} did not survive the reboot")
            for c in checks:
                lines.append(f"{tag}    {c.get('title', c.get('id', ''))}: {c.get('evidence', '')}")
            for cause in r.causes.get(stage, []):
                lines.append(f"{tag}    why: {cause}")
    bad = [r.host for r in results if not r.held]
    if left:
        rest = [h for w in left for h in w]
        lines.append(
            f"{tag}roce-wizard: verify --reboot stopped before wave {results[-1].wave + 1}: "
            f"{', '.join(bad)} did not hold, so {len(rest)} host(s) were not rebooted: {', '.join(rest)}"
        )
    elif bad:
        lines.append(f"{tag}roce-wizard: verify --reboot: {len(bad)} of {len(results)} host(s) did not hold: "
                     f"{', '.join(bad)}")  # fmt: skip
    else:
        lines.append(f"{tag}roce-wizard: verify --reboot: all {len(results)} host(s) rebooted and "
                     f"{', '.join(stages)} held on each")  # fmt: skip
    sys.stderr.write("\n".join(lines) + "\n")
