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


def timed(argv: list[str], repeat: int) -> list[float]:
    seconds = []
    for _ in range(repeat):
        started = time.perf_counter()
        subprocess.run(argv, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=False)
        seconds.append(time.perf_counter() - started)
    return seconds


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--repeat", type=int, default=20, help="runs per command (default 20)")
    args = parser.parse_args()
    timed([sys.executable, "-c", "pass"], 3)  # warm the page cache before anything is measured
    bare = timed([sys.executable, "-c", "pass"], args.repeat)
    floor = statistics.median(bare)
    # What any argparse program pays to print its help: the floor a Python command line can reach.
    argparse_floor = timed([sys.executable, "-c", ARGPARSE_HELP], args.repeat)
    script = wizard_script()
    print(f"{'command':34} {'median':>8} {'min':>8} {'max':>8} {'x bare':>7}")
    print(f"{'python3 -c pass':34} {floor * 1000:7.1f}ms {min(bare) * 1000:7.1f}ms {max(bare) * 1000:7.1f}ms {1:7.2f}")
    median = statistics.median(argparse_floor)
    print(
        f"{'argparse alone printing --help':34} {median * 1000:7.1f}ms {min(argparse_floor) * 1000:7.1f}ms "
        f"{max(argparse_floor) * 1000:7.1f}ms {median / floor:7.2f}"
    )
    for label, extra in COMMANDS:
        runs = timed([*script, *extra], args.repeat)
        median = statistics.median(runs)
        print(
            f"{label:34} {median * 1000:7.1f}ms {min(runs) * 1000:7.1f}ms {max(runs) * 1000:7.1f}ms "
            f"{median / floor:7.2f}"
        )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
