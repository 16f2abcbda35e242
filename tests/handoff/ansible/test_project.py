"""The exported project carries exactly the plan: the same files, commands, order and guards as apply.py."""

from __future__ import annotations

from tests.handoff.ansible.conftest import Exported, flatten

HOSTS = ("server1", "server2")
STAGES = ["ofed", "network", "roce", "gpudirect", "nccl", "inference"]


def test_inventory_names_every_host_with_how_to_reach_it_and_never_a_password(exported: Exported) -> None:
    inventory = exported.yaml("inventory.yml")
    hosts = inventory["all"]["children"]["roce_wizard"]["hosts"]
    strict = "-o StrictHostKeyChecking=yes -o ServerAliveInterval=5 -o ServerAliveCountMax=3"
    assert hosts == {
        "server1": {
            "ansible_host": "10.0.0.11",
            "ansible_port": 22,
            "ansible_user": "ubuntu",
            "ansible_ssh_common_args": strict,
        },
        "server2": {
            "ansible_host": "10.0.0.12",
            "ansible_port": 22,
            "ansible_user": "ubuntu",
            "ansible_ssh_common_args": strict,
        },
    }
    ansible_files = [p for p in exported.project.rglob("*.yml")]
    assert len(ansible_files) > 10
    every_text = "\n".join(p.read_text() for p in ansible_files).lower()
    assert "password" not in every_text and "_pass" not in every_text


def test_site_runs_one_role_per_stage_in_the_wizards_order(exported: Exported) -> None:
    (play,) = exported.yaml("site.yml")
    assert play["roles"] == STAGES
    assert play["hosts"] == "roce_wizard"
    for stage in STAGES:
        main = exported.yaml(f"roles/{stage}/tasks/main.yml")
        assert main[0]["ansible.builtin.include_tasks"] == "hosts/{{ inventory_hostname }}.yml"


def test_every_file_and_command_of_the_plan_is_in_the_project_in_order(exported: Exported) -> None:
    for stage in STAGES:
        for host in HOSTS:
            plan = exported.plan["stages"][stage][host]
            tasks = flatten(exported.host_tasks(stage, host))
            copies = [t["ansible.builtin.copy"] for t in tasks if "ansible.builtin.copy" in t and "register" in t]
            planned_files = [f for c in plan["changes"] for f in c["files"]]
            assert [c["dest"] for c in copies] == [f["path"] for f in planned_files], (stage, host)
            for copy, file in zip(copies, planned_files, strict=True):
                assert copy["backup"] is True
                assert (copy["mode"], copy["owner"], copy["group"]) == (
                    f"{file['mode']:04o}",
                    file["owner"],
                    file["group"],
                )
                if not file["secret"]:
                    local = exported.project / "roles" / stage / "files" / copy["src"]
                    assert local.read_text() == file["content"], (stage, host, file["path"])
            commands = [
                t["ansible.builtin.command"]["argv"]
                for t in tasks
                if "ansible.builtin.command" in t and t["name"].split(" | ", 1)[1].startswith("run ")
            ]
            assert commands == [c["argv"] for ch in plan["changes"] for c in ch["commands"]], (stage, host)


def test_a_command_with_input_gets_exactly_that_input_and_accepted_exit_codes_are_kept(exported: Exported) -> None:
    tasks = flatten(exported.host_tasks("roce", "server1"))
    tee = next(t for t in tasks if t.get("ansible.builtin.command", {}).get("argv", [None])[0] == "tee")
    assert tee["ansible.builtin.command"]["stdin"] == "1"
    assert tee["ansible.builtin.command"]["stdin_add_newline"] is False
    peermem = next(
        t
        for t in flatten(exported.host_tasks("gpudirect", "server1"))
        if t.get("ansible.builtin.command", {}).get("argv") == ["modprobe", "nvidia-peermem"]
    )
    assert peermem["failed_when"].endswith(".rc not in [0, 1]")


def test_commands_run_only_when_the_files_they_apply_changed(exported: Exported) -> None:
    tasks = exported.host_tasks("network", "server1")
    sysctl = next(t for t in tasks if "block" in t and "sysctl.d" in t["name"])
    copy = next(
        t for t in tasks if t.get("ansible.builtin.copy", {}).get("dest") == "/etc/sysctl.d/60-roce-wizard.conf"
    )
    assert sysctl["when"] == f"{copy['register']} is changed"
    assert [t["ansible.builtin.command"]["argv"] for t in sysctl["block"]] == [
        ["sysctl", "-p", "/etc/sysctl.d/60-roce-wizard.conf"]
    ]
    assert all(t["changed_when"] is True and t["become"] is True for t in sysctl["block"])


def test_a_change_without_files_runs_once_behind_a_marker_of_its_content(exported: Exported) -> None:
    tasks = exported.host_tasks("roce", "server1")
    stat = next(t for t in tasks if "ansible.builtin.stat" in t)
    marker = stat["ansible.builtin.stat"]["path"]
    assert marker.startswith("/var/lib/roce-wizard/ansible/roce-") and marker.endswith(".done")
    block = next(t for t in tasks if "block" in t and t.get("when") == f"not {stat['register']}.stat.exists")
    record = next(t for t in tasks if t.get("ansible.builtin.copy", {}).get("dest") == marker)
    assert tasks.index(stat) < tasks.index(block) < tasks.index(record)
    markers = [t["ansible.builtin.stat"]["path"] for t in tasks if "ansible.builtin.stat" in t]
    assert len(markers) == len(set(markers)), "every change has its own marker"


def test_a_disruptive_change_is_armed_before_applied_and_disarmed_only_after_a_new_connection(
    exported: Exported,
) -> None:
    tasks = exported.host_tasks("network", "server1")
    guarded = next(t for t in tasks if "block" in t and "netplan" in t["name"])
    steps = []
    for task in guarded["block"]:
        module = next(k for k in task if k.startswith("ansible.builtin."))
        args = task[module]
        argv = args.get("argv", []) if isinstance(args, dict) else []
        steps.append(argv[0] if argv else f"{module.rsplit('.', 1)[1]}:{args if isinstance(args, str) else ''}")
    assert steps == [
        "set_fact:",
        "install",
        "template:",
        "systemd-run",
        "shell:",
        "assert:",
        "netplan",
        "netplan",
        "meta:reset_connection",
        "wait_for_connection:",
        "mkdir",
        "assert:",
        "systemctl",
        "file:",
    ]
    arm = next(
        t for t in guarded["block"] if t.get("ansible.builtin.command", {}).get("argv", [""])[0] == "systemd-run"
    )
    assert "--on-active=120s" in arm["ansible.builtin.command"]["argv"]
    wait = next(t for t in guarded["block"] if "ansible.builtin.wait_for_connection" in t)
    assert wait["ansible.builtin.wait_for_connection"]["timeout"] == 45
    assert guarded["rescue"][0]["ansible.builtin.fail"]["msg"].startswith(
        "{{ inventory_hostname }}: write /etc/netplan"
    )


def test_host_vars_hold_the_discovery_facts_and_the_verified_state(exported: Exported) -> None:
    found = exported.yaml("host_vars/server1.yml")
    ports = found["roce_wizard_discovery"]["ports"]
    assert [p["netdev"] for p in ports] == ["ens1f0np0", "ens1f1np1", "ens2f0np0", "ens2f1np1"]
    network = found["roce_wizard_network"]
    assert [(i["netdev"], i["address"], i["mtu"]) for i in network["interfaces"]] == [
        ("ens1f0np0", "192.168.11.1/24", 9000),
        ("ens1f1np1", "192.168.12.1/24", 9000),
        ("ens2f0np0", "192.168.13.1/24", 9000),
        ("ens2f1np1", "192.168.14.1/24", 9000),
    ]
    assert {
        "key": "net.ipv4.conf.ens1f0np0.arp_ignore",
        "path": "/proc/sys/net/ipv4/conf/ens1f0np0/arp_ignore",
        "value": "1",
    } in network["sysctls"]
    roce = found["roce_wizard_roce"]
    assert (roce["priority"], roce["pfc_enabled"]) == (3, "0 0 0 1 0 0 0 0")
