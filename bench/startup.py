"""Start-up cost of the command line: ``--help`` and usage errors against a bare interpreter.

Every mistyped flag pays it, and so does every shell completion or wrapper script. Each command runs
``--repeat`` times as a fresh process (the installed ``roce-wizard`` script next to this interpreter, as an
operator runs it); the median wall time of each is compared with ``python3 -c pass`` run the same way.

    python bench/startup.py --repeat 20

Prints one row per command with its median, min and max, and the ratio to the bare interpreter. Exit 0 always:
it measures, the README records (never a timed test).
"""

from __future__ import annotations

import argparse
import shutil
import statistics
import subprocess
import sys
import time
from pathlib import Path

COMMANDS: list[tuple[str, list[str]]] = [
    ("roce-wizard --help", ["--help"]),
    ("roce-wizard --version", ["--version"]),
    ("usage error: unknown flag", ["--no-such-flag"]),
    ("usage error: --only and --from", ["--only", "network", "--from", "roce", "--demo"]),
    ("roce-wizard check --help", ["check", "--help"]),
    ("roce-wizard plan --help", ["plan", "--help"]),
]

ARGPARSE_HELP = (
    "import argparse, pathlib; p = argparse.ArgumentParser(); "
    "p.add_argument('--x', type=pathlib.Path); p.parse_args(['--help'])"
)


def wizard_script() -> list[str]:
    """The console script installed beside this interpreter, else ``python -m wizard``."""
    script = Path(sys.executable).with_name("roce-wizard")
    if script.exists():
        return [str(script)]
    found = shutil.which("roce-wizard")
    return [found] if found else [sys.executable, "-m", "wizard"]


def timed_round_robin(commands: list[list[str]], repeat: int) -> list[list[float]]:
    """Each command ``repeat`` times, interleaved (one run of each, then again), so a change in machine load
    moves every command alike instead of whichever was being measured at the time."""
    seconds: list[list[float]] = [[] for _ in commands]
    for _ in range(repeat):
        for i, argv in enumerate(commands):
            started = time.perf_counter()
            subprocess.run(argv, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=False)
            seconds[i].append(time.perf_counter() - started)
    return seconds


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--repeat", type=int, default=20, help="runs per command (default 20)")
    args = parser.parse_args()
    script = wizard_script()
    rows = [
        ("python3 -c pass", [sys.executable, "-c", "pass"]),
        # What any argparse program pays to print its help: the floor a Python command line can reach.
        ("argparse alone printing --help", [sys.executable, "-c", ARGPARSE_HELP]),
        *((label, [*script, *extra]) for label, extra in COMMANDS),
    ]
    timed_round_robin([argv for _, argv in rows], 2)  # warm the page cache before anything is measured
    runs = timed_round_robin([argv for _, argv in rows], args.repeat)
    floor = statistics.median(runs[0])
    print(f"{'command':34} {'median':>8} {'min':>8} {'max':>8} {'x bare':>7}")
    for (label, _), seconds in zip(rows, runs, strict=True):
        median = statistics.median(seconds)
        print(
            f"{label:34} {median * 1000:7.1f}ms {min(seconds) * 1000:7.1f}ms {max(seconds) * 1000:7.1f}ms "
            f"{median / floor:7.2f}"
        )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
