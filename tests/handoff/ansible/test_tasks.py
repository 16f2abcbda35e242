"""Plans the demo does not show: secrets, refusals, reboots, and shell text Jinja would otherwise read."""

from __future__ import annotations

import shlex
from pathlib import Path

import yaml

from tests.handoff.ansible.conftest import flatten
from wizard.answers.model import Answers
from wizard.engine.step import Change, FileWrite, HostPlan, Impact, RemoteCommand
from wizard.export.ansible_project import _write_host_files, dump, inventory
from wizard.export.ansible_tasks import Unsafe, host_tasks

GUARD = (120.0, 45.0)


def test_a_secret_file_is_never_exported_and_its_task_asks_for_a_file_holding_it(tmp_path: Path) -> None:
    token = FileWrite(path="/etc/roce-wizard/ray-token", content="s3cr3t-value\n", mode=0o600, secret=True)
    plan = HostPlan(stage="inference", host="gpu1", changes=[Change(summary="write the Ray token", files=[token])])
    tasks = host_tasks(plan, GUARD, 600)
    _write_host_files(tmp_path, "gpu1", plan)
    text = dump(tasks) + "".join(p.read_text() for p in tmp_path.rglob("*") if p.is_file())
    assert "s3cr3t-value" not in text
    check = next(t for t in tasks if "ansible.builtin.assert" in t)
    assert check["ansible.builtin.assert"]["that"] == ["roce_wizard_secret_ray_token_file is defined"]
    copy = next(t for t in tasks if "ansible.builtin.copy" in t)
    assert copy["ansible.builtin.copy"]["src"] == "{{ roce_wizard_secret_ray_token_file }}"
    assert copy["no_log"] is True


def test_a_refused_plan_fails_the_host_with_the_refusal_and_changes_nothing() -> None:
    plan = HostPlan(stage="network", host="gpu1", blockers=["gpu1: bond0 spans two cards: RDMA cannot use it"])
    tasks = host_tasks(plan, GUARD, 600)
    assert tasks == [{"name": "Network | refused", "ansible.builtin.fail": {"msg": plan.blockers[0]}}]


def test_a_reboot_change_reboots_with_ansibles_reboot_module_only_when_it_ran() -> None:
    change = Change(
        summary="install the driver and reboot",
        impact=Impact.REBOOT,
        commands=[RemoteCommand(argv=["apt-get", "install", "-y", "doca-ofed"])],
        reboot=True,
    )
    tasks = host_tasks(HostPlan(stage="ofed", host="gpu1", changes=[change]), GUARD, 1800)
    stat = next(t for t in tasks if "ansible.builtin.stat" in t)
    reboot = next(t for t in tasks if "ansible.builtin.reboot" in t)
    assert reboot["ansible.builtin.reboot"] == {"reboot_timeout": 1800}
    assert reboot["when"] == f"not {stat['register']}.stat.exists"
    kinds = [next(k for k in t if k == "block" or k.startswith("ansible.builtin.")) for t in tasks]
    assert kinds == [
        "ansible.builtin.command",
        "ansible.builtin.stat",
        "block",
        "ansible.builtin.reboot",
        "ansible.builtin.copy",
    ]
    assert tasks[2]["block"][0]["ansible.builtin.command"]["argv"] == ["apt-get", "install", "-y", "doca-ofed"]


def test_shell_text_with_jinja_markers_is_passed_as_unsafe_so_ansible_never_templates_it() -> None:
    script = 'n=${#ports[@]}; echo "{{ not a template }}"'
    change = Change(summary="count ports", commands=[RemoteCommand(argv=["bash", "-c", script])])
    tasks = flatten(host_tasks(HostPlan(stage="nccl", host="gpu1", changes=[change]), GUARD, 600))
    command = next(t for t in tasks if t.get("ansible.builtin.command", {}).get("argv", [""])[0] == "bash")
    argv = command["ansible.builtin.command"]["argv"]
    assert argv == ["bash", "-c", script]
    assert isinstance(argv[2], Unsafe) and not isinstance(argv[0], Unsafe)
    text = dump(tasks)
    assert "!unsafe 'n=${#ports[@]}; echo \"{{ not a template }}\"'" in text

    class Loader(yaml.SafeLoader):
        pass

    Loader.add_constructor("!unsafe", lambda loader, node: loader.construct_scalar(node))
    assert yaml.load(text, Loader=Loader)[2]["block"][0]["ansible.builtin.command"]["argv"][2] == script


def test_the_inventory_reaches_hosts_as_the_wizard_does_key_known_hosts_and_bastion() -> None:
    answers = Answers.model_validate(
        {
            "version": 1,
            "ssh": {
                "user": "ops",
                "identity_file": "~/.ssh/fleet",
                "known_hosts": "/etc/fleet/known_hosts",
                "jump_host": "bastion@10.9.0.1:2222",
            },
            "hosts": [
                {"name": "gpu[1-2]", "address_start": "10.0.0.21"},
                {"name": "gpu3", "address": "10.0.1.3", "port": 2203, "user": "root", "jump_host": "none"},
            ],
        }
    )
    hosts = inventory(answers)["all"]["children"]["roce_wizard"]["hosts"]
    known = (
        "-o UserKnownHostsFile=/etc/fleet/known_hosts -o StrictHostKeyChecking=yes"
        " -o ServerAliveInterval=5 -o ServerAliveCountMax=3"
    )
    assert hosts["gpu2"] == {
        "ansible_host": "10.0.0.22",
        "ansible_port": 22,
        "ansible_user": "ops",
        "ansible_ssh_private_key_file": "~/.ssh/fleet",
        "ansible_ssh_common_args": hosts["gpu2"]["ansible_ssh_common_args"],
    }
    # As Ansible splits it (shell words): the hop is one option carrying the key and known_hosts the wizard uses for
    # the bastion (ssh expands the ~ of -i itself).
    words = shlex.split(hosts["gpu2"]["ansible_ssh_common_args"])
    hop = ["ssh", "-W", "%h:%p", "-o", "StrictHostKeyChecking=yes", "-o", "UserKnownHostsFile=/etc/fleet/known_hosts"]
    hop += ["-i", "~/.ssh/fleet", "-p", "2222", "bastion@10.9.0.1"]
    assert words == shlex.split(known) + ["-o", "ProxyCommand=" + shlex.join(hop)]
    assert hosts["gpu3"]["ansible_ssh_common_args"] == known
    assert (hosts["gpu3"]["ansible_port"], hosts["gpu3"]["ansible_user"]) == (2203, "root")
