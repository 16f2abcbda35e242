"""Writing the Ansible project: inventory, host_vars, site.yml and one role per stage, from the plan objects."""

from __future__ import annotations

import re
import shlex
import shutil
from pathlib import Path
from typing import Any

import yaml

from wizard.answers.model import Answers
from wizard.engine.runner import StageOutcome
from wizard.engine.step import ClusterView, HostPlan
from wizard.export.ansible_guard import revert_template, revert_template_file
from wizard.export.ansible_tasks import (
    Unsafe,
    guarded,
    host_tasks,
    local_file,
    predicted_checks_file,
    predicted_checks_script,
    title,
)
from wizard.export.ansible_verify import host_vars, verify_tasks

GROUP = "roce_wizard"
REBOOT_TIMEOUT_S = 1800  # a DOCA driver rebuild plus a server's POST can take many minutes


class _Dumper(yaml.SafeDumper):
    """Block style, multi-line strings as literal blocks, lists indented under their key (yamllint's taste)."""

    def increase_indent(self, flow: bool = False, indentless: bool = False) -> None:  # noqa: ARG002
        super().increase_indent(flow, False)


def _str(dumper: yaml.SafeDumper, value: str) -> yaml.ScalarNode:
    style = "|" if "\n" in value else None
    return dumper.represent_scalar("tag:yaml.org,2002:str", value, style=style)


def _unsafe(dumper: yaml.SafeDumper, value: Unsafe) -> yaml.ScalarNode:
    return dumper.represent_scalar("!unsafe", str(value), style="|" if "\n" in value else "'")


_Dumper.add_representer(str, _str)
_Dumper.add_representer(Unsafe, _unsafe)


def dump(doc: Any) -> str:
    """YAML as ansible-lint wants it: a document start, no sorting of keys, no line longer than 160."""
    text = yaml.dump(doc, Dumper=_Dumper, sort_keys=False, width=100, allow_unicode=True)
    # Commands that run when their files changed stay in line, between arming the revert and confirming the
    # change: a handler would run them later, outside that guard (README says so).
    text = re.sub(r"^( *when: [\w ]+ is changed.*)$", r"\1  # noqa: no-handler", text, flags=re.M)
    return "---\n" + text


def write_project(
    out: Path,
    answers: Answers,
    view: ClusterView,
    outcomes: list[StageOutcome],
    *,
    simulated: bool,
    failures: dict[str, str],
) -> list[str]:
    """Write the project under ``out`` (the roles it writes are replaced); returns the stages written as roles."""
    out.mkdir(parents=True, exist_ok=True)
    hosts = [h.name for h in answers.hosts]
    (out / "inventory.yml").write_text(dump(inventory(answers)), encoding="utf-8")
    (out / "host_vars").mkdir(exist_ok=True)
    for host in hosts:
        (out / "host_vars" / f"{host}.yml").write_text(dump(host_vars(view, host)), encoding="utf-8")
    guard = (answers.safe_apply.revert_after_s, answers.safe_apply.confirm_within_s)
    roles = []
    for outcome in outcomes:
        if outcome.stage == "discovery":
            continue  # discovery only reads: its facts are in host_vars
        roles.append(outcome.stage)
        _write_role(out / "roles" / outcome.stage, outcome, hosts, failures, guard)
    (out / "site.yml").write_text(dump(site(roles)), encoding="utf-8")
    (out / "ansible.cfg").write_text(ANSIBLE_CFG, encoding="utf-8")
    (out / "README.md").write_text(_readme(roles, simulated, failures), encoding="utf-8")
    return roles


def inventory(answers: Answers) -> dict[str, Any]:
    """Hosts from the answers with how to reach them; never a password (sudo is passwordless or --ask-become-pass)."""
    ssh = answers.ssh
    hosts: dict[str, Any] = {}
    for h in answers.hosts:
        entry: dict[str, Any] = {"ansible_host": h.address, "ansible_port": h.port or ssh.port}
        entry["ansible_user"] = h.user or ssh.user
        key = h.identity_file or ssh.identity_file
        if key:
            entry["ansible_ssh_private_key_file"] = key
        args = ssh_args(answers, h.jump_host)
        if args:
            entry["ansible_ssh_common_args"] = args
        hosts[h.name] = entry
    return {"all": {"children": {GROUP: {"hosts": hosts}}}}


def ssh_args(answers: Answers, host_jump: Any) -> str:
    """OpenSSH options for what the wizard's own SSH settings say: known_hosts, new keys, the bastion."""
    ssh = answers.ssh
    args = []
    if ssh.known_hosts:
        args.append(f"-o UserKnownHostsFile={ssh.known_hosts}")
    args.append("-o StrictHostKeyChecking=" + ("accept-new" if ssh.accept_new_host_keys else "yes"))
    # Keepalives as the wizard's own: a change that cuts the host off fails within seconds instead of hanging
    # until TCP gives up, and the guard's fresh connection decides.
    args.append(f"-o ServerAliveInterval={int(ssh.keepalive_interval_s)} -o ServerAliveCountMax=3")
    jump = ssh.jump_host if host_jump is None else host_jump
    if jump is not None and jump != "none":
        args.append(_bastion(answers, jump))
    return " ".join(args)


def _bastion(answers: Answers, jump: Any) -> str:
    """The bastion hop as the wizard makes it: its key and the same known_hosts.

    ProxyJump would not do: options given on ssh's command line apply to the destination only, never to the jump
    host (ssh(1), -J), so a key or known_hosts file named in the answers would be missing on the hop. Without either,
    ProxyJump keeps ~/.ssh/config in charge of the hop, as it is for the wizard."""
    ssh = answers.ssh
    target = f"{jump.user or ssh.user}@{jump.address}"
    key = jump.identity_file or ssh.identity_file
    if not key and not ssh.known_hosts:
        return f"-o ProxyJump={target}" + (f":{jump.port}" if jump.port else "")
    hop = ["ssh", "-W", "%h:%p", "-o", "StrictHostKeyChecking=" + ("accept-new" if ssh.accept_new_host_keys else "yes")]
    if ssh.known_hosts:
        hop += ["-o", f"UserKnownHostsFile={ssh.known_hosts}"]
    if key:
        hop += ["-i", key]
    if jump.port:
        hop += ["-p", str(jump.port)]
    # Ansible splits ansible_ssh_common_args as a shell would: the whole hop is one quoted -o value.
    return "-o " + shlex.quote("ProxyCommand=" + shlex.join([*hop, target]))


def site(roles: list[str]) -> list[dict[str, Any]]:
    """One play: the stages in the wizard's order on every host (a host that fails one stage stops there).

    ``strategy: free``: each role includes the host's own task file (hosts/<host>.yml), and under the default
    linear strategy Ansible runs hosts that included different files one group after another, so the whole
    fleet would be changed one host at a time (ansible/ansible#84385; seen on the qemu VMs: vm2 waited for all of
    vm1's tasks). No task here depends on another host, so each host goes through its stages at its own pace."""
    return [
        {
            "name": "RoCE fabric bring-up, as planned by roce-wizard",
            "hosts": GROUP,
            "strategy": "free",
            "gather_facts": False,
            "roles": roles,
        }
    ]


def _write_role(
    role: Path, outcome: StageOutcome, hosts: list[str], failures: dict[str, str], guard: tuple[float, float]
) -> None:
    if role.exists():
        shutil.rmtree(role)  # files of an older export must not linger
    tasks_dir = role / "tasks"
    (tasks_dir / "hosts").mkdir(parents=True)
    t = title(outcome.stage)
    main: list[dict[str, Any]] = [
        {
            "name": f"{t} | this host's planned changes",
            "ansible.builtin.include_tasks": "hosts/{{ inventory_hostname }}.yml",
        }
    ]
    verify = verify_tasks(outcome.stage)
    if verify:
        main.append({"name": f"{t} | verify", "ansible.builtin.import_tasks": "verify.yml"})
        (tasks_dir / "verify.yml").write_text(dump(verify), encoding="utf-8")
    (tasks_dir / "main.yml").write_text(dump(main), encoding="utf-8")
    for host in hosts:
        plan = outcome.plans.get(host)
        if plan is None:
            why = failures.get(host) or outcome_reason(outcome, host)
            tasks: list[dict[str, Any]] = [{"name": f"{t} | not planned", "ansible.builtin.fail": {"msg": why}}]
        else:
            tasks = host_tasks(plan, guard, REBOOT_TIMEOUT_S)
            _write_host_files(role, host, plan)
            if not tasks:
                reason = plan.noop_reason or "up to date"
                tasks = [{"name": f"{t} | nothing to change", "ansible.builtin.debug": {"msg": reason}}]
        (tasks_dir / "hosts" / f"{host}.yml").write_text(dump(tasks), encoding="utf-8")


def _write_host_files(role: Path, host: str, plan: HostPlan) -> None:
    """The files the tasks of ``plan`` copy, the revert script templates and the predictions' script."""
    written: dict[str, str] = {}
    if plan.predicted_checks:
        written[f"files/{predicted_checks_file(host)}"] = predicted_checks_script(plan)
    for n, change in enumerate(plan.changes):
        if guarded(change):
            reg = f"{plan.stage}_c{n}"
            written[f"templates/{revert_template_file(host, reg)}"] = revert_template(change, reg)
        for file in change.files:
            if not file.secret:
                written[f"files/{local_file(host, file)}"] = file.content
    for rel, text in written.items():
        path = role / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")


def outcome_reason(outcome: StageOutcome, host: str) -> str:
    status = outcome.statuses.get(host, "not planned")
    return f"roce-wizard could not plan stage {outcome.stage} on {host} ({status}); see its log"


ANSIBLE_CFG = """\
[defaults]
inventory = inventory.yml
host_key_checking = True
interpreter_python = auto_silent
stdout_callback = default

[ssh_connection]
pipelining = True
"""


def _readme(roles: list[str], simulated: bool, failures: dict[str, str]) -> str:
    lines = [
        "# roce-wizard: Ansible project" + (" (SIMULATED cluster)" if simulated else ""),
        "",
        "Generated by `roce-wizard export ansible` from the same plans `roce-wizard plan` prints.",
        "",
        "    ansible-playbook site.yml            # all stages, in order",
        "    ansible-playbook site.yml --limit HOST",
        "",
        f"Roles (one per stage): {', '.join(roles) or 'none'}. Each host's tasks are in",
        "roles/<stage>/tasks/hosts/<host>.yml, its files under roles/<stage>/files/<host>/.",
        "Files are copied with backup: true; commands run only when the files they apply changed (a change",
        "without files runs once: /var/lib/roce-wizard/ansible/<stage>-<id>.done records it), so a second run",
        "reports changed=0. Disruptive changes arm the wizard's automatic revert before they apply and disarm it",
        "only after a NEW SSH connection works. Every stage ends with asserts of what the wizard verifies.",
        "Commands follow their files in line (`when: <copy> is changed`) rather than as handlers: a handler would",
        "run after the guard that must surround it. Sudo with a password: ansible-playbook --ask-become-pass.",
        "",
        "The plans were made from the hosts as they were at export time; stages after the first may rest on",
        "PREDICTED facts and check those predictions first. Re-export after the hosts changed.",
    ]
    for host, why in sorted(failures.items()):
        lines.append(f"- {host}: NOT PLANNED: {why}")
    return "\n".join(lines) + "\n"
