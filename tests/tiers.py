"""The whole test suite as pytest runs side by side on both cores, the README's test command (and CI's, via .ci/run).

The qemu tier (`pytest -m vmlab`: two TCG guests with a real kernel) runs beside everything else instead of after
it. The rest (the main tier) is shared through tests/share_work.py by pytest processes that claim test files as they
go: two start at once and walk the files from the front; the qemu lane joins when its tier is done, walking them
from the back, so both cores stay busy to the end. Every test runs exactly once, each process prints its own
summary, and the run fails if any of them fails. The qemu guests run at a higher priority than the test processes (as
root), so the second front lane uses the CPU the guests leave while they wait, not theirs.

    python tests/tiers.py [PYTEST ARGS...]     # extra arguments go to every run, e.g. -x or -k bond

The other lanes' output (the second front lane; the qemu tier, then its share of the main tier) is kept in files and
printed when they end; the first lane prints as it goes.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
TIERS = {  # name -> pytest arguments; every test belongs to exactly one tier
    "qemu": ["-m", "vmlab"],
    "main": ["-m", "not vmlab"],
}
REPORT = ["-q", "-rfEs", "--durations=15", "-p", "no:cacheprovider"]  # -rs: every skip says why


def cpu_seconds() -> tuple[float, float] | None:
    """(busy, all) CPU seconds of the whole machine so far, from /proc/stat (None where there is none): the qemu
    guests run as daemons, outside any tier's process tree, so only the machine's own count sees them."""
    try:
        fields = [float(x) for x in Path("/proc/stat").read_text().split("\n", 1)[0].split()[1:]]
    except (OSError, ValueError):
        return None
    tick = os.sysconf("SC_CLK_TCK")
    idle = fields[3] + (fields[4] if len(fields) > 4 else 0.0)  # idle + iowait
    return (sum(fields) - idle) / tick, sum(fields) / tick


def main(extra: list[str]) -> int:
    logs = Path(tempfile.mkdtemp(prefix="roce-wizard-tiers-"))
    claims = logs / "claims"
    pytest = [sys.executable, "-m", "pytest", *REPORT, *extra]
    share = ["-p", "tests.share_work"]
    env = {**os.environ, "PYTHONUNBUFFERED": "1", "ROCE_WIZARD_TEST_CLAIMS": str(claims)}
    started = time.monotonic()
    cpu_start = cpu_seconds()
    lane_log = (logs / "qemu.log").open("w")
    # The second lane: the qemu tier, then (whatever it finds) its share of the main tier from the back.
    lane = subprocess.Popen(
        [sys.executable, "-c", LANE, json.dumps([pytest + TIERS["qemu"], pytest + TIERS["main"] + share])],
        cwd=ROOT,
        stdout=lane_log,
        stderr=subprocess.STDOUT,
        env={**env, "ROCE_WIZARD_TEST_CLAIM_ORDER": "reverse"},
    )
    print(f"tiers: qemu tier started (pid {lane.pid}, output in {logs / 'qemu.log'}); main tier follows", flush=True)
    # A third lane from the start: while the guests wait on boots and timers a core would be idle. The guests run at
    # a higher priority than every test process (tests/vmlab/vms.py, as root), so the extra lane takes CPU from the
    # other main-tier lane, not from the guests (without that, a third lane made the qemu tier the longest and the
    # run slower). Only the guests: with the whole qemu lane ahead, the image build starved the main-tier lanes long
    # enough for a simulated host to miss its 5 s SSH connect timeout.
    idle_log = (logs / "idle.log").open("w")
    idle = subprocess.Popen(
        pytest + TIERS["main"] + share,
        cwd=ROOT,
        stdout=idle_log,
        stderr=subprocess.STDOUT,
        env={**env, "ROCE_WIZARD_TEST_CLAIM_ORDER": "forward"},
    )
    try:
        main_code = subprocess.call(
            pytest + TIERS["main"] + share, cwd=ROOT, env={**env, "ROCE_WIZARD_TEST_CLAIM_ORDER": "forward"}
        )
        main_s = time.monotonic() - started
        if lane.poll() is None or idle.poll() is None:
            print(f"tiers: main tier's first lane done in {main_s:.0f} s; waiting for the others", flush=True)
        lane.wait()
        idle_code = idle.wait()
    except KeyboardInterrupt:
        lane.terminate()
        idle.terminate()
        lane.wait()
        idle.wait()
        raise
    finally:
        lane_log.close()
        idle_log.close()
    total_s = time.monotonic() - started
    print("\n" + "=" * 20 + " third lane: its share of the main tier " + "=" * 20)
    sys.stdout.write((logs / "idle.log").read_text(errors="replace"))
    print("\n" + "=" * 20 + " qemu tier (pytest -m vmlab), then this lane's share of the main tier " + "=" * 20)
    text = (logs / "qemu.log").read_text(errors="replace")
    sys.stdout.write(text)
    print("=" * 110)
    codes = [int(c) for c in re.findall(r"^lane: exit (-?\d+)$", text, re.M)]
    qemu_code, share_code = (codes + [1, 1])[:2] if codes else (1, 1)
    print(f"tiers: main tier, first lane: exit {main_code} ({_summary(main_code)}) after {main_s:.0f} s; "
          f"third lane: exit {idle_code} ({_summary(idle_code)})")  # fmt: skip
    print(f"tiers: qemu tier exit {qemu_code} ({_summary(qemu_code)}); main tier, second lane: exit {share_code} "
          f"({_summary(share_code)}); whole run {total_s:.0f} s")  # fmt: skip
    unclaimed = unclaimed_units(claims)
    if unclaimed:
        print(f"tiers: {len(unclaimed)} file(s) of the main tier ran in neither lane: {', '.join(unclaimed[:5])}")
    cpu_end = cpu_seconds()
    if cpu_start and cpu_end:
        busy, whole = cpu_end[0] - cpu_start[0], cpu_end[1] - cpu_start[1]
        print(
            f"tiers: the machine's {os.cpu_count()} CPUs were busy {busy:.0f} of {whole:.0f} CPU-seconds "
            f"({busy / max(whole, 1):.0%})"
        )
    # Exit 5 is pytest's "no tests collected": a tier filtered to nothing by the extra arguments is not a failure.
    every = (main_code, qemu_code, share_code, idle_code)
    failed = [code for code in every if code not in (0, 5)] + ([1] if unclaimed else [])
    if all(code == 5 for code in every):
        return 5
    return failed[0] if failed else 0


def unclaimed_units(claims: Path) -> list[str]:
    """Units some lane collected but no lane claimed (a lane stopped by -x or a crash leaves some: that run fails)."""
    listed = {}
    for units in claims.glob("units-*"):
        for line in units.read_text().splitlines():
            digest, _, unit = line.partition(" ")
            listed[digest] = unit
    return sorted(unit for digest, unit in listed.items() if not (claims / digest).exists())


# The second lane, as a small program of its own: run each pytest command in turn, print each exit status.
LANE = """
import json, subprocess, sys
for command in json.loads(sys.argv[1]):
    code = subprocess.call(command)
    print(f"lane: exit {code}", flush=True)
"""


def _summary(code: int) -> str:
    return {0: "passed", 1: "tests failed", 2: "interrupted", 3: "internal error", 4: "usage error", 5: "no tests"}.get(
        code, "killed" if code < 0 else "error"
    )


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
