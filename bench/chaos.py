"""Chaos harness: SIGKILL the headless demo at random moments, resume it, and check nothing was lost or doubled.

    python bench/chaos.py --kills 100 [--seed S] [--time-scale 0.05] [--workdir DIR] [--json]

Each round starts from bare simulated hosts, kills ``python -m wizard --demo --yes`` at a moment drawn uniformly over
the measured length of one clean run, resumes with the same command (killing it again the same way) until a run
exits 0, then checks the state and the simulated hosts' disks (``<state>/lab/<host>.json``). Rounds repeat until the
kills are spent. Killing the wizard also kills the simulated hosts (they live in its process): to them every kill is
a power cut, which is harsher than a control-machine crash.
"""

from __future__ import annotations

import argparse
import base64
import json
import os
import random
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
BACKUP_ROOT = "/var/lib/roce-wizard/backups"
REVERT_DIR = "/var/lib/roce-wizard/revert"
# Paths the hosts or the wizard rewrite wholesale on every run (logs, caches): not checked for doubled lines.
VOLATILE = ("/var/log/", "/var/lib/roce-wizard/", "/tmp/", "/run/", "/var/cache/", "/var/lib/dpkg/", "/proc/")


@dataclass
class ChaosResult:
    seed: int
    kills: int = 0
    rounds: int = 0
    runs: int = 0
    clean_run_s: float = 0.0
    problems: list[str] = field(default_factory=list)
    checked: Counter[str] = field(default_factory=Counter)
    """How many files each disk check looked at (a check that saw nothing proved nothing)."""

    def as_dict(self) -> dict[str, Any]:
        return {
            "seed": self.seed,
            "kills_survived": self.kills if not self.problems else None,
            "kills": self.kills,
            "rounds": self.rounds,
            "runs": self.runs,
            "clean_run_s": round(self.clean_run_s, 2),
            "checked": dict(self.checked),
            "problems": self.problems,
        }


# -- the simulated disks ---------------------------------------------------------------------------------------
def disk_files(image: dict[str, Any]) -> dict[str, bytes]:
    """Every regular file of a saved disk image (wizard/lab/disk.py), path -> content."""
    files: dict[str, bytes] = {}
    dirs: set[str] = set()

    def walk(node: dict[str, Any], path: str) -> None:
        if node["t"] == "d":
            dirs.add(path or "/")
            for name, child in node["c"].items():
                walk(child, f"{path}/{name}")
        elif node["t"] == "f":
            files[path] = base64.b64decode(node["data"])

    walk({"t": "d", "c": image["tree"]}, "")
    return files


def disk_dirs(image: dict[str, Any], under: str) -> list[str]:
    """Names of the directories directly under ``under`` in a disk image."""
    node: dict[str, Any] = {"t": "d", "c": image["tree"]}
    for part in under.strip("/").split("/"):
        node = node.get("c", {}).get(part, {})
    return sorted(name for name, child in node.get("c", {}).items() if child["t"] == "d")


def bare_disks(names: list[str]) -> dict[str, dict[str, bytes]]:
    """The files of each host as the simulated lab first boots it (the originals the wizard must back up)."""
    sys.path.insert(0, str(ROOT))
    from wizard.answers.model import load_answers
    from wizard.answers.profiles import demo_answers
    from wizard.lab import Lab
    from wizard.lab.disk import _dump

    answers = load_answers(demo_answers(None))
    mgmt = {h.name: h.address for h in answers.hosts}
    lab = Lab.for_profile("reference", [h.name for h in answers.hosts], mgmt_addresses=mgmt)
    out = {}
    for name in names:
        tree = {n: _dump(node) for n, node in lab.host(name).fs.root.children().items()}
        out[name] = disk_files({"tree": {k: v for k, v in tree.items() if v is not None}})
    return out


def significant(line: str) -> bool:
    """A line whose repetition would mean a doubled setting (not a blank, a comment or a lone bracket)."""
    text = line.strip()
    return bool(text) and not text.startswith("#") and any(ch.isalnum() for ch in text)


def doubled_lines(path: str, text: str, reference: str | None) -> list[str]:
    """Lines that occur more often than in the clean run's copy of the file; without one, a line repeated at once.

    Generated files legitimately repeat lines (one `mtu: 9000` per port), so only the clean run says how many."""
    lines = [ln.rstrip() for ln in text.splitlines()]
    if reference is None:
        pairs = zip(lines, lines[1:], strict=False)
        return [f"{path}: {a!r} twice in a row" for a, b in pairs if a == b and significant(a)]
    counts = Counter(ln for ln in lines if significant(ln))
    allowed = Counter(ln.rstrip() for ln in reference.splitlines() if significant(ln))
    over = [(line, n) for line, n in counts.items() if n > max(1, allowed[line])]
    return [f"{path}: {line!r} x{n} (clean run: {allowed[line]})" for line, n in over]


def check_disks(
    lab_dir: Path,
    bare: dict[str, dict[str, bytes]],
    reference: dict[str, dict[str, bytes]] | None,
    checked: Counter[str] | None = None,
) -> list[str]:
    """Doubled lines in files the wizard wrote, backups of the wizard's own files, revert scripts left armed."""
    problems: list[str] = []
    for name, originals in bare.items():
        image = json.loads((lab_dir / f"{name}.json").read_text(encoding="utf-8"))
        files = disk_files(image)
        ref = (reference or {}).get(name, {})
        for path, data in sorted(files.items()):
            if path.startswith(VOLATILE) or originals.get(path) == data:
                continue  # untouched by the wizard
            if checked is not None:
                checked["written files"] += 1
            text = data.decode("utf-8", "replace")
            expected = ref[path].decode("utf-8", "replace") if path in ref else None
            problems += [f"{name}: doubled line {d}" for d in doubled_lines(path, text, expected)]
        problems += [f"{name}: {p}" for p in check_backups(files, originals, disk_dirs(image, BACKUP_ROOT))]
        if checked is not None:
            checked["backups"] += sum(p.startswith(BACKUP_ROOT + "/") for p in files)
            checked["revert files"] += sum(p.startswith(REVERT_DIR + "/") for p in files)
        for path in sorted(p for p in files if p.startswith(REVERT_DIR + "/")):
            if not path.endswith(".reverted"):
                problems.append(f"{name}: revert left armed: {path}")
    return problems


def check_backups(files: dict[str, bytes], originals: dict[str, bytes], runs: list[str]) -> list[str]:
    """The first backup of each path must hold the host's original file (runs sort by time: ids are timestamps)."""
    problems: list[str] = []
    seen: set[str] = set()
    for run in runs:  # oldest first
        prefix = f"{BACKUP_ROOT}/{run}/"
        for backup in sorted(p for p in files if p.startswith(prefix)):
            original = "/" + backup[len(prefix) :].split("/", 1)[1]  # <run>/<stage>/<path>
            if original in seen:
                continue
            seen.add(original)
            if original not in originals:
                problems.append(f"first backup {backup} is of a file the wizard created (no original existed)")
            elif files[backup] != originals[original]:
                problems.append(f"first backup {backup} is not the original {original} (the wizard's own version?)")
    return problems


def check_state(state: Path) -> tuple[list[str], list[str]]:
    """Load the state as the wizard does; returns (problems, hosts not fully verified)."""
    sys.path.insert(0, str(ROOT))
    from wizard.engine.state import StateStore
    from wizard.errors import StateError

    store = StateStore(state)
    try:
        store.load_run()
        unverified = []
        for name in store.host_names():
            record = store.host(name)
            bad = [f"{s}={r.status}" for s, r in record.stages.items() if r.status != "done"]
            if bad or not record.stages:
                unverified.append(f"{name} ({', '.join(bad) or 'no stages'})")
        return [], unverified
    except StateError as exc:
        return [f"state does not load: {exc}"], []


# -- the runs ----------------------------------------------------------------------------------------------------
def wizard_run(state: Path, env: dict[str, str], log: Path, kill_after: float | None, limit_s: float) -> int | None:
    """Run the headless demo; SIGKILL it (its whole process group) after ``kill_after`` s. None: it was killed."""
    argv = [sys.executable, "-m", "wizard", "--demo", "--yes", "--state-dir", str(state)]
    with log.open("w") as out:
        proc = subprocess.Popen(argv, cwd=ROOT, env=env, stdout=out, stderr=subprocess.STDOUT, start_new_session=True)
        try:
            rc = proc.wait(timeout=kill_after if kill_after is not None else limit_s)
            return rc
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
            if kill_after is None:
                raise RuntimeError(f"a run took over {limit_s:.0f}s (hung?); log: {log}") from None
            return None


def run_chaos(kills: int, seed: int, workdir: Path, time_scale: float = 0.05, say: Any = print) -> ChaosResult:
    rng = random.Random(seed)
    result = ChaosResult(seed)
    env = {**os.environ, "ROCE_WIZARD_LAB_TIME_SCALE": str(time_scale), "PYTHONPATH": str(ROOT)}
    env.pop("ROCE_WIZARD_SUDO_PASSWORD", None)
    clean = workdir / "clean"
    shutil.rmtree(clean, ignore_errors=True)
    started = time.monotonic()
    rc = wizard_run(clean, env, workdir / "clean.log", None, 600)
    result.clean_run_s = time.monotonic() - started
    if rc != 0:
        result.problems.append(f"the clean reference run exited {rc}; see {workdir / 'clean.log'}")
        return result
    names = sorted(p.stem for p in (clean / "lab").glob("*.json"))
    bare = bare_disks(names)
    reference = {n: disk_files(json.loads((clean / "lab" / f"{n}.json").read_text())) for n in names}
    result.problems += [f"clean run: {p}" for p in check_disks(clean / "lab", bare, None)]
    limit = max(60.0, result.clean_run_s * 10)
    say(f"clean run {result.clean_run_s:.1f}s; killing {kills} times, seed {seed}")
    while result.kills < kills and not result.problems:
        result.rounds += 1
        state = workdir / f"round-{result.rounds}"
        shutil.rmtree(state, ignore_errors=True)
        failures = 0
        while True:
            killing = result.kills < kills
            delay = rng.uniform(0.0, result.clean_run_s) if killing else None
            log = workdir / f"round-{result.rounds}-run-{result.runs}.log"
            result.runs += 1
            rc = wizard_run(state, env, log, delay, limit)
            problems, unverified = check_state(state)
            result.problems += [f"round {result.rounds}, run {result.runs}: {p}" for p in problems]
            if rc is None:
                result.kills += 1
                say(f"round {result.rounds}: kill {result.kills} at {delay:.2f}s")
                continue
            if rc == 0:
                if unverified:
                    result.problems.append(f"round {result.rounds}: exit 0 but not verified: {'; '.join(unverified)}")
                break
            failures += 1
            tail = log.read_text(errors="replace").strip().splitlines()[-3:]
            say(f"round {result.rounds}: resume exited {rc}: {' | '.join(tail)}")
            if failures >= 3:
                result.problems.append(f"round {result.rounds}: 3 resumes exited non-zero (last {rc}); log: {log}")
                break
        if (state / "lab").is_dir():
            found = check_disks(state / "lab", bare, reference, result.checked)
            result.problems += [f"round {result.rounds}: {p}" for p in found]
        if not result.problems:
            shutil.rmtree(state, ignore_errors=True)
    return result


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--kills", type=int, default=100)
    parser.add_argument("--seed", type=int, default=None)
    parser.add_argument("--time-scale", type=float, default=0.05, help="ROCE_WIZARD_LAB_TIME_SCALE for the lab")
    parser.add_argument("--workdir", type=Path, default=None, help="keep state and logs here (default: a temp dir)")
    parser.add_argument("--json", action="store_true", help="print the result as one JSON object")
    args = parser.parse_args(argv)
    seed = args.seed if args.seed is not None else random.SystemRandom().randrange(2**31)
    workdir = args.workdir or Path(tempfile.mkdtemp(prefix="roce-wizard-chaos-"))
    workdir.mkdir(parents=True, exist_ok=True)
    say = (lambda _msg: None) if args.json else (lambda msg: print(msg, flush=True))  # noqa: E731
    result = run_chaos(args.kills, seed, workdir, args.time_scale, say)
    return report(result, seed, workdir, as_json=args.json, detail=f"disk checks looked at: {dict(result.checked)}")


def report(result: Any, seed: int, workdir: Path, *, as_json: bool, detail: str) -> int:
    """Print a chaos run's outcome (this harness's and bench/chaos_vm.py's); the exit code: 0 when every check held."""
    if as_json:
        print(json.dumps(result.as_dict()))
    else:
        for problem in result.problems:
            print(f"PROBLEM: {problem}")
        verdict = "survived" if not result.problems else "ran; FAILED checks after"
        print(detail)
        print(f"{verdict} {result.kills} kills in {result.rounds} round(s), {result.runs} runs; seed {seed}")
        print(f"state and logs: {workdir}")
    return 0 if not result.problems else 1


if __name__ == "__main__":
    sys.exit(main())
