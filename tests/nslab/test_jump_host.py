"""A real OpenSSH bastion: the hosts answer SSH only from the bastion's namespace, and the wizard reaches them through
one connection to it (ssh.jump_host, or ProxyJump in ~/.ssh/config), even with the bastion's MaxSessions at 1.

The lab here runs under its own prefix and network (``rj-``, 10.78.0.0/16) so it can run beside the other nslab
tests: h1 is the bastion; h2.. drop SSH from the test process's address (10.78.0.1) and accept it from h1.
"""

from __future__ import annotations

import asyncio
import json
import os
import signal
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import asyncssh
import pytest
import yaml

from tests.nslab.conftest import NsCluster, host_failures
from tests.nslab.lab import USER, NsLab, missing_requirements

pytestmark = pytest.mark.nslab

NETWORK = "10.78.0.0/16"
TEST_ADDRESS = "10.78.0.1"  # the test process's side of the uplink


@pytest.fixture
def jump_lab(tmp_path: Path) -> Iterator[NsCluster]:
    reason = missing_requirements()
    if reason:
        pytest.skip(f"namespace lab: {reason}")
    lab = NsLab(Path(os.environ.get("ROCE_WIZARD_NSLAB_DIR", "/tmp/roce-wizard-nslab")) / "jump", "rj-", NETWORK)
    lab.up(4)
    try:
        bastion = lab.hosts[0]
        # MaxSessions limits shell/exec/sftp sessions per connection, not direct-tcpip channels: with it at 1 the
        # three hosts still share the one connection. The bastion counts the TCP connections the test opens to it.
        with (bastion.workdir / "sshd_config").open("a") as config:
            config.write("MaxSessions 1\n")
        os.kill(int((bastion.workdir / "sshd.pid").read_text()), signal.SIGHUP)  # sshd re-executes with the config
        time.sleep(0.5)
        bastion.ns("iptables", "-A", "INPUT", "-p", "tcp", "--dport", "22", "--syn", "-s", TEST_ADDRESS, "-j", "ACCEPT")
        for host in lab.hosts[1:]:
            host.ns("iptables", "-A", "INPUT", "-p", "tcp", "--dport", "22", "-s", TEST_ADDRESS, "-j", "DROP")
        yield NsCluster(lab, tmp_path)
    finally:
        lab.down()


def connections_to_bastion(cluster: NsCluster) -> int:
    """TCP connections the test process opened to the bastion's sshd (SYNs counted by its firewall rule)."""
    listing = cluster.lab.hosts[0].ns("iptables", "-L", "INPUT", "-v", "-x", "-n").stdout
    return sum(int(line.split()[0]) for line in listing.splitlines() if "ACCEPT" in line and "dpt:22" in line)


def answers(cluster: NsCluster, **ssh: Any) -> Path:
    data = {
        "version": 1,
        "cluster": {"name": "nslab-jump"},
        "ssh": {
            "user": USER,
            "identity_file": str(cluster.lab.key_file),
            "known_hosts": str(cluster.lab.known_hosts),
            "connect_timeout_s": 5,
            "keepalive_interval_s": 1,
            **ssh,
        },
        "hosts": [{"name": h.name, "address": h.address} for h in cluster.lab.hosts[1:]],
        "inference": {"enabled": False},
    }
    path = cluster.workdir / "answers.yaml"
    path.write_text(yaml.safe_dump(data, sort_keys=False))
    return path


def check_rows(result: subprocess.CompletedProcess[str]) -> dict[str, dict[str, Any]]:
    return {row["host"]: row for row in map(json.loads, result.stdout.splitlines())}


def test_the_hosts_answer_only_through_the_bastion(jump_lab: NsCluster) -> None:
    result = jump_lab.run("check", "--answers", str(answers(jump_lab)), "--json", "--host", "h2")
    assert check_rows(result)["h2"]["problem"] == "no SSH answer from 10.78.0.12:22 within 5s"


def test_check_and_discovery_run_through_one_connection_to_the_bastion(jump_lab: NsCluster) -> None:
    path = answers(jump_lab, jump_host=f"{USER}@10.78.0.11")

    check = jump_lab.run("check", "--answers", str(path), "--json")

    rows = check_rows(check)
    assert sorted(rows) == ["h2", "h3", "h4"]
    assert all(row["ok"] for row in rows.values()), rows
    assert "3 of 3 hosts ready" in check.stderr
    assert connections_to_bastion(jump_lab) == 1

    discovery = jump_lab.run("--answers", str(path), "--only", "discovery", "--json")

    failures = host_failures(discovery.stdout)
    assert sorted(failures) == ["h2", "h3", "h4"]  # discovery ran to its end on each: no ConnectX in a namespace
    assert all(reason.startswith("ConnectX ports: none found") for reason in failures.values()), failures
    assert connections_to_bastion(jump_lab) == 2  # one more run, one more connection
    assert "Traceback" not in check.stderr + discovery.stderr


def test_max_sessions_limits_sessions_on_the_bastion_but_not_tunnelled_channels(jump_lab: NsCluster) -> None:
    async def probe() -> tuple[str, list[str]]:
        async with asyncssh.connect(
            "10.78.0.11",
            username=USER,
            client_keys=[str(jump_lab.lab.key_file)],
            known_hosts=str(jump_lab.lab.known_hosts),
            config=None,
        ) as bastion:
            first = await bastion.create_process("sleep 2")
            try:
                await bastion.run("true", check=True)
                second = "a second session opened"
            except asyncssh.ChannelOpenError as exc:
                second = f"refused: {exc.reason}"
            hosts = [
                await asyncssh.connect(
                    h.address,
                    tunnel=bastion,
                    username=USER,
                    client_keys=[str(jump_lab.lab.key_file)],
                    known_hosts=str(jump_lab.lab.known_hosts),
                    config=None,
                )
                for h in jump_lab.lab.hosts[1:]
            ]
            names = [(await conn.run("hostname", check=True)).stdout.strip() for conn in hosts]  # type: ignore[union-attr]
            for conn in hosts:
                conn.close()
            first.close()
            return second, names

    second, names = asyncio.run(probe())
    assert second.startswith("refused"), second
    assert names == ["h2", "h3", "h4"]


def test_ssh_config_proxy_jump_is_honoured(jump_lab: NsCluster, tmp_path: Path) -> None:
    home = tmp_path / "home"
    (home / ".ssh").mkdir(parents=True)
    (home / ".ssh" / "config").write_text(
        f"Host bastion\n  HostName 10.78.0.11\n  User {USER}\nHost 10.78.0.* !10.78.0.11\n  ProxyJump bastion\n"
    )
    command = jump_lab.command("check", "--answers", str(answers(jump_lab)), "--json")
    result = subprocess.run(command, capture_output=True, text=True, timeout=120, env={**os.environ, "HOME": str(home)})
    assert all(row["ok"] for row in check_rows(result).values()), result.stdout + result.stderr
    assert connections_to_bastion(jump_lab) == 1


def test_a_wrong_bastion_key_fails_each_host_with_one_line_naming_the_bastion(jump_lab: NsCluster) -> None:
    other = jump_lab.workdir / "other-key"
    subprocess.run(["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-f", str(other)], check=True)
    known = jump_lab.lab.known_hosts
    wrong = " ".join(other.with_suffix(".pub").read_text().split()[:2])
    lines = known.read_text().splitlines()
    known.write_text("".join(f"10.78.0.11 {wrong}\n" if x.startswith("10.78.0.11 ") else f"{x}\n" for x in lines))

    result = jump_lab.run("check", "--answers", str(answers(jump_lab, jump_host="10.78.0.11")), "--json")

    assert result.returncode == 1
    for name, row in check_rows(result).items():
        assert row["problem"].startswith(
            f"cannot reach {name} through bastion 10.78.0.11:22: its host key is not verified against {known}"
        ), row
        assert "\n" not in row["problem"]
    assert "0 of 3 hosts ready" in result.stderr


def test_an_unreachable_bastion_fails_each_host_with_one_line_naming_it(jump_lab: NsCluster) -> None:
    jump_lab.lab.hosts[0].kill_listener()

    result = jump_lab.run("check", "--answers", str(answers(jump_lab, jump_host="10.78.0.11:22")), "--json")

    assert result.returncode == 1
    for name, row in check_rows(result).items():
        assert row["problem"].startswith(
            f"cannot reach {name} through bastion 10.78.0.11:22: the bastion does not answer: connection refused"
        ), row
    assert "Traceback" not in result.stderr
