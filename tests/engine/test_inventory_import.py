"""Importing hosts from Ansible inventories (INI, YAML) and ssh_config Host blocks into an answers file."""

from __future__ import annotations

from pathlib import Path

import pytest

from wizard.answers.inventory import detect_format, parse_ini, parse_ssh_config, parse_yaml
from wizard.answers.inventory_import import import_hosts
from wizard.answers.model import parse_answers
from wizard.cli.main import main
from wizard.errors import UsageError

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "inventories"


def fixture(name: str) -> str:
    return (FIXTURES / name).read_text()


def by_name(hosts: list[dict]) -> dict[str, dict]:
    return {h["name"]: h for h in hosts}


def test_ini_ranges_children_and_group_vars_with_host_vars_winning() -> None:
    imported = import_hosts(parse_ini(fixture("hgx.ini")), "gpu")
    hosts = by_name(imported.hosts)
    assert list(hosts) == [f"gpu-r1-0{n}" for n in range(1, 5)] + [f"gpu-r2-0{n}" for n in range(1, 6)]
    # host var (ansible_user=ubuntu on the line) beats gpu:vars (hpcadmin) beats all:vars (root)
    assert hosts["gpu-r1-01"] == {
        "name": "gpu-r1-01",
        "address": "gpu-r1-01",
        "user": "ubuntu",
        "port": 22,
        "identity_file": "~/.ssh/cluster_ed25519",
    }
    assert hosts["gpu-r2-01"]["user"] == "hpcadmin"
    assert hosts["gpu-r2-05"] == {
        "name": "gpu-r2-05",
        "address": "10.1.2.105",
        "user": "hpcadmin",
        "port": 2222,
        "identity_file": "~/.ssh/cluster_ed25519",
    }


def test_passwords_are_never_copied_and_one_warning_names_them() -> None:
    imported = import_hosts(parse_ini(fixture("hgx.ini")), "gpu")
    assert all(set(h) <= {"name", "address", "user", "port", "identity_file"} for h in imported.hosts)
    assert imported.warnings == [
        "skipped ansible_become_password (9 hosts), ansible_password (1 host): passwords never go into the answers "
        "file (use keys or an agent; sudo password from $ROCE_WIZARD_SUDO_PASSWORD or the prompt)"
    ]


def test_ini_alphabetic_ranges_ungrouped_hosts_and_all_vars() -> None:
    hosts = by_name(import_hosts(parse_ini(fixture("hgx.ini"))).hosts)
    assert hosts["bastion.mgmt.example.net"] == {
        "name": "bastion.mgmt.example.net",
        "address": "10.1.0.5",
        "user": "root",
    }
    assert [n for n in hosts if n.startswith("stor")] == [f"stor-{c}.mgmt.example.net" for c in "abc"]


def test_ini_host_port_suffix_and_a_stride() -> None:
    inv = parse_ini("[web]\nweb[01:05:2].example.com:2201\nbadwolf.example.com:5309 ansible_user=who\n")
    hosts = import_hosts(inv, "web").hosts
    assert [(h["name"], h["port"]) for h in hosts] == [
        ("web01.example.com", 2201),
        ("web03.example.com", 2201),
        ("web05.example.com", 2201),
        ("badwolf.example.com", 5309),
    ]


def test_yaml_inventory_nested_children_and_vars() -> None:
    hosts = by_name(import_hosts(parse_yaml(fixture("hgx.yaml")), "gpu").hosts)
    assert list(hosts) == ["node01", "node02", "node03", "node04", "node05"]
    assert hosts["node01"] == {
        "name": "node01",
        "address": "node01",
        "port": 22,
        "user": "ubuntu",
        "identity_file": "~/.ssh/gpu_key",
    }
    assert (hosts["node04"]["user"], hosts["node04"]["port"], hosts["node04"]["address"]) == (
        "admin",
        2200,
        "10.20.0.104",
    )
    assert hosts["node05"]["user"] == "ubuntu"


def test_ssh_config_host_blocks_first_value_wins_and_wildcards_are_not_hosts() -> None:
    imported = import_hosts(parse_ssh_config(fixture("ssh_config"), "ssh_config"))
    hosts = by_name(imported.hosts)
    assert list(hosts) == ["bastion", "gpu01", "gpu02", "gpu03"]
    assert hosts["gpu01"] == {
        "name": "gpu01",
        "address": "gpu01.cluster.internal",
        "user": "ubuntu",
        "port": 22,
        "identity_file": "~/.ssh/id_gpu",
    }
    assert hosts["gpu03"] == {
        "name": "gpu03",
        "address": "10.30.0.13",
        "user": "admin",
        "port": 2222,
        "identity_file": "~/.ssh/id_ed25519",
    }
    assert imported.warnings == [
        "ssh_config line 15: Match blocks are not read (only Host blocks); check those hosts by hand"
    ]


@pytest.mark.parametrize(("name", "fmt"), [("hgx.ini", "ini"), ("hgx.yaml", "yaml"), ("ssh_config", "ssh_config")])
def test_the_format_is_detected(name: str, fmt: str) -> None:
    assert detect_format(fixture(name), name) == fmt


def test_an_unknown_group_names_the_groups_that_exist() -> None:
    with pytest.raises(UsageError, match=r"--group gpux: no such group in the inventory; groups: all, gpu, gpu_rack1"):
        import_hosts(parse_ini(fixture("hgx.ini")), "gpux")


def test_cli_writes_answers_that_load(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "answers.yaml"
    assert main(["import", "inventory", str(FIXTURES / "hgx.ini"), "--group", "gpu_rack1", "-o", str(out)]) == 0
    answers = parse_answers(out.read_text())
    assert [h.name for h in answers.hosts] == ["gpu-r1-01", "gpu-r1-02", "gpu-r1-03", "gpu-r1-04"]
    assert answers.ssh.user == "ubuntu" and answers.cluster.name == "gpu-rack1"
    assert "s3cret" not in out.read_text() and "wrote" in capsys.readouterr().err
    assert main(["import", "inventory", str(FIXTURES / "hgx.ini"), "-o", str(out)]) == 2  # exists, no --force


def test_cli_unknown_group_exits_2_naming_it(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["import", "inventory", str(FIXTURES / "hgx.yaml"), "--group", "spine"]) == 2
    assert (
        "--group spine: no such group in the inventory; groups: all, gpu, leaf1, leaf2, login"
        in capsys.readouterr().err
    )


def test_cli_ssh_config_refuses_a_group(capsys: pytest.CaptureFixture[str]) -> None:
    argv = ["import", "inventory", str(FIXTURES / "ssh_config"), "--format", "ssh_config", "--group", "gpu"]
    assert main(argv) == 2
    assert "an ssh_config has no groups" in capsys.readouterr().err


def test_three_hundred_hosts_get_rails_large_enough(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["import", "inventory", str(FIXTURES / "large.ini")]) == 0
    answers = parse_answers(capsys.readouterr().out)
    assert len(answers.hosts) == 300 and answers.hosts[299].name == "gpu300"
    assert [r.subnet for r in answers.network.rails] == [
        "172.16.0.0/23",
        "172.16.2.0/23",
        "172.16.4.0/23",
        "172.16.6.0/23",
    ]
    assert answers.hosts[0].identity_file == "/etc/roce/keys/id_ed25519"
