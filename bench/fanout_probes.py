"""The discovery comparison of bench/fanout.py: the probe commands roce-wizard's discovery ran, replayed by
parallel-ssh as one script per host and by an Ansible playbook as one task per command, plus the engine's own
account of its round trips per host."""

from __future__ import annotations

import json
import re
import shlex
import statistics
from pathlib import Path

import yaml

from wizard.executors.batch import new_token, script
from wizard.executors.ssh import SBIN_ON_PATH

Probe = tuple[str, bool]  # (command line, run with sudo), as in <state>/probes/<stage>.json

PSSH_SCRIPT = """
import sys
from pssh.clients import ParallelSSHClient
hosts, user, key, pool = sys.argv[1].split(","), sys.argv[2], sys.argv[3], int(sys.argv[4])
remote = open(sys.argv[5]).read()
client = ParallelSSHClient(hosts, user=user, pkey=key, pool_size=pool, timeout=60, num_retries=1)
output = client.run_command(remote, stop_on_errors=False)
client.join(output)
ok = lines = 0
for o in output:  # read every line, as the wizard does (it parses them)
    if o.exception is None:
        lines += sum(1 for _ in o.stdout) + sum(1 for _ in o.stderr)
        ok += o.exit_code == 0
print(ok, lines)
"""


def discovery_probes(state: Path) -> list[Probe]:
    """What discovery ran on its first host, in order, as the host log shows it: batched or not, every command
    that went over the wire (a declared prefetch the probe code never asked for included); the engine's probe
    log (``probes/discovery.json``) where there is no host log."""
    logs = sorted((state / "logs").glob("*.log"))
    probes: list[Probe] = []
    for line in logs[0].read_text().splitlines() if logs else []:
        m = re.match(r"\S+ \$ (sudo )?(.*)$", line)
        if m:
            probes.append((m.group(2), bool(m.group(1))))
    if probes:
        return list(dict.fromkeys(probes))
    learned = state / "probes" / "discovery.json"
    if not learned.exists():
        raise SystemExit(f"discovery left neither a host log nor {learned}: did it run?")
    return [(str(c), bool(s)) for c, s in json.loads(learned.read_text())]


def one_script(probes: list[Probe]) -> str:
    """All probes as one sh script, with the same per-command delimiters and exit statuses the wizard's batch
    prints (so the same bytes travel); sudo probes go through ``sudo -n``, as the wizard's do."""
    commands = [f"sudo -n -- sh -c {shlex.quote(c)}" if sudo else c for c, sudo in probes]
    return SBIN_ON_PATH + "\n" + f"set -- {new_token()}\n" + script(commands)  # the token the wizard passes as $1


def playbook(probes: list[Probe], path: Path) -> Path:
    """One task per probe with Ansible's cheapest module (``raw``: no Python module shipped per task); a probe
    that fails (lspci finding nothing) must not take the host out of the play, as it does not in discovery."""
    tasks = [
        {
            "name": f"probe {i}",
            "ansible.builtin.raw": SBIN_ON_PATH + command,
            "become": sudo,
            "changed_when": False,
            "failed_when": False,
        }
        for i, (command, sudo) in enumerate(probes)
    ]
    path.write_text(yaml.safe_dump([{"hosts": "lab", "gather_facts": False, "tasks": tasks}], sort_keys=False))
    return path


def recap_ok(stdout: str) -> int:
    """Hosts of an ``ansible-playbook`` recap that were neither unreachable nor failed."""
    found = re.findall(r"^\S+\s+: ok=\d+ .*?unreachable=(\d+)\s+failed=(\d+)", stdout, re.M)
    return sum(1 for unreachable, failed in found if unreachable == "0" and failed == "0")


def round_trips(state: Path) -> str:
    """Discovery's own account, per host log: probes that took a round trip of their own, outside the prefetch
    batches (the engine writes '[discovery] N probe(s) took a round trip of their own ...'). The batches themselves
    are one exec for the plain probes and one for the sudo probes, sent at once, the sudo one after the executor's
    one-time ``sudo -n true`` proof; those are not in the log."""
    counts = []
    for log in sorted((state / "logs").glob("*.log")):
        text = log.read_text(errors="replace")
        m = re.search(r"\[discovery\] (\d+) probe\(s\) took a round trip of their own", text)
        counts.append(int(m.group(1)) if m else 0)
    if not counts:
        return "no host logs"
    whole = sum(1 for c in counts if c == 0)
    return (
        f"{whole}/{len(counts)} hosts had every probe answered from the prefetch batches; probes with a round trip "
        f"of their own per host: median {statistics.median(counts):g}, max {max(counts)}"
    )
