"""Plans for people: printed per host, or written as one script per stage and host an operator can review or run."""

from __future__ import annotations

import json
import re
import shlex
import sys
from pathlib import Path
from typing import Any

from wizard.engine.runner import StageOutcome
from wizard.engine.stage_order import STAGE_IDS
from wizard.engine.state import StateStore
from wizard.engine.step import FileWrite, HostPlan


def print_plans(outcomes: list[StageOutcome], failures: dict[str, str], *, as_json: bool, simulated: bool) -> None:
    if as_json:
        doc: dict[str, Any] = {
            "simulated": simulated,
            "stages": {o.stage: {h: _public(p) for h, p in o.plans.items()} for o in outcomes},
            "failed_hosts": failures,
        }
        print(json.dumps(doc, indent=2))
        return
    tag = "[simulated] " if simulated else ""
    hosts = sorted({h for o in outcomes for h in o.plans} | set(failures))
    for host in hosts:
        print(f"{tag}# {host}")
        if host in failures:
            print(f"  cannot plan: {failures[host]}")
            continue
        said: set[str] = set()
        for outcome in outcomes:
            plan = outcome.plans.get(host)
            if plan is None:
                continue
            _print_host_plan(plan, said)
    sys.stdout.flush()


def _public(plan: HostPlan) -> dict[str, Any]:
    """A plan as JSON with secret file contents removed."""
    doc = plan.model_dump(mode="json")
    for change in doc["changes"]:
        for file in change["files"]:
            if file["secret"]:
                file["content"] = None
                file["before"] = None
    return doc


def _print_host_plan(plan: HostPlan, said: set[str]) -> None:
    new = [value for value in plan.predicted if value not in said]
    if plan.predicted:
        print(f"  {plan.stage}: planned from PREDICTED facts (a real run re-reads the host after each stage)")
    for value in new:
        print(f"  {plan.stage}: predicted: {value}")
    said.update(new)
    if plan.empty:
        print(f"  {plan.stage}: nothing to change" + (f" ({plan.noop_reason})" if plan.noop_reason else ""))
    for note in plan.notes:
        print(f"  {plan.stage}: note: {note}")
    for blocker in plan.blockers:
        print(f"  {plan.stage}: REFUSED: {blocker}")
    for change in plan.changes:
        print(f"  {plan.stage}: [{change.impact.value}] {change.summary}")
        for file in change.files:
            print(f"      write {file.path} (mode {file.mode:04o}, {file.owner}:{file.group})")
            for line in file.diff().splitlines():
                print(f"        {line}")
        for command in change.commands:
            print(f"      $ {command.shell()}")
        if change.reboot:
            print("      $ sudo systemctl reboot   # then wait for the host and re-verify")


def write_plan_dir(
    out: Path, outcomes: list[StageOutcome], *, simulated: bool, failures: dict[str, str] | None = None
) -> None:
    """Write ``out/<host>/NN-<stage>.sh`` (one script per stage, in order) and ``out/<host>/files/<path>``."""
    out.mkdir(parents=True, exist_ok=True)
    hosts = sorted({h for o in outcomes for h in o.plans})
    written: dict[str, list[str]] = {}
    for host in hosts:
        folder = out / host
        folder.mkdir(parents=True, exist_ok=True)
        for outcome in outcomes:
            plan = outcome.plans.get(host)
            if plan is None or plan.stage == "discovery":
                continue  # discovery only reads
            name = f"{stage_number(plan.stage):02d}-{plan.stage}.sh"
            script = folder / name
            script.write_text(stage_script(plan, folder, simulated=simulated), encoding="utf-8")
            script.chmod(0o755)
            written.setdefault(host, []).append(name)
    (out / "README.txt").write_text(_readme(written, simulated, failures or {}), encoding="utf-8")


def planning_failures(store: StateStore, outcomes: list[StageOutcome]) -> dict[str, str]:
    """Host -> why it could not be planned (a host failing discovery is planned no further)."""
    return {
        host: store.host(host).stage(outcome.stage).reason
        for outcome in outcomes
        for host, status in outcome.statuses.items()
        if status == "failed"
    }


def stage_number(stage: str) -> int:
    return STAGE_IDS.index(stage) if stage in STAGE_IDS else 99


def stage_script(plan: HostPlan, folder: Path, *, simulated: bool) -> str:
    """One stage's changes on one host as a bash script; its files are copied under ``folder/files``."""
    lines = [
        "#!/usr/bin/env bash",
        f"# roce-wizard plan: stage {plan.stage} on {plan.host}" + (" (SIMULATED cluster)" if simulated else ""),
        "# Review before running. Files to install are in ./files/ next to this script.",
        "set -euo pipefail",
        'cd "$(dirname "$0")"',
        "",
    ]
    if plan.predicted:
        lines += [
            "# Planned from PREDICTED facts: earlier stages change what this host looks like. The real run re-reads",
            "# the host here, after the earlier scripts, and re-plans this stage from what is really there. If you run",
            "# the scripts by hand, run `roce-wizard plan --answers FILE --from " + plan.stage + "` again first; the",
            "# checks below stop this script when a prediction did not come true.",
        ]
        lines += [f"#   predicted: {value}" for value in plan.predicted]
        lines += [*plan.predicted_checks, ""]
    for blocker in plan.blockers:
        lines.append(f"# REFUSED: {blocker}")
    if plan.blockers:
        refused = shlex.quote(f"roce-wizard refused this stage on {plan.host}: see the REFUSED lines")
        lines += [f"echo {refused} >&2", "exit 1"]
        return "\n".join(lines) + "\n"
    if not plan.changes:
        lines.append(f"# nothing to change ({plan.noop_reason or 'up to date'})")
    for note in plan.notes:
        lines.append(f"# note: {note}")
    for change in plan.changes:
        lines += ["", f"# [{change.impact.value}] {change.summary}"]
        if change.why:
            lines.append(f"#   why: {change.why}")
        for file in change.files:
            lines += _install_file(file, folder)
        lines += [command.shell() for command in change.commands]
        if change.reboot:
            lines.append("sudo systemctl reboot  # the script ends here; run the next one after the host is back")
    return "\n".join(lines) + "\n"


def _install_file(file: FileWrite, folder: Path) -> list[str]:
    if file.secret:
        # A secret never leaves the wizard; the operator supplies it (the same file on every host that shares it).
        var = re.sub(r"\W", "_", file.path.rsplit("/", 1)[-1]).upper() + "_FILE"
        return [
            f"# {file.path} holds a secret; it is not exported. Give a file holding it (shared by every host that",
            "# uses it; e.g. made once with: openssl rand -hex 32 > token && chmod 600 token):",
            f': "${{{var}:?set {var} to a file holding the secret for {file.path}}}"',
            f'sudo install -D -o {file.owner} -g {file.group} -m {file.mode:04o} "${var}" {shlex.quote(file.path)}',
        ]
    local = folder / "files" / file.path.lstrip("/")
    local.parent.mkdir(parents=True, exist_ok=True)
    local.write_text(file.content, encoding="utf-8")
    rel = shlex.quote(f"files/{file.path.lstrip('/')}")
    return [f"sudo install -D -o {file.owner} -g {file.group} -m {file.mode:04o} {rel} {shlex.quote(file.path)}"]


def _readme(written: dict[str, list[str]], simulated: bool, failures: dict[str, str]) -> str:
    lines = [
        "roce-wizard plan" + (" (SIMULATED cluster)" if simulated else ""),
        "",
        "<host>/NN-<stage>.sh  one script per stage, run in number order on that host (as a sudo-capable user)",
        "<host>/files/...      the files those scripts install, at their absolute path below files/",
        "",
        "Stages after the first were planned from PREDICTED facts where an earlier stage changes them (RDMA device",
        "names after the driver install, addresses and RoCE v2 GIDs after the network stage). Each such script lists",
        "its predictions and stops if one did not come true. The wizard itself never runs from predictions: it",
        "re-reads every host after each stage.",
        "",
    ]
    for host, names in written.items():
        lines.append(f"{host}: " + " ".join(names))
    for host, why in sorted(failures.items()):
        lines.append(f"{host}: NOT PLANNED: {why}")
    return "\n".join(lines) + "\n"
