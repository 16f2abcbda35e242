"""Benchmark: roce-wizard against parallel-ssh and Ansible on N real OpenSSH hosts, doing the same work.

The hosts are the namespace lab's (tests/nslab/lab.py: one sshd per network namespace, started here under its own
prefix ``rb-`` and network 10.79.0.0/16, so a test lab can run beside it). Every tool starts cold, with the same
number of hosts at once. Three scenarios, each one command:

    python bench/fanout.py --scenario check --hosts 1000 --parallel 64 --repeat 3
    python bench/fanout.py --scenario discovery --hosts 256 --parallel 64 --repeat 1
    python bench/fanout.py --scenario memory --hosts 1000 --parallel 64 --repeat 1

check: connect, authenticate with the key, read /etc/os-release and run ``sudo -n true`` (``roce-wizard check``;
parallel-ssh runs both in one exec and reads the output; Ansible ``-m raw``). Target: the wizard at least as fast as
parallel-ssh.

discovery: roce-wizard's headless discovery (``--only discovery --json``, the whole engine: state, a log per host,
every output line a JSON event) from a fresh state (wizard-discovery), then again from a fresh state that holds only
the probe log the first run learned (wizard-learned: every host read in one batch); parallel-ssh running the very
commands discovery ran (taken from the first run's ``probes/discovery.json``) as one script per host with the
wizard's delimiters (pssh-script: the one-exec-per-host floor); an Ansible playbook running them as one ``raw`` task
each (ansible-playbook: forks = --parallel, ControlPersist). The namespace hosts are plain Linux namespaces, not
ConnectX hosts: the probes find no NICs, and each host then fails discovery's ConnectX check ("ok" counts hosts whose
facts were saved). That is fine for measuring the engine, not for measuring discovery on real cards. Targets: the
wizard within 1.3x of pssh-script and at least 10x faster than ansible-playbook.

memory: peak resident memory of the wizard process in headless discovery. Target: at most 300 MiB.

Reported per tool: wall time of the whole command, hosts that succeeded, CPU time of the tool (user + system, from
wait4: on a 2-core machine that also runs every sshd and other work, the figure noise moves least) and peak memory:
of the process (its ru_maxrss from wait4, exact) and, for Ansible, which forks one worker per host at once, of its
whole process tree (sampled from /proc every 0.5 s; sampling the 1,000-sshd process table more often would steal
the tools' CPU).

Needs root (namespaces). parallel-ssh and Ansible come from `pip install -r bench/requirements.txt`; a tool that is
not installed is reported as such. Host keys: roce-wizard and Ansible check them against the lab's known_hosts;
parallel-ssh (ssh2-python) does not check host keys at all, which makes its handshake cheaper.
"""

from __future__ import annotations

import argparse
import json
import os
import shlex
import shutil
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

import yaml

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from bench import fanout_probes as probes  # noqa: E402
from tests.nslab.lab import USER, NsLab, missing_requirements  # noqa: E402

REMOTE = "cat /etc/os-release && sudo -n true"
PSSH_SCRIPT = """
import sys
from pssh.clients import ParallelSSHClient
hosts, user, key, pool = sys.argv[1].split(","), sys.argv[2], sys.argv[3], int(sys.argv[4])
client = ParallelSSHClient(hosts, user=user, pkey=key, pool_size=pool, timeout=30, num_retries=1)
output = client.run_command(sys.argv[5], stop_on_errors=False)
client.join(output)
ok = 0
for o in output:  # read the OS name as the wizard does
    if o.exception is None:
        pretty = [line for line in o.stdout if line.startswith("PRETTY_NAME=")]
        ok += o.exit_code == 0 and bool(pretty)
print(ok)
"""
SCENARIOS = {
    "check": "wizard,pssh,ansible",
    "discovery": "wizard-discovery,wizard-learned,pssh-script,ansible-playbook",
    "memory": "wizard-discovery",
}


@dataclass
class Run:
    """One measured command."""

    wall: float
    peak_kib: int  # the process (ru_maxrss) or, sampled, its whole tree: whichever is larger
    ok: int
    argv: list[str] = field(default_factory=list)
    cpu: float = 0.0  # user + system seconds of the process and its waited-for children: less noisy than wall


@dataclass
class Bench:
    """The lab, how many hosts at once, and a folder that outlives each run (the first discovery's state)."""

    lab: NsLab
    parallel: int
    keep: Path
    notes: dict[str, str] = field(default_factory=dict)


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


def measure(argv: list[str], env: dict[str, str] | None = None, *, tree: bool = False) -> tuple[Run, str]:
    """Run a command; its wall time, peak memory (KiB) and stdout."""
    started = time.perf_counter()
    with tempfile.TemporaryFile("w+") as out, tempfile.TemporaryFile("w+") as err:
        process = subprocess.Popen(argv, stdout=out, stderr=err, text=True, env=env)
        peak = 0
        stop = threading.Event()

        def sample() -> None:
            nonlocal peak
            while not stop.wait(0.5):
                peak = max(peak, tree_rss_kib(process.pid))

        sampler = threading.Thread(target=sample, daemon=True)
        if tree:
            sampler.start()
        _, status, usage = os.wait4(process.pid, 0)
        wall = time.perf_counter() - started
        process.returncode = os.waitstatus_to_exitcode(status)
        stop.set()
        if tree:
            sampler.join()
        out.seek(0)
        err.seek(0)
        stdout, stderr = out.read(), err.read()
    if process.returncode not in (0, 1, 2, 4):  # ansible: 2/4 = some hosts failed or unreachable
        sys.stderr.write(f"{argv[0]}: exit {process.returncode}\n{stderr[-2000:]}\n")
    return Run(wall, max(peak, usage.ru_maxrss), 0, argv, usage.ru_utime + usage.ru_stime), stdout


def wizard_answers(lab: NsLab, work: Path, parallel: int) -> Path:
    answers = work / "answers.yaml"
    data = lab.answers("fanout", connect_timeout_s=30, max_parallel_hosts=parallel)
    answers.write_text(yaml.safe_dump(data))
    return answers


def run_wizard(bench: Bench, work: Path) -> Run:
    answers = wizard_answers(bench.lab, work, bench.parallel)
    argv = [sys.executable, "-m", "wizard", "check", "--answers", str(answers), "--json", "--limit",
            str(bench.parallel), "--state-dir", str(work / "state")]  # fmt: skip
    run, out = measure(argv)
    run.ok = sum(1 for line in out.splitlines() if json.loads(line)["ok"])
    return run


def _discovery(bench: Bench, work: Path, state: Path) -> Run:
    answers = wizard_answers(bench.lab, work, bench.parallel)
    argv = [sys.executable, "-m", "wizard", "--answers", str(answers), "--only", "discovery", "--json",
            "--state-dir", str(state)]  # fmt: skip
    run, _ = measure(argv)
    run.ok = len(list((state / "facts").glob("*.json")))
    return run


def run_wizard_discovery(bench: Bench, work: Path) -> Run:
    """Fresh state: discovery learns its dependent probes on this run; the state is kept for the other tools."""
    state = bench.keep / "discovery-state"
    shutil.rmtree(state, ignore_errors=True)
    run = _discovery(bench, work, state)
    bench.notes["wizard-discovery"] = probes.round_trips(state)
    return run


def run_wizard_learned(bench: Bench, work: Path) -> Run:
    """A fresh state holding only the probe log of the first run: the engine knows every command up front."""
    state = work / "state"
    shutil.copytree(learned_state(bench) / "probes", state / "probes")
    run = _discovery(bench, work, state)
    bench.notes["wizard-learned"] = probes.round_trips(state)
    return run


def learned_state(bench: Bench) -> Path:
    state = bench.keep / "discovery-state"
    if not state.exists():
        raise SystemExit("the discovery comparison needs wizard-discovery first (its probe log)")
    return state


def run_pssh(bench: Bench, work: Path) -> Run:
    hosts = ",".join(h.address for h in bench.lab.hosts)
    argv = [sys.executable, "-c", PSSH_SCRIPT, hosts, USER, str(bench.lab.key_file), str(bench.parallel), REMOTE]
    run, out = measure(argv)
    run.ok = int(out.strip() or 0)
    return run


def run_pssh_script(bench: Bench, work: Path) -> Run:
    listed = probes.discovery_probes(learned_state(bench))
    remote = work / "probes.sh"
    remote.write_text(probes.one_script(listed))
    hosts = ",".join(h.address for h in bench.lab.hosts)
    argv = [sys.executable, "-c", probes.PSSH_SCRIPT, hosts, USER, str(bench.lab.key_file), str(bench.parallel),
            str(remote)]  # fmt: skip
    run, out = measure(argv)
    run.ok = int((out.split() or ["0"])[0])
    bench.notes["pssh-script"] = f"{len(listed)} probe commands ({sum(s for _, s in listed)} with sudo), one exec"
    return run


def _ansible_env(bench: Bench, work: Path) -> dict[str, str]:
    return {
        **os.environ,
        "ANSIBLE_HOST_KEY_CHECKING": "True",
        "ANSIBLE_SSH_ARGS": f"-o UserKnownHostsFile={bench.lab.known_hosts} -o ControlMaster=auto "
        "-o ControlPersist=60s",
        "ANSIBLE_LOCAL_TEMP": str(work / "ansible-tmp"),
        "ANSIBLE_CONTROL_PATH_DIR": str(work / "cp"),
        "ANSIBLE_STDOUT_CALLBACK": "oneline",
    }


def _inventory(bench: Bench, work: Path) -> Path:
    inventory = work / "inventory.ini"
    inventory.write_text("[lab]\n" + "".join(f"{h.name} ansible_host={h.address}\n" for h in bench.lab.hosts))
    return inventory


def _ansible_binary(name: str) -> str:
    return shutil.which(name) or str(Path(sys.executable).with_name(name))


def run_ansible(bench: Bench, work: Path) -> Run:
    argv = [_ansible_binary("ansible"), "lab", "-i", str(_inventory(bench, work)), "-u", USER, "--private-key",
            str(bench.lab.key_file), "-f", str(bench.parallel), "-m", "raw", "-a", REMOTE]  # fmt: skip
    run, out = measure(argv, _ansible_env(bench, work), tree=True)
    run.ok = sum(1 for line in out.splitlines() if "| CHANGED" in line or "| SUCCESS" in line)
    return run


def run_ansible_playbook(bench: Bench, work: Path) -> Run:
    listed = probes.discovery_probes(learned_state(bench))
    book = probes.playbook(listed, work / "discovery.yml")
    env = {**_ansible_env(bench, work), "ANSIBLE_STDOUT_CALLBACK": "default"}
    argv = [_ansible_binary("ansible-playbook"), "-i", str(_inventory(bench, work)), "-u", USER, "--private-key",
            str(bench.lab.key_file), "-f", str(bench.parallel), str(book)]  # fmt: skip
    run, out = measure(argv, env, tree=True)
    run.ok = probes.recap_ok(out)
    return run


RUNNERS: dict[str, Callable[[Bench, Path], Run]] = {
    "wizard": run_wizard,
    "pssh": run_pssh,
    "ansible": run_ansible,
    "wizard-discovery": run_wizard_discovery,
    "wizard-learned": run_wizard_learned,
    "pssh-script": run_pssh_script,
    "ansible-playbook": run_ansible_playbook,
}


def installed(tool: str) -> bool:
    if tool not in RUNNERS:
        raise SystemExit(f"unknown tool {tool!r}: {', '.join(RUNNERS)}")
    if tool.startswith("pssh"):
        return subprocess.run([sys.executable, "-c", "import pssh.clients"], capture_output=True).returncode == 0
    if tool.startswith("ansible"):
        return Path(_ansible_binary("ansible-playbook")).exists()
    return True


def targets(scenario: str, medians: dict[str, float], peaks: dict[str, float]) -> list[str]:
    """The issue's targets against this run's medians."""
    lines = []

    def ratio(a: str, b: str, what: str, ok: Callable[[float], bool]) -> None:
        if a in medians and b in medians:
            r = medians[a] / medians[b]
            lines.append(f"{a} / {b} = {r:.2f} ({what}: {'met' if ok(r) else 'MISSED'})")

    if scenario == "check":
        ratio("wizard", "pssh", "target <= 1.00", lambda r: r <= 1.0)
    if scenario == "discovery":
        for wizard in ("wizard-discovery", "wizard-learned"):
            ratio(wizard, "pssh-script", "target <= 1.30", lambda r: r <= 1.3)
            ratio("ansible-playbook", wizard, "target >= 10", lambda r: r >= 10)
    for tool in ("wizard-discovery", "wizard-learned") if scenario in ("discovery", "memory") else ():
        if tool in peaks:
            verdict = "met" if peaks[tool] <= 300 else "MISSED"
            lines.append(f"{tool} peak memory {peaks[tool]:.0f} MiB (target <= 300 MiB: {verdict})")
    return lines


def _short(arg: str) -> str:
    """An argument as the command line shows it: the pssh program by name, the host list by its length."""
    if arg in (PSSH_SCRIPT, probes.PSSH_SCRIPT):
        return "<pssh program in bench/fanout*.py>"
    return arg if len(arg) < 120 else f"<{arg.count(',') + 1} addresses>"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--scenario", choices=SCENARIOS, default="check")
    parser.add_argument("--hosts", type=int, default=100)
    parser.add_argument("--parallel", type=int, default=64)
    parser.add_argument("--tools", help="comma-separated, in order (default: the scenario's)")
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    reason = missing_requirements()
    if reason:
        print(f"cannot run: {reason}", file=sys.stderr)
        return 2
    tools = (args.tools or SCENARIOS[args.scenario]).split(",")
    for tool in tools:
        installed(tool)  # an unknown name stops here, before 1,000 hosts are started
    lab = NsLab(Path(tempfile.gettempdir()) / "roce-wizard-bench-fanout", prefix="rb-", network="10.79.0.0/16")
    started = time.perf_counter()
    lab.up(args.hosts)
    print(f"$ {shlex.join(['python', *sys.argv])}")
    print(f"{args.hosts} hosts up in {time.perf_counter() - started:.1f} s; {args.parallel} at once; "
          f"{args.repeat} run(s) each; {os.cpu_count()} CPUs; scenario {args.scenario}")  # fmt: skip
    medians: dict[str, float] = {}
    peaks: dict[str, float] = {}
    commands: dict[str, list[str]] = {}
    try:
        with tempfile.TemporaryDirectory() as keep:
            bench = Bench(lab, args.parallel, Path(keep))
            print(f"{'tool':<18} {'wall s (median, min-max)':<26} {'ok hosts':<9} {'CPU s':<7} peak MiB (median)")
            missing = [t for t in tools if not installed(t)]
            for tool in missing:
                print(f"{tool:<18} not installed (pip install -r bench/requirements.txt)")
            runs: dict[str, list[Run]] = {t: [] for t in tools if t not in missing}
            for _ in range(args.repeat):  # round-robin, so a noisy minute on this machine hits every tool alike
                for tool in runs:
                    with tempfile.TemporaryDirectory() as tmp:
                        runs[tool].append(RUNNERS[tool](bench, Path(tmp)))
            for tool, done in runs.items():
                walls = [r.wall for r in done]
                medians[tool] = statistics.median(walls)
                peaks[tool] = statistics.median(r.peak_kib for r in done) / 1024
                commands[tool] = done[0].argv
                span = f"{medians[tool]:.2f} ({min(walls):.2f}-{max(walls):.2f})"
                cpu = statistics.median(r.cpu for r in done)
                print(f"{tool:<18} {span:<26} {min(r.ok for r in done):<9} {cpu:<7.1f} {peaks[tool]:.0f}", flush=True)
            for tool, note in bench.notes.items():
                print(f"  {tool}: {note}")
            for line in targets(args.scenario, medians, peaks):
                print(line)
            for tool, argv in commands.items():
                shown = [_short(a) for a in argv]
                print(f"  {tool}: {shlex.join(shown)}")
    finally:
        lab.down()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
