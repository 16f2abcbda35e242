"""Chaos on real kernels: SIGKILL the wizard during a safe-applied network change on the qemu pair, resume, check.

    python bench/chaos_vm.py --kills 10 [--seed S] [--per-round 3] [--workdir DIR] [--json]

Each round starts from the VMs' original files, runs `roce-wizard --only discovery,network --yes` with a bond and a
rail under safe_apply (the netplan change arms the host's automatic revert), SIGKILLs it on a random command of the
apply (plus a random fraction of a second: writing files, arming the revert, the armed change, netplan apply, the
confirm), resumes with the same command until a run exits 0, and then checks on the VMs: both hosts verified, the
wizard's files identical to a clean run's (no doubled line or block), the first backup of each file the original,
no revert timer armed and no revert script left, and `roce-wizard rollback --yes` brings back the original files
(which starts the next round from the originals). Needs qemu and the cached VM image (tests/vmlab).
"""

from __future__ import annotations

import argparse
import asyncio
import base64
import json
import os
import random
import re
import shlex
import signal
import subprocess
import sys
import tempfile
import time
from collections import Counter
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path[:0] = [str(ROOT), str(ROOT / "bench")]

from chaos import check_state, doubled_lines, report  # noqa: E402

from tests.vmlab.test_real_kernel import BOND_AND_RAIL  # noqa: E402

REVERT_DIR = "/var/lib/roce-wizard/revert"
WATCHED = "/etc/netplan /etc/sysctl.d /etc/systemd/network /etc/modprobe.d /etc/modules-load.d"
SAFE_APPLY = {"revert_after_s": 60, "confirm_within_s": 20}
RUN_LIMIT_S = 600
# Commands of the apply itself (probes read netplan files too, so "netplan" alone is not one of them).
CHANGING = re.compile(r"install -D|systemd-run|netplan (generate|apply)|mkdir --|systemctl stop|sysctl -p|rm -f --")


@dataclass
class VmChaosResult:
    seed: int
    kills: int = 0
    rounds: int = 0
    runs: int = 0
    phases: Counter[str] = field(default_factory=Counter)
    apply_commands: int = 0
    problems: list[str] = field(default_factory=list)

    def as_dict(self) -> dict[str, Any]:
        return {
            "seed": self.seed,
            "kills_survived": self.kills if not self.problems else None,
            "kills": self.kills,
            "rounds": self.rounds,
            "runs": self.runs,
            "kills_by_phase": dict(self.phases),
            "apply_commands": self.apply_commands,
            "problems": self.problems,
        }


@contextmanager
def vm_lab(workdir: Path) -> Iterator[Any]:
    """The qemu pair resumed from its booted snapshot, set up as tests/vmlab's ``lab_vms`` fixture does."""
    from tests.vmlab import conftest as vmc
    from tests.vmlab.vms import SNAPSHOT, VmPair, ensure_image, locked

    image = ensure_image()
    with locked(image.with_name(image.name + ".snapshot.lock")):
        snapshot = vmc._make_snapshot(image)
    disks = workdir / "vms"
    disks.mkdir(parents=True, exist_ok=True)
    for disk in snapshot.glob("*.qcow2"):
        subprocess.run(["cp", "--reflink=auto", str(disk), str(disks / disk.name)], check=True)
    pair = VmPair(image, disks)
    pair.start(loadvm=SNAPSHOT)
    lab = vmc.LabVms(pair, workdir)
    try:
        vmc._write_known_hosts(pair)
        pair.wait_for_ssh_ports()
        asyncio.run(vmc._wait_ssh(pair, time.monotonic() + vmc.BOOT_TIMEOUT_S))
        for vm in pair.vms:
            ready = lab.ssh(
                vm,
                f"date -s @{time.time():.3f} >/dev/null && modprobe rdma_rxe && "
                "rdma link add rxe_eth3 type rxe netdev eth3 && "
                f"printf %s {shlex.quote(vmc.STATIC_MANAGEMENT)} > /etc/netplan/01-management.yaml",
            )
            if ready.exit_status != 0:
                raise RuntimeError(f"{vm.name}: lab setup failed: {ready.stderr}")
        yield lab
    finally:
        lab.close()
        pair.stop()
        for disk in disks.glob("*.qcow2"):
            disk.unlink()


def host_files(lab: Any, vm: Any) -> dict[str, str]:
    """Every file under the watched configuration directories, path -> content."""
    script = (
        f'for f in $(find {WATCHED} -type f 2>/dev/null | sort); do printf \'%s\\0\' "$f"; base64 -w0 "$f"; echo; done'
    )
    out = lab.ssh(vm, script).stdout
    files = {}
    for line in out.splitlines():
        if "\0" in line:
            path, data = line.split("\0", 1)
            files[path] = base64.b64decode(data).decode("utf-8", "replace")
    return files


def phase_of(commands: list[str]) -> str:
    """Where in the safe apply the wizard was, from the commands it had started (all hosts, in order)."""
    phase = "writing files"
    for command in commands:
        if "systemd-run" in command and "roce-wizard-revert" in command:
            phase = "armed, before the change"
        elif "netplan" in command and phase.startswith("armed"):
            phase = "armed, during netplan"
        elif "mkdir" in command and ".claimed" in command:
            phase = "confirming"
        elif "systemctl stop" in command and "roce-wizard-revert" in command:
            phase = "after the confirm"
    return phase


def wizard_run(lab: Any, answers: Path, log: Path, kill_at: tuple[int, float] | None) -> tuple[int | None, list[str]]:
    """Run the wizard; with ``kill_at = (k, delay)`` SIGKILL it ``delay`` s after its k-th command of the apply.

    Returns (exit code or None when killed, the apply's commands seen before the kill)."""
    argv = [sys.executable, "-m", "wizard", "--answers", str(answers), "--only", "discovery,network", "--yes"]
    argv += ["--json", "--state-dir", str(lab.workdir / "state")]
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    commands: list[str] = []
    applying = False
    with log.open("w") as err:
        proc = subprocess.Popen(argv, cwd=ROOT, env=env, stdout=subprocess.PIPE, stderr=err, text=True,
                                start_new_session=True)  # fmt: skip
        assert proc.stdout is not None
        deadline = time.monotonic() + RUN_LIMIT_S
        for line in proc.stdout:
            event = json.loads(line) if line.startswith("{") else {}
            applying = applying or (event.get("event") == "change_started" and event.get("stage") == "network")
            if applying and event.get("event") == "command":
                commands.append(event["command"])
                if kill_at is not None and len(commands) > kill_at[0]:
                    time.sleep(kill_at[1])
                    os.killpg(proc.pid, signal.SIGKILL)
                    proc.wait()
                    return None, commands
            if time.monotonic() > deadline:
                os.killpg(proc.pid, signal.SIGKILL)
                raise RuntimeError(f"a run took over {RUN_LIMIT_S}s; log: {log}")
        return proc.wait(), commands


def check_hosts(lab: Any, originals: dict[str, dict[str, str]], clean: dict[str, dict[str, str]] | None) -> list[str]:
    """Files as a clean run writes them, first backups the originals, no armed revert, the bond up."""
    problems: list[str] = []
    state = lab.workdir / "state"
    for vm in lab.vms:
        now = host_files(lab, vm)
        for path, text in sorted(now.items()):
            if originals[vm.name].get(path) == text:
                continue
            reference = None if clean is None else clean[vm.name].get(path)
            problems += [f"{vm.name}: doubled {d}" for d in doubled_lines(path, text, reference)]
            if clean is not None and reference != text:
                problems.append(f"{vm.name}: {path} differs from the clean run's")
        record = json.loads((state / "hosts" / f"{vm.name}.json").read_text())["stages"].get("network", {})
        seen: set[str] = set()
        for backup in record.get("backups", []):
            original = "/" + backup.split("/", 7)[-1]  # /var/lib/roce-wizard/backups/<run>/<stage>/<path>
            if original in seen:
                continue
            seen.add(original)
            had = lab.ssh(vm, f"cat -- {shlex.quote(backup)}")
            if had.exit_status != 0 or had.stdout != originals[vm.name].get(original):
                problems.append(f"{vm.name}: first backup {backup} is not the original {original}")
        timers = lab.ssh(vm, "systemctl list-timers --all --no-legend 'roce-wizard-revert-*'").stdout.strip()
        if timers:
            problems.append(f"{vm.name}: revert timer left armed: {timers}")
        left = lab.ssh(vm, f"ls -1 {REVERT_DIR} 2>/dev/null").stdout.split()
        problems += [f"{vm.name}: revert script left: {n}" for n in left if n.endswith(".sh")]
        if lab.ssh(vm, "ip link show bond0 | grep -q 'state UP'").exit_status != 0:
            problems.append(f"{vm.name}: bond0 is not up after the run verified (a revert undid it?)")
    return problems


def rollback_to_originals(lab: Any, answers: Path, originals: dict[str, dict[str, str]]) -> list[str]:
    proc = lab.run_cli("rollback", "--answers", str(answers), "--yes")
    problems = [] if proc.returncode == 0 else [f"rollback exited {proc.returncode}: {proc.stderr.strip()[-300:]}"]
    for vm in lab.vms:
        now = host_files(lab, vm)
        for path in sorted(set(now) | set(originals[vm.name])):
            if now.get(path) != originals[vm.name].get(path):
                problems.append(f"{vm.name}: after rollback {path} is not the original")
        if lab.ssh(vm, "ip link show bond0").exit_status == 0:
            problems.append(f"{vm.name}: bond0 still exists after rollback")
    return problems


def run_vm_chaos(kills: int, seed: int, workdir: Path, per_round: int = 3, clean_run: bool = True,
                 say: Callable[[str], None] = print) -> VmChaosResult:  # fmt: skip
    rng = random.Random(seed)
    result = VmChaosResult(seed)
    with vm_lab(workdir) as lab:
        answers = lab.answers(BOND_AND_RAIL, safe_apply=SAFE_APPLY)
        originals = {vm.name: host_files(lab, vm) for vm in lab.vms}
        clean = None
        result.apply_commands = 32  # without a clean run: what one apply on both hosts starts (measured)
        if clean_run:
            rc, commands = wizard_run(lab, answers, workdir / "clean.log", None)
            result.runs += 1
            if rc != 0:
                result.problems.append(f"the clean run exited {rc}; log {workdir / 'clean.log'}")
                return result
            # The window is the apply itself: up to the last command that changed something (then re-probes).
            result.apply_commands = 1 + max(i for i, c in enumerate(commands) if CHANGING.search(c))
            clean = {vm.name: host_files(lab, vm) for vm in lab.vms}
            result.problems += [f"clean run: {p}" for p in check_hosts(lab, originals, None)]
            result.problems += [f"clean run: {p}" for p in rollback_to_originals(lab, answers, originals)]
            say(f"clean run: {len(commands)} commands in the apply; killing {kills} times, seed {seed}")
        while result.kills < kills and not result.problems:
            result.rounds += 1
            if (lab.workdir / "state").exists():  # each round starts a state of its own; the old one is kept
                (lab.workdir / "state").rename(workdir / f"state-{result.rounds - 1}")
            in_round, failures = 0, 0
            while True:
                killing = result.kills < kills and in_round < per_round
                # A resume applies only what is left (often half the commands or fewer): draw its kill from fewer.
                span = result.apply_commands if in_round == 0 else max(4, result.apply_commands // 2)
                kill_at = (rng.randrange(span), rng.uniform(0, 1.5)) if killing else None
                log = workdir / f"run-{result.runs}.log"
                result.runs += 1
                rc, commands = wizard_run(lab, answers, log, kill_at)
                problems, unverified = check_state(lab.workdir / "state")
                result.problems += [f"round {result.rounds}, run {result.runs}: {p}" for p in problems]
                if rc is None:
                    result.kills += 1
                    in_round += 1
                    phase = phase_of(commands)
                    result.phases[phase] += 1
                    say(f"round {result.rounds}: kill {result.kills} after command {kill_at[0] + 1} "  # type: ignore[index]
                        f"(+{kill_at[1]:.2f}s: {phase}): {commands[-1]}")  # type: ignore[index]  # fmt: skip
                    continue
                if rc == 0:
                    if unverified:
                        result.problems.append(f"round {result.rounds}: exit 0 but not verified: {unverified}")
                    break
                failures += 1
                say(f"round {result.rounds}: run exited {rc}: {log.read_text().strip().splitlines()[-1:]}")
                if failures >= 3:
                    result.problems.append(f"round {result.rounds}: 3 resumes exited non-zero; log {log}")
                    break
            if not result.problems:
                result.problems += [f"round {result.rounds}: {p}" for p in check_hosts(lab, originals, clean)]
            if not result.problems:
                found = rollback_to_originals(lab, answers, originals)
                result.problems += [f"round {result.rounds}: {p}" for p in found]
            say(
                f"round {result.rounds}: {'checked' if not result.problems else 'FAILED'} ({result.kills} kills so far)"
            )
    return result


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--kills", type=int, default=10)
    parser.add_argument("--seed", type=int, default=None)
    parser.add_argument("--per-round", type=int, default=3, help="kills before a round's run may finish")
    parser.add_argument("--no-clean-run", action="store_true", help="skip the reference run (faster, weaker)")
    parser.add_argument("--workdir", type=Path, default=None, help="keep logs and states here (default: a temp dir)")
    parser.add_argument("--json", action="store_true", help="print the result as one JSON object")
    args = parser.parse_args(argv)
    seed = args.seed if args.seed is not None else random.SystemRandom().randrange(2**31)
    workdir = args.workdir or Path(tempfile.mkdtemp(prefix="roce-wizard-chaos-vm-"))
    workdir.mkdir(parents=True, exist_ok=True)
    say = (lambda _msg: None) if args.json else (lambda msg: print(msg, flush=True))  # noqa: E731
    result = run_vm_chaos(args.kills, seed, workdir, args.per_round, not args.no_clean_run, say)
    return report(result, seed, workdir, as_json=args.json, detail=f"kills by phase: {dict(result.phases)}")


if __name__ == "__main__":
    sys.exit(main())
