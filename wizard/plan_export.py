"""Plans for people: printed per host, or written as files plus a commands.sh an operator can review or run."""

from __future__ import annotations

import json
import shlex
import sys
from pathlib import Path
from typing import Any

from wizard.runner import StageOutcome
from wizard.step import HostPlan


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
        for outcome in outcomes:
            plan = outcome.plans.get(host)
            if plan is None:
                continue
            _print_host_plan(plan)
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


def _print_host_plan(plan: HostPlan) -> None:
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


def write_plan_dir(out: Path, outcomes: list[StageOutcome], *, simulated: bool) -> None:
    """Write ``out/<host>/files/<absolute path>`` and ``out/<host>/commands.sh`` for every planned host."""
    hosts = sorted({h for o in outcomes for h in o.plans})
    for host in hosts:
        folder = out / host
        lines = [
            "#!/usr/bin/env bash",
            f"# roce-wizard plan for {host}" + (" (SIMULATED cluster)" if simulated else ""),
            "# Review before running. Files to install are in ./files/ next to this script.",
            "# Every stage was planned from what the host looks like now. A real run re-plans each stage from fresh",
            "# facts after the earlier ones (a driver change renames RDMA devices; new addresses add GIDs): after",
            "# running one stage's section by hand, run `roce-wizard plan` again before the next.",
            "set -euo pipefail",
            'cd "$(dirname "$0")"',
            "",
        ]
        for outcome in outcomes:
            plan = outcome.plans.get(host)
            if plan is None:
                continue
            lines.append(
                f"# ---- stage {plan.stage}"
                + ("" if plan.changes else f": nothing to change ({plan.noop_reason or 'up to date'})")
            )
            for blocker in plan.blockers:
                lines.append(f"# REFUSED: {blocker}")
            for change in plan.changes:
                lines.append(f"# [{change.impact.value}] {change.summary}")
                if change.why:
                    lines.append(f"#   why: {change.why}")
                for file in change.files:
                    if file.secret:
                        lines.append(f"# {file.path} holds a secret the wizard generates when it applies; not exported")
                        continue
                    local = folder / "files" / file.path.lstrip("/")
                    local.parent.mkdir(parents=True, exist_ok=True)
                    local.write_text(file.content, encoding="utf-8")
                    rel = shlex.quote(f"files/{file.path.lstrip('/')}")
                    owner = f"-o {file.owner} -g {file.group}"
                    lines.append(f"sudo install -D {owner} -m {file.mode:04o} {rel} {shlex.quote(file.path)}")
                for command in change.commands:
                    lines.append(command.shell())
                if change.reboot:
                    lines.append(
                        "sudo systemctl reboot  # the script ends here; re-run the wizard after the host is back"
                    )
                lines.append("")
        folder.mkdir(parents=True, exist_ok=True)
        script = folder / "commands.sh"
        script.write_text("\n".join(lines) + "\n", encoding="utf-8")
        script.chmod(0o755)
