"""The commit-confirmed guard of wizard/engine/apply.py as Ansible tasks: arm the revert, apply, reconnect, disarm."""

from __future__ import annotations

import re
from typing import Any

from wizard.engine.apply import REVERT_DIR, ArmedRevert, revert_script
from wizard.engine.step import Change

_ID = "RWREVERTID"  # stands for the revert's random id in the revert script until Jinja fills it in at run time
_BACKUP = "RWBACKUP{}"  # stands for the n-th file's backup path (only Ansible knows it, after the copy)


def dir_task(t: str, directory: str) -> dict[str, Any]:
    """Create a missing directory as the wizard's `install -D` does (0755); an existing one is left as it is."""
    return {
        "name": f"{t} | directory {directory} exists",
        "ansible.builtin.command": {"argv": ["install", "-d", "-m", "0755", "--", directory], "creates": directory},
        "become": True,
    }


_MAKE_DIRS = 'for d do [ -d "$d" ] && continue; install -d -m 0755 -- "$d" || exit 1; echo "created $d"; done'


def dirs_task(t: str, directories: list[str], reg: str) -> dict[str, Any]:
    """Every directory a host's files go to, as the wizard's `install -D` makes them (0755; an existing one is left
    as it is), in one module run: each run is seconds on a slow host, and the files of one stage share few
    directories. Changed only when one was created."""
    if len(directories) == 1:
        return dir_task(t, directories[0])
    return {
        "name": f"{t} | directories exist: {', '.join(directories)}",
        "ansible.builtin.command": {"argv": ["sh", "-c", _MAKE_DIRS, "sh", *directories]},
        "register": reg,
        "changed_when": f"'created ' in {reg}.stdout",
        "become": True,
    }


def plain(text: str) -> str:
    """Text inside a templated string (a name, a message) with Jinja markers broken up."""
    return re.sub(r"([{%#])([{%#}])", r"\1 \2", text)


def short(line: str, limit: int = 90) -> str:
    """One line for a task name."""
    line = plain(" ".join(line.split()))
    return line if len(line) <= limit else line[: limit - 3] + "..."


def revert_template_file(host: str, reg: str) -> str:
    """The role's templates/ path of one guarded change's revert script."""
    return f"{host}/{reg}-revert.sh.j2"


def guarded_block(
    t: str, host: str, reg: str, change: Change, body: list[dict[str, Any]], guard: tuple[float, float], when: str
) -> dict[str, Any]:
    """Commit-confirmed, as apply.py does it: arm the revert, apply, prove a NEW connection works, then disarm."""
    revert_after, confirm_within = guard
    rid = f"{reg}_revert"
    name = "roce-wizard-revert-{{ " + rid + " }}"
    script = f"{REVERT_DIR}/{name}.sh"
    claim = f"{REVERT_DIR}/{name}.claimed"
    arm: list[dict[str, Any]] = [
        {
            "name": f"{t} | choose the revert timer's name",
            "ansible.builtin.set_fact": {rid: "{{ '%08x' | format(4294967295 | random) }}"},
        },
        dir_task(t, REVERT_DIR),
        {
            "name": f"{t} | write the automatic revert script",
            "ansible.builtin.template": {"src": revert_template_file(host, reg), "dest": script, "mode": "0700"},
            "become": True,
        },
        {
            "name": f"{t} | arm the revert: it runs in {int(revert_after)}s unless a new connection confirms",
            "ansible.builtin.command": {
                "argv": ["systemd-run", f"--unit={name}", f"--on-active={int(revert_after)}s", "/bin/bash", script]
            },
            "register": f"{reg}_arm",
            "changed_when": True,
            "failed_when": False,
            "become": True,
        },
        {
            # No systemd: a detached sleeper does the same job (apply.py's fallback).
            "name": f"{t} | arm the revert without systemd",
            "ansible.builtin.shell": {
                "cmd": f"nohup /bin/sh -c 'sleep {int(revert_after)}; exec /bin/bash {script}' >/dev/null 2>&1 &"
            },
            "when": f"{reg}_arm.rc == 127 or 'command not found' in {reg}_arm.stderr",
            "register": f"{reg}_arm_nohup",
            "changed_when": True,
            "become": True,
        },
        {
            "name": f"{t} | the revert is armed",
            "ansible.builtin.assert": {
                "that": [f"{reg}_arm.rc == 0 or ({reg}_arm_nohup.rc | default(1)) == 0"],
                "fail_msg": "{{ inventory_hostname }}: could not arm the automatic revert ({{ "
                + reg
                + "_arm.stderr }}); nothing was applied: "
                + plain(change.summary),
            },
        },
    ]
    confirm: list[dict[str, Any]] = [
        {"name": f"{t} | drop the SSH connection", "ansible.builtin.meta": "reset_connection"},
        {
            "name": f"{t} | a NEW SSH connection proves the host is still reachable",
            "ansible.builtin.wait_for_connection": {"timeout": int(confirm_within), "delay": 0, "sleep": 1},
        },
        {
            # mkdir is atomic: exactly one of this confirmation and the revert wins the claim.
            "name": f"{t} | claim the change before the revert does",
            "ansible.builtin.command": {"argv": ["mkdir", "--", claim]},
            "register": f"{reg}_claim",
            "changed_when": True,
            "failed_when": False,
            "become": True,
        },
        {
            "name": f"{t} | the change was kept",
            "ansible.builtin.assert": {
                "that": [f"{reg}_claim.rc == 0"],
                "fail_msg": "{{ inventory_hostname }}: the host rolled itself back: its revert timer fired before "
                f"the change was confirmed (raise safe_apply.revert_after_s = {revert_after:g}s); the change is NOT "
                f"in place: {plain(change.summary)}",
            },
        },
        {
            "name": f"{t} | disarm the revert timer",
            "ansible.builtin.command": {"argv": ["systemctl", "stop", f"{name}.timer"]},
            "changed_when": True,
            "failed_when": False,
            "become": True,
        },
        {
            "name": f"{t} | remove the revert script",
            "ansible.builtin.file": {"path": script, "state": "absent"},
            "become": True,
        },
    ]
    rescue = [
        {
            "name": f"{t} | report the failed change",
            "ansible.builtin.fail": {
                "msg": "{{ inventory_hostname }}: "
                + plain(change.summary)
                + f" failed: {{{{ ansible_failed_result.msg | default('') }}}}; if no new SSH connection came within "
                f"{confirm_within:g}s the host restores its old files and network by itself {revert_after:g}s after "
                "the revert was armed (the change is then NOT in place)",
            },
        }
    ]
    return {"name": f"{t} | {short(change.summary)}", "when": when, "block": arm + body + confirm, "rescue": rescue}


def revert_template(change: Change, reg: str) -> str:
    """revert_script's own text, with the backup paths and the timer's id left to Jinja (known only at run time).

    A file this run did not change is not touched by the revert; a changed file without a backup was new: removed.
    """
    written = [(f.path, _BACKUP.format(i)) for i, f in enumerate(change.files)]
    armed = ArmedRevert(f"roce-wizard-revert-{_ID}", "", 0.0)
    text = revert_script(change, written, armed)
    out = []
    for line in text.splitlines():
        m = re.fullmatch(r"cp -a -- RWBACKUP(\d+) (.+)", line)
        if m:
            i = int(m.group(1))
            r = f"{reg}_f{i}"
            out.append(
                f"{{% if {r} is changed and {r}.backup_file is defined %}}"
                f"cp -a -- {{{{ {r}.backup_file | quote }}}} {_raw(m.group(2))}\n"
                f"{{% elif {r} is changed %}}rm -f -- {_raw(m.group(2))}\n{{% endif %}}"
            )
            continue
        out.append(_raw(line).replace(_ID, "{{ " + reg + "_revert }}") + "\n")
    return "".join(out)


def _raw(text: str) -> str:
    """Literal text inside a Jinja template (none of the wizard's lines is meant to be templated)."""
    if "{" not in text and "%" not in text:
        return text
    return "{% raw %}" + text + "{% endraw %}"
