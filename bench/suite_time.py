"""Where the test suite's time goes: per folder (tier) and the slowest tests, from pytest's own --durations=0 output.

    pytest -q --durations=0 -p no:cacheprovider > suite.log     # or: python tests/tiers.py --durations=0 > suite.log
    python bench/suite_time.py suite.log [--top 20]

Times are what pytest measured (setup + call + teardown per test, summed); with two tiers side by side the folders'
sum is more than the wall-clock time. The README's "Test suite time" table was made this way.
"""

from __future__ import annotations

import argparse
import re
from collections import Counter
from pathlib import Path

LINE = re.compile(r"^\s*([\d.]+)s (setup|call|teardown)\s+(\S+)")
KIND = {  # what each folder exercises, for the table's last column
    "tests/parsers": "pure: real tool outputs through the parsers",
    "tests/fuzz": "pure: hypothesis-fuzzed parsers and answers",
    "tests/steps": "pure plans/checks, and stages on the simulated lab (loopback SSH)",
    "tests/engine": "runner, state, CLI; simulated lab",
    "tests/lab": "the simulated hosts themselves",
    "tests/validate": "bwtest/doctor on the simulated lab",
    "tests/handoff": "Ansible, Kubernetes, metrics, report; simulated lab",
    "tests/tui": "the terminal wizard (Textual pilot)",
    "tests/security": "secrets in every output; simulated lab",
    "tests/chaos": "SIGKILL sample over the demo bring-up",
    "tests/nslab": "real OpenSSH in network namespaces (root)",
    "tests/vmlab": "two qemu VMs, real kernel (root, qemu)",
}


def folder(node: str) -> str:
    parts = node.split("::")[0].split("/")
    return "/".join(parts[:2]) if len(parts) > 2 else parts[0]


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("log", type=Path, help="pytest output with --durations=0")
    p.add_argument("--top", type=int, default=15, help="how many of the slowest tests to list")
    args = p.parse_args()
    by_folder: Counter[str] = Counter()
    by_test: Counter[str] = Counter()
    counted: dict[str, set[str]] = {}
    for line in args.log.read_text(errors="replace").splitlines():
        m = LINE.match(line)
        if not m:
            continue
        seconds, node = float(m[1]), m[3]
        by_folder[folder(node)] += seconds
        by_test[node] += seconds
        counted.setdefault(folder(node), set()).add(node)
    print("| folder | tests timed | seconds | what it exercises |\n| --- | ---: | ---: | --- |")
    for name, seconds in by_folder.most_common():
        print(f"| `{name}` | {len(counted[name])} | {seconds:.0f} | {KIND.get(name, '')} |")
    print(f"| all | {sum(len(v) for v in counted.values())} | {sum(by_folder.values()):.0f} | |")
    print(f"\nslowest {args.top}:")
    for node, seconds in by_test.most_common(args.top):
        print(f"{seconds:8.1f} s  {node}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
