"""One stage's HostPlan on one host as Ansible tasks: the same files, commands, guard and reboot as
wizard/engine/apply.py."""

from __future__ import annotations

import hashlib
import re
import shlex
from typing import Any

from wizard.engine.step import Change, FileWrite, HostPlan, Impact, RemoteCommand
from wizard.export.ansible_guard import dirs_task, guarded_block, plain, short

MARKER_DIR = "/var/lib/roce-wizard/ansible"
"""Where a change made only of commands records that it ran (its `creates`), so a second run changes nothing."""


class Unsafe(str):
    """A string Ansible must not template (dumped with the `!unsafe` tag): argv and stdin from the plan."""


def literal(value: str) -> str:
    """``value`` as Ansible must take it: marked unsafe when it holds anything Jinja would read."""
    return Unsafe(value) if re.search(r"\{[{%#]|[}%#]\}", value) else value


def title(stage: str) -> str:
    """Task names start with the stage, capitalised (ansible-lint name[casing])."""
    return stage.capitalize()


def secret_var(file: FileWrite) -> str:
    """The variable that names a local file holding a secret the export never contains."""
    return "roce_wizard_secret_" + re.sub(r"\W", "_", file.path.rsplit("/", 1)[-1]).lower() + "_file"


def local_file(host: str, file: FileWrite) -> str:
    """A file's place under the role's files/ folder (and the copy task's `src`)."""
    return f"{host}/{file.path.lstrip('/')}"


def predicted_checks_file(host: str) -> str:
    """The role's files/ path of the script that stops the stage when a prediction did not come true."""
    return f"{host}/predicted-checks.sh"


def predicted_checks_script(plan: HostPlan) -> str:
    return (
        "\n".join(
            [
                "#!/bin/bash",
                f"# roce-wizard: predictions stage {plan.stage} was planned from",
                "set -u",
                *plan.predicted_checks,
            ]
        )
        + "\n"
    )


def host_tasks(plan: HostPlan, guard: tuple[float, float], reboot_timeout_s: int) -> list[dict[str, Any]]:
    """Every task of ``plan``, in the order apply.py runs them; ``guard`` is (revert_after_s, confirm_within_s)."""
    stage, t = plan.stage, title(plan.stage)
    tasks: list[dict[str, Any]] = []
    if plan.predicted_checks:
        tasks.append(
            {
                "name": f"{t} | the predictions this plan was made from came true",
                "ansible.builtin.script": {"cmd": predicted_checks_file(plan.host), "executable": "/bin/bash"},
                "changed_when": False,
            }
        )
    if plan.blockers:
        tasks.append({"name": f"{t} | refused", "ansible.builtin.fail": {"msg": "; ".join(plan.blockers)}})
        return tasks
    directories = [MARKER_DIR] if any(not c.files for c in plan.changes) else []
    for file in (f for c in plan.changes for f in c.files):
        directory = file.path.rsplit("/", 1)[0] or "/"
        if directory not in directories:
            directories.append(directory)
    if directories:
        tasks.append(dirs_task(t, directories, f"{stage}_dirs"))
    for n, change in enumerate(plan.changes):
        tasks += change_tasks(stage, plan.host, n, change, guard, reboot_timeout_s)
    return tasks


def change_tasks(
    stage: str, host: str, n: int, change: Change, guard: tuple[float, float], reboot_timeout_s: int
) -> list[dict[str, Any]]:
    """Files (copy, backup), then commands, then a reboot; commands run only when a file changed (or, for a change
    without files, once: a marker keyed on the change's content records it)."""
    t = title(stage)
    reg = f"{stage}_c{n}"
    tasks: list[dict[str, Any]] = []
    for i, file in enumerate(change.files):
        tasks += _copy_tasks(t, host, file, f"{reg}_f{i}")
    if change.files:
        when = " or ".join(f"{reg}_f{i} is changed" for i in range(len(change.files)))
    else:
        marker = f"{MARKER_DIR}/{stage}-{_digest(change)}.done"
        tasks.append(
            {
                "name": f"{t} | has this change run already: {short(change.summary)}",
                "ansible.builtin.stat": {"path": marker},
                "register": f"{reg}_done",
            }
        )
        when = f"not {reg}_done.stat.exists"
    body = [_command_task(t, cmd, f"{reg}_k{j}") for j, cmd in enumerate(change.commands)]
    if guarded(change):
        for task in body:
            # A command that cuts SSH is what the guard is for: go on to the fresh connection, as apply.py does.
            task["ignore_unreachable"] = True
        tasks.append(guarded_block(t, host, reg, change, body, guard, when))
    elif body:
        tasks.append({"name": f"{t} | {short(change.summary)}", "when": when, "block": body})
    if change.reboot:
        tasks.append(
            {
                "name": f"{t} | reboot and wait for the host: {short(change.summary)}",
                "ansible.builtin.reboot": {"reboot_timeout": reboot_timeout_s},
                "when": when,
                "become": True,
            }
        )
    if not change.files:
        tasks.append(
            {
                "name": f"{t} | remember that this change ran: {short(change.summary)}",
                "ansible.builtin.copy": {
                    "dest": f"{MARKER_DIR}/{stage}-{_digest(change)}.done",
                    "content": plain(change.summary) + "\n",
                    "mode": "0644",
                },
                "become": True,
            }
        )
    return tasks


def guarded(change: Change) -> bool:
    """apply.py arms a revert only for a disruptive change with commands that wrote files."""
    return change.impact == Impact.DISRUPTIVE and bool(change.commands) and bool(change.files)


def _digest(change: Change) -> str:
    return hashlib.sha256(change.model_dump_json().encode()).hexdigest()[:16]


def _copy_tasks(t: str, host: str, file: FileWrite, reg: str) -> list[dict[str, Any]]:
    args: dict[str, Any] = {
        "dest": file.path,
        "mode": f"{file.mode:04o}",
        "owner": file.owner,
        "group": file.group,
        "backup": True,
    }
    tasks = []
    if file.secret:
        # A secret never leaves the wizard: the operator names a file holding it (vault it), as plan_export says.
        var = secret_var(file)
        tasks.append(
            {
                "name": f"{t} | a file holding the secret for {file.path} is given",
                "ansible.builtin.assert": {
                    "that": [f"{var} is defined"],
                    "fail_msg": f"{file.path} holds a secret that is not exported: set {var} to a file holding it "
                    "(the same on every host that shares it; e.g. ansible-vault encrypted)",
                },
            }
        )
        args["src"] = "{{ " + var + " }}"
    else:
        args["src"] = local_file(host, file)
    tasks.append(
        {
            "name": f"{t} | install {file.path}",
            "ansible.builtin.copy": args,
            "register": reg,
            "become": True,
            **({"no_log": True} if file.secret else {}),
        }
    )
    return tasks


def _command_task(t: str, cmd: RemoteCommand, reg: str) -> dict[str, Any]:
    args: dict[str, Any] = {"argv": [literal(a) for a in cmd.argv]}
    if cmd.input is not None:
        args["stdin"] = literal(cmd.input)
        args["stdin_add_newline"] = False
    task: dict[str, Any] = {
        "name": f"{t} | run {short(shlex.join(cmd.argv))}",
        "ansible.builtin.command": args,
        "register": reg,
        # It runs only when what it applies changed (the block's `when`), so running is changing.
        "changed_when": True,
        "become": cmd.sudo,
    }
    if cmd.ok_exit_codes != [0]:
        task["failed_when"] = f"{reg}.rc not in {cmd.ok_exit_codes}"
    if cmd.timeout_s:
        task["timeout"] = int(cmd.timeout_s)
    return task
