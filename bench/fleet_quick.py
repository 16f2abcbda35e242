"""`bwtest --quick --budget` on a simulated rails-N fabric with five injected faults: are all five named, and only
they; did the run fit its budget in fabric time; how long did the controller take and how much memory.

    python -m bench.fleet_quick --profile rails-96

Two runs of the same command line on one state directory: the first brings the simulated hosts up (every stage,
through the same SSH executor as production; not timed) and measures the healthy fabric, the baseline; the second,
timed, runs with the faults and `--compare`s against it. The second is one process holding the controller and the
simulated lab (the demo's hosts live in it), so its peak memory counts both. Prints one JSON line.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from bench.tui_common import command_line
from wizard.lab import rails_plan

NETDEVS = ("enp24s0np0", "enp64s0np0", "enp79s0np0", "enp94s0np0", "enp154s0np0", "enp192s0np0", "enp206s0np0",
           "enp220s0np0")  # fmt: skip


def faults(hosts: int) -> list[tuple[str, tuple[str, str | None, int | None, str | None]]]:
    """Five faults spread over the units, each with the suspect it must produce: (kind, host, rail, leaf)."""
    names = rails_plan.host_names(hosts)
    units = max(1, hosts // rails_plan.HOSTS_PER_SU)
    a, b, c = names[4], names[min(hosts - 1, rails_plan.HOSTS_PER_SU + 7)], names[min(hosts - 1, hosts // 2 + 3)]
    leaf = lambda su, rail: f"leaf-su{su:02d}-r{rail}" if units > 1 else f"leaf-r{rail}"  # noqa: E731
    found = [
        (f"{a}:degraded={NETDEVS[1]}:200", ("host_port", a, 1, None)),  # trained at half rate
        (f"{b}:degraded={NETDEVS[6]}:100", ("host_port", b, 6, None)),  # trained at a quarter
        (f"{c}:degraded={NETDEVS[0]}", ("host_port", c, 0, None)),  # a bad cable: symbol errors, 60 %
    ]
    if units >= 3:  # an uplink is told from its partner's only with a third unit to compare with
        found += [
            (f"{leaf(2, 3)}:degraded_uplink=spine-2", ("uplink", None, None, leaf(2, 3))),
            (f"{leaf(units, 5)}:degraded_uplink=spine-6", ("uplink", None, None, leaf(units, 5))),
        ]
    return found


def run(argv: list[str], env: dict[str, str]) -> tuple[int, float, float]:
    """(exit status, wall seconds, peak resident MiB) of one roce-wizard command."""
    started = time.perf_counter()
    process = subprocess.Popen([sys.executable, "-m", "wizard", *argv], env=env, stdout=subprocess.DEVNULL)
    _, status, usage = os.wait4(process.pid, 0)
    process.returncode = os.waitstatus_to_exitcode(status)
    return process.returncode, time.perf_counter() - started, usage.ru_maxrss / 1024


def main() -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--profile", default="rails-96", help="rails-N (three units or more to place uplinks)")
    parser.add_argument("--budget", default="15m")
    parser.add_argument("--seconds", default="3", help="each round's test time (bwtest --seconds)")
    parser.add_argument("--state", type=Path, help="a state directory to reuse (skips the bring-up when present)")
    parser.add_argument("--time-scale", default="0.01", help="ROCE_WIZARD_LAB_TIME_SCALE of the simulated lab")
    args = parser.parse_args()
    hosts = int(args.profile.split("-")[1])
    print("$ " + command_line("fleet_quick"), file=sys.stderr, flush=True)
    env = {**os.environ, "ROCE_WIZARD_LAB_TIME_SCALE": args.time_scale}
    state = args.state or Path(tempfile.mkdtemp(prefix="roce-wizard-fleet-")) / "state"
    base = ["bwtest", "--demo", "--profile", args.profile, "--state-dir", str(state), "--seconds", args.seconds]
    bringup_s = None
    if not (state / "validation").is_dir():
        code, bringup_s, _ = run([*base, "--quick"], env)
        print(f"bring-up and healthy baseline: exit {code}, {bringup_s:.0f} s", file=sys.stderr, flush=True)
    injected = faults(hosts)
    argv = [*base, "--quick", "--budget", args.budget, "--compare"]
    for spec, _ in injected:
        argv += ["--fault", spec]
    code, wall_s, peak = run(argv, env)
    report = json.loads((state / "validation" / "latest.json").read_text())
    fleet = report["fleet"]
    named = {(s["kind"], s["host"], s["rail"], None if s["kind"] == "host_port" else s["leaf"])
             for s in fleet["suspects"]}  # fmt: skip
    wanted = {want for _, want in injected}
    print(json.dumps({
        "command": command_line("fleet_quick"),
        "profile": args.profile,
        "hosts": hosts,
        "faults": [spec for spec, _ in injected],
        "named": len(wanted & named),
        "missed": sorted(map(str, wanted - named)),
        "false_suspects": sorted(map(str, named - wanted)),
        "suspects": [s["part"] for s in fleet["suspects"]],
        "regressions": len(fleet["regressions"]),
        "budget_s": fleet["budget"]["budget_s"],
        "fabric_used_s": fleet["budget"]["used_s"],
        "rounds_run": sum(1 for r in fleet["budget"]["rounds"] if r["ran"]),
        "rounds": len(fleet["budget"]["rounds"]),
        "coverage": {k: fleet["coverage"][k] for k in ("hosts", "hosts_total", "ports", "ports_total", "leaves",
                                                        "leaves_total", "cross_leaf")},  # fmt: skip
        "exit": code,
        "wall_s": round(wall_s, 1),
        "peak_rss_mib": round(peak, 1),
        "bringup_s": round(bringup_s, 1) if bringup_s is not None else None,
        "cpus": os.cpu_count(),
    }))  # fmt: skip
    return 0 if not (wanted - named) and not (named - wanted) else 1


if __name__ == "__main__":
    raise SystemExit(main())
