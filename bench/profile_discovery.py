"""Profile: where headless discovery spends its CPU, on N real OpenSSH hosts of the namespace lab (root).

Starts the lab (tests/nslab/lab.py, prefix ``rp-``, 10.82.0.0/16), runs ``roce-wizard --answers A --only discovery
--json`` in this process under cProfile, and prints the run's wall and CPU time and the functions that took the
most time of their own. This is how the SSH executor's line reading and cipher choice were found (docs/benchmarks.md);
cProfile slows the run, so its times are for comparing, not the benchmark's (bench/fanout.py).

    python -m bench.profile_discovery [--hosts 300] [--top 25] [--out FILE.prof]
"""

from __future__ import annotations

import argparse
import contextlib
import io
import pstats
import sys
import tempfile
import time
from pathlib import Path

if __package__ in (None, ""):  # run as a script: bench/ is on the path, not the repository root
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import yaml

from tests.nslab.lab import NsLab, missing_requirements


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--hosts", type=int, default=300)
    parser.add_argument("--top", type=int, default=25, help="functions to list, by time of their own")
    parser.add_argument("--out", type=Path, help="also write the profile here (for pstats or snakeviz)")
    args = parser.parse_args()
    reason = missing_requirements()
    if reason:
        print(f"cannot run: {reason}", file=sys.stderr)
        return 2
    import cProfile

    from wizard.cli.main import main as wizard_main

    lab = NsLab(Path(tempfile.gettempdir()) / "roce-wizard-profile", prefix="rp-", network="10.82.0.0/16")
    try:
        lab.up(args.hosts)
        with tempfile.TemporaryDirectory() as tmp:
            answers = Path(tmp) / "answers.yaml"
            answers.write_text(yaml.safe_dump(lab.answers("profile", connect_timeout_s=30, max_parallel_hosts=64)))
            argv = ["--answers", str(answers), "--only", "discovery", "--json", "--state-dir", str(Path(tmp) / "st")]
            profile = cProfile.Profile()
            wall, cpu = time.perf_counter(), time.process_time()
            profile.enable()
            with contextlib.redirect_stdout(io.StringIO()):  # the --json events; the profile is the output
                code = wizard_main(argv)
            profile.disable()
            wall, cpu = time.perf_counter() - wall, time.process_time() - cpu
    finally:
        lab.down()
    print(f"{args.hosts} hosts: exit {code}, wall {wall:.1f} s, CPU {cpu:.1f} s (under cProfile)")
    if args.out:
        profile.dump_stats(str(args.out))
    pstats.Stats(profile).sort_stats("tottime").print_stats(args.top)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
