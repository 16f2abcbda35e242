"""Benchmark: the same read-only check on N real OpenSSH hosts with roce-wizard, parallel-ssh and Ansible.

The hosts are the namespace lab's (tests/nslab/lab.py: one sshd per network namespace, started here under its own
prefix ``rb-`` and network 10.79.0.0/16, so a test lab can run beside it). Each tool does the same work on every host
from a cold start: connect, authenticate with the key, run ``cat /etc/os-release`` and ``sudo -n true``, with the
same number of hosts at once. Reported per tool: wall time of the whole command, hosts that succeeded, and the peak
memory of the tool's whole process tree (sampled from /proc every 100 ms; Ansible forks one worker per host at once).

    python bench/fanout.py --hosts 100 --parallel 64 [--tools wizard,pssh,ansible,wizard-discovery] [--repeat 3]

``wizard-discovery`` is not a comparison: it runs roce-wizard's headless discovery stage (the whole engine) on the
same hosts.

Needs root (namespaces). parallel-ssh and Ansible come from `pip install -r bench/requirements.txt`; a tool that is
not installed is reported as such. Host keys: roce-wizard and Ansible check them against the lab's known_hosts;
parallel-ssh (ssh2-python) does not check host keys at all, which makes its handshake cheaper.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

import yaml

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from tests.nslab.lab import USER, NsLab, missing_requirements  # noqa: E402

REMOTE = "cat /etc/os-release >/dev/null && sudo -n true"
PSSH_SCRIPT = """
import sys
from pssh.clients import ParallelSSHClient
hosts, user, key, pool = sys.argv[1].split(","), sys.argv[2], sys.argv[3], int(sys.argv[4])
client = ParallelSSHClient(hosts, user=user, pkey=key, pool_size=pool, timeout=30, num_retries=1)
output = client.run_command(sys.argv[5], stop_on_errors=False)
client.join(output)
print(sum(1 for o in output if o.exception is None and o.exit_code == 0))
"""


def tree_rss_kib(root: int) -> int:
    """Resident memory of ``root`` and all its descendants, in KiB."""
    children: dict[int, list[int]] = {}
    rss: dict[int, int] = {}
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat") as handle:
                fields = handle.read().rsplit(")", 1)[1].split()
        except OSError:
            continue
        pid = int(entry)
        children.setdefault(int(fields[1]), []).append(pid)
        rss[pid] = int(fields[21]) * os.sysconf("SC_PAGE_SIZE") // 1024
    total, stack = 0, [root]
    while stack:
        pid = stack.pop()
        total += rss.get(pid, 0)
        stack.extend(children.get(pid, []))
    return total


def measure(argv: list[str], env: dict[str, str] | None = None) -> tuple[float, int, str]:
    """Run a command; return its wall time, the peak RSS of its process tree (KiB) and its stdout."""
    started = time.perf_counter()
    process = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)
    peak = 0
    stop = threading.Event()

    def sample() -> None:
        nonlocal peak
        while not stop.wait(0.1):
            peak = max(peak, tree_rss_kib(process.pid))

    sampler = threading.Thread(target=sample, daemon=True)
    sampler.start()
    out, err = process.communicate()
    wall = time.perf_counter() - started
    stop.set()
    sampler.join()
    if process.returncode not in (0, 1, 2, 4):  # ansible: 2/4 = some hosts failed or unreachable
        sys.stderr.write(f"{argv[0]}: exit {process.returncode}\n{err[-2000:]}\n")
    return wall, peak, out


def wizard_answers(lab: NsLab, work: Path, parallel: int) -> Path:
    answers = work / "answers.yaml"
    answers.write_text(
        yaml.safe_dump(
            {
                "version": 1,
                "cluster": {"name": "fanout"},
                "ssh": {
                    "user": USER,
                    "identity_file": str(lab.key_file),
                    "known_hosts": str(lab.known_hosts),
                    "connect_timeout_s": 30,
                    "max_parallel_hosts": parallel,
                },
                "hosts": [{"name": h.name, "address": h.address} for h in lab.hosts],
                "inference": {"enabled": False},
            }
        )
    )
    return answers


def run_wizard(lab: NsLab, work: Path, parallel: int) -> tuple[float, int, int]:
    answers = wizard_answers(lab, work, parallel)
    argv = [sys.executable, "-m", "wizard", "check", "--answers", str(answers), "--json", "--limit", str(parallel)]
    wall, peak, out = measure([*argv, "--state-dir", str(work / "state")])
    ok = sum(1 for line in out.splitlines() if json.loads(line)["ok"])
    return wall, peak, ok


def run_wizard_discovery(lab: NsLab, work: Path, parallel: int) -> tuple[float, int, int]:
    """The whole headless engine: discovery's ~30 probes per host, state saved after every command, a log per host,
    every output line as a JSON event on stdout. "ok" counts hosts whose facts were saved (namespace hosts then fail
    discovery's ConnectX check: they have no cards)."""
    answers = wizard_answers(lab, work, parallel)
    state = work / "state"
    argv = [sys.executable, "-m", "wizard", "--answers", str(answers), "--only", "discovery", "--json"]
    wall, peak, _ = measure([*argv, "--state-dir", str(state)])
    return wall, peak, len(list((state / "facts").glob("*.json")))


def run_pssh(lab: NsLab, work: Path, parallel: int) -> tuple[float, int, int]:
    hosts = ",".join(h.address for h in lab.hosts)
    argv = [sys.executable, "-c", PSSH_SCRIPT, hosts, USER, str(lab.key_file), str(parallel), REMOTE]
    wall, peak, out = measure(argv)
    return wall, peak, int(out.strip() or 0)


def run_ansible(lab: NsLab, work: Path, parallel: int) -> tuple[float, int, int]:
    inventory = work / "inventory.ini"
    inventory.write_text("[lab]\n" + "".join(f"{h.name} ansible_host={h.address}\n" for h in lab.hosts))
    env = {
        **os.environ,
        "ANSIBLE_HOST_KEY_CHECKING": "True",
        "ANSIBLE_SSH_ARGS": f"-o UserKnownHostsFile={lab.known_hosts} -o ControlMaster=auto -o ControlPersist=60s",
        "ANSIBLE_LOCAL_TEMP": str(work / "ansible-tmp"),
        "ANSIBLE_CONTROL_PATH_DIR": str(work / "cp"),
        "ANSIBLE_STDOUT_CALLBACK": "oneline",
    }
    binary = shutil.which("ansible") or str(Path(sys.executable).with_name("ansible"))
    argv = [binary, "lab", "-i", str(inventory), "-u", USER, "--private-key", str(lab.key_file), "-f", str(parallel),
            "-m", "raw", "-a", REMOTE]  # fmt: skip
    wall, peak, out = measure(argv, env)
    return wall, peak, sum(1 for line in out.splitlines() if "| CHANGED" in line or "| SUCCESS" in line)


def installed(tool: str) -> bool:
    if tool == "pssh":
        return subprocess.run([sys.executable, "-c", "import pssh.clients"], capture_output=True).returncode == 0
    if tool not in RUNNERS:
        raise SystemExit(f"unknown tool {tool!r}: {', '.join(RUNNERS)}")
    if tool == "ansible":
        return bool(shutil.which("ansible") or Path(sys.executable).with_name("ansible").exists())
    return True


RUNNERS = {"wizard": run_wizard, "pssh": run_pssh, "ansible": run_ansible, "wizard-discovery": run_wizard_discovery}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--hosts", type=int, default=100)
    parser.add_argument("--parallel", type=int, default=64)
    parser.add_argument("--tools", default="wizard,pssh,ansible")
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    reason = missing_requirements()
    if reason:
        print(f"cannot run: {reason}", file=sys.stderr)
        return 2
    lab = NsLab(Path(tempfile.gettempdir()) / "roce-wizard-bench-fanout", prefix="rb-", network="10.79.0.0/16")
    started = time.perf_counter()
    lab.up(args.hosts)
    print(f"{args.hosts} hosts up in {time.perf_counter() - started:.1f} s; {args.parallel} at once; "
          f"{args.repeat} runs each; remote: {REMOTE}")  # fmt: skip
    try:
        print(f"{'tool':<16} {'wall s (median, min-max)':<26} {'ok hosts':<9} peak RSS MiB (median)")
        for tool in args.tools.split(","):
            if not installed(tool):
                print(f"{tool:<16} not installed (pip install -r bench/requirements.txt)")
                continue
            walls, peaks, oks = [], [], []
            for _ in range(args.repeat):
                with tempfile.TemporaryDirectory() as tmp:
                    wall, peak, ok = RUNNERS[tool](lab, Path(tmp), args.parallel)
                walls.append(wall)
                peaks.append(peak)
                oks.append(ok)
            span = f"{statistics.median(walls):.2f} ({min(walls):.2f}-{max(walls):.2f})"
            print(f"{tool:<16} {span:<26} {min(oks):<9} {statistics.median(peaks) / 1024:.0f}", flush=True)
    finally:
        lab.down()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
