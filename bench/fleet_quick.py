"""`bwtest --quick --budget` on a simulated rails-N fabric with five injected faults: are all five named, and only
they; did the run fit its budget in fabric time; how long did the controller take and how much memory.

    python -m bench.fleet_quick --profile rails-96

Two runs of the same command line on one state directory: the first brings the simulated hosts up (every stage,
through the same SSH executor as production; not timed) and measures the healthy fabric, the baseline; the second,
timed, runs with the faults and `--compare`s against it. Past 64 hosts the demo runs the simulated lab in a child
process (wizard/lab/child.py): the wizard's own peak memory and CPU seconds are sampled from /proc and reported apart
from the lab's. The wall time is the wizard's, and on a 2-core machine it waits on the lab's shell work: the CPU
seconds are what the controller itself spent. Prints one JSON line.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
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


BOOTED = re.compile(r"\[simulated\] \d+ hosts .* (booted|built)")  # the demo's line once its lab is up
PHASE = re.compile(r"^\[simulated\] == (.*)$", re.M)


@dataclass
class Measured:
    code: int
    wall_s: float
    peak_mib: float  # the wizard's own process (VmHWM), not the simulated lab's child process
    cpu_s: float  # the wizard's own user + system CPU seconds
    lab_peak_mib: float | None  # the lab's process, as the wizard reports it ("[simulated] the lab's own ...")
    lab_cpu_s: float | None = None  # and its CPU seconds: on 2 cores the wall time is the larger of the two
    lab_boot_s: float | None = None  # until the simulated hosts had booted: the lab's start, no work of the wizard's
    phases: list[dict[str, object]] | None = None  # each "== ..." line: when it came, the wizard's RSS and peak then


def run(argv: list[str], env: dict[str, str], log: Path) -> Measured:
    """One roce-wizard command, its own memory and CPU sampled from /proc (wait4's ru_maxrss would be the larger of
    the wizard and the lab it waited for); its stderr goes to ``log``."""
    started = time.perf_counter()
    with log.open("w") as err:
        process = subprocess.Popen([sys.executable, "-m", "wizard", *argv], env=env, stdout=subprocess.DEVNULL,
                                   stderr=err)  # fmt: skip
        peak = cpu = 0.0
        booted: float | None = None
        phases: list[dict[str, object]] = []
        while process.poll() is None:
            peak, cpu = max(peak, _vm_hwm_mib(process.pid)), max(cpu, _cpu_s(process.pid))
            text = log.read_text(errors="replace")  # phase and failure lines only: small
            if booted is None and BOOTED.search(text):
                booted = time.perf_counter() - started
            for line in PHASE.findall(text)[len(phases) :]:
                rss, hwm = _vm_mib(process.pid, "VmRSS"), _vm_mib(process.pid, "VmHWM")
                phases.append({"at_s": round(time.perf_counter() - started, 1), "rss_mib": round(rss),
                               "peak_mib": round(hwm), "phase": line[:60]})  # fmt: skip
            time.sleep(0.1)
    wall = time.perf_counter() - started
    text = log.read_text(errors="replace")
    found = re.search(r"the lab's own process peaked at (\d+) MiB(?: and used (\d+) s of CPU)?", text)
    lab_cpu = float(found.group(2)) if found and found.group(2) else None
    lab_peak = float(found.group(1)) if found else None
    return Measured(process.returncode, wall, peak, cpu, lab_peak, lab_cpu, booted, phases)


def _vm_hwm_mib(pid: int) -> float:
    return _vm_mib(pid, "VmHWM")


def _vm_mib(pid: int, field: str) -> float:
    """A memory line of /proc/PID/status (proc(5)): VmHWM is the peak resident set, VmRSS the current one."""
    try:
        status = Path(f"/proc/{pid}/status").read_text()
    except OSError:
        return 0.0
    found = re.search(rf"^{field}:\s+(\d+) kB", status, re.M)
    return int(found.group(1)) / 1024 if found else 0.0


def _cpu_s(pid: int) -> float:
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except (OSError, IndexError):
        return 0.0
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")  # utime, stime (proc(5) fields 14, 15)


def main() -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--profile", default="rails-96", help="rails-N (three units or more to place uplinks)")
    parser.add_argument("--budget", default="15m")
    parser.add_argument("--seconds", default="3", help="each round's test time (bwtest --seconds)")
    parser.add_argument("--state", type=Path, help="a state directory to reuse (skips the bring-up when present)")
    parser.add_argument(
        "--time-scale",
        default="1",
        help="ROCE_WIZARD_LAB_TIME_SCALE of the simulated lab (below 1 its timeouts shrink too, and a loaded machine "
        "then times tests out that a real fabric would pass)",
    )
    args = parser.parse_args()
    hosts = int(args.profile.split("-")[1])
    print("$ " + command_line("fleet_quick"), file=sys.stderr, flush=True)
    env = {**os.environ, "ROCE_WIZARD_LAB_TIME_SCALE": args.time_scale}
    state = args.state or Path(tempfile.mkdtemp(prefix="roce-wizard-fleet-")) / "state"
    base = ["bwtest", "--demo", "--profile", args.profile, "--state-dir", str(state), "--seconds", args.seconds]
    bringup_s = None
    if not (state / "validation").is_dir():
        first = run([*base, "--quick"], env, state.parent / "bringup.log")
        bringup_s = first.wall_s
        log = state.parent / "bringup.log"
        print(f"bring-up and healthy baseline: exit {first.code}, {bringup_s:.0f} s (log {log})", file=sys.stderr,
              flush=True)  # fmt: skip
    injected = faults(hosts)
    argv = [*base, "--quick", "--budget", args.budget, "--compare"]
    for spec, _ in injected:
        argv += ["--fault", spec]
    timed = run(argv, env, state.parent / "quick.log")
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
        "exit": timed.code,
        "wall_s": round(timed.wall_s, 1),
        # the wall time less the simulated lab's own start (booting 1,024 hosts from their disks): a real
        # controller has hosts that are already up
        "lab_boot_s": round(timed.lab_boot_s, 1) if timed.lab_boot_s is not None else None,
        "controller_wall_s": round(timed.wall_s - (timed.lab_boot_s or 0.0), 1),
        "peak_rss_mib": round(timed.peak_mib, 1),
        "cpu_s": round(timed.cpu_s, 1),
        "lab_peak_rss_mib": timed.lab_peak_mib,
        "lab_cpu_s": timed.lab_cpu_s,
        "bringup_s": round(bringup_s, 1) if bringup_s is not None else None,
        "phases": timed.phases,
        "cpus": os.cpu_count(),
    }))  # fmt: skip
    return 0 if not (wanted - named) and not (named - wanted) else 1


if __name__ == "__main__":
    raise SystemExit(main())
