"""The whole test suite as two pytest runs side by side, the README's test command (and CI's, through .ci/run).

The qemu tier (`pytest -m vmlab`: two TCG guests with a real kernel) spends most of its time waiting on the guests,
so on a 2-core machine it runs beside everything else instead of after it. Each tier is a plain pytest run (its
own process, its own summary); both summaries are printed, and the run fails if either tier fails.

    python tests/tiers.py [PYTEST ARGS...]     # extra arguments go to both tiers, e.g. -x or -k bond

The qemu tier's output is kept in a file and printed in full when it ends; the other tier prints as it goes.
"""

from __future__ import annotations

import os
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
    started = time.monotonic()
    cpu_start = cpu_seconds()
    qemu_log = (logs / "qemu.log").open("w")
    qemu = subprocess.Popen(
        [sys.executable, "-m", "pytest", *TIERS["qemu"], *REPORT, *extra],
        cwd=ROOT,
        stdout=qemu_log,
        stderr=subprocess.STDOUT,
        env={**os.environ, "PYTHONUNBUFFERED": "1"},
    )
    print(f"tiers: qemu tier started (pid {qemu.pid}, output in {logs / 'qemu.log'}); main tier follows", flush=True)
    try:
        main_code = subprocess.call([sys.executable, "-m", "pytest", *TIERS["main"], *REPORT, *extra], cwd=ROOT)
        main_s = time.monotonic() - started
        if qemu.poll() is None:
            print(f"tiers: main tier done in {main_s:.0f} s; waiting for the qemu tier", flush=True)
        qemu_code = qemu.wait()
    except KeyboardInterrupt:
        qemu.terminate()
        qemu.wait()
        raise
    finally:
        qemu_log.close()
    total_s = time.monotonic() - started
    print("\n" + "=" * 30 + " qemu tier (pytest -m vmlab) " + "=" * 30, flush=True)
    sys.stdout.write((logs / "qemu.log").read_text(errors="replace"))
    print("=" * 89)
    print(f"tiers: main tier exit {main_code} ({_summary(main_code)}) after {main_s:.0f} s")
    print(f"tiers: qemu tier exit {qemu_code} ({_summary(qemu_code)}); whole run {total_s:.0f} s")
    cpu_end = cpu_seconds()
    if cpu_start and cpu_end:
        busy, whole = cpu_end[0] - cpu_start[0], cpu_end[1] - cpu_start[1]
        print(
            f"tiers: the machine's {os.cpu_count()} CPUs were busy {busy:.0f} of {whole:.0f} CPU-seconds "
            f"({busy / max(whole, 1):.0%})"
        )
    # Exit 5 is pytest's "no tests collected": a tier filtered to nothing by the extra arguments is not a failure.
    failed = [code for code in (main_code, qemu_code) if code not in (0, 5)]
    if main_code == 5 and qemu_code == 5:
        return 5
    return failed[0] if failed else 0


def _summary(code: int) -> str:
    return {0: "passed", 1: "tests failed", 2: "interrupted", 3: "internal error", 4: "usage error", 5: "no tests"}.get(
        code, "killed" if code < 0 else "error"
    )


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
