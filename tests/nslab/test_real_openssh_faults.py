"""Connection faults against real OpenSSH servers (one per network namespace), not the simulator.

What an operator meets on a real rack: a host whose sshd is down, one behind a firewall that drops SSH, a stale
key, sudo that wants a password, a lossy link, a cable pulled or a host crashing in the middle of a command, a
command that never returns. Each must end as one line naming the host and what to do, while every other host
carries on, and nothing may hang.
"""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest

from tests.nslab.conftest import NsCluster, events, host_failures

pytestmark = pytest.mark.nslab


@pytest.mark.hosts(7, sudo_password=["h4"])
def test_check_names_each_broken_host_and_passes_the_rest(ns_cluster: NsCluster, tmp_path: Path) -> None:
    other_key = tmp_path / "stale-key"
    subprocess.run(["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-f", str(other_key)], check=True)
    ns_cluster.host("h2").kill_listener()
    ns_cluster.host("h3").firewall("drop")
    ns_cluster.host("h5").firewall("reject")
    ns_cluster.host("h6").firewall("loss=10")
    ns_cluster.host("h7").pull_cable()
    answers = ns_cluster.answers(host_extra={"h1": {"identity_file": str(other_key)}})

    result = ns_cluster.run("check", "--answers", str(answers), "--json")

    assert result.returncode == 1
    rows = {row["host"]: row for row in map(json.loads, result.stdout.splitlines())}
    assert sorted(rows) == ["h1", "h2", "h3", "h4", "h5", "h6", "h7"]
    assert rows["h1"]["reachable"] and not rows["h1"]["authenticated"]
    assert "authentication refused for user 'ops'" in rows["h1"]["problem"]
    assert rows["h2"]["problem"].startswith("cannot connect to 10.77.0.12:22: connection refused: nothing listens")
    assert rows["h3"]["problem"] == "no SSH answer from 10.77.0.13:22 within 10s"
    assert rows["h4"]["authenticated"] and not rows["h4"]["sudo"]
    assert "a password is required" in rows["h4"]["problem"] and "NOPASSWD" in rows["h4"]["problem"]
    assert rows["h5"]["problem"].startswith("cannot connect to 10.77.0.15:22: connection refused")
    assert rows["h6"]["ok"], rows["h6"]  # 10 % loss: slower, but TCP gets it there
    assert rows["h6"]["os"].startswith("Debian GNU/Linux")
    # A pulled cable on a LAN: ARP gets no answer, so the kernel says "no route to host" (a routed host would time out).
    assert rows["h7"]["problem"].startswith("cannot connect to 10.77.0.17:22: no route to host"), rows["h7"]
    assert "1 of 7 hosts ready; not ready: h1, h2, h3, h4, h5, h7" in result.stderr
    assert "Traceback" not in result.stderr


@pytest.mark.hosts(3)
def test_a_cable_pulled_during_a_command_fails_that_host_and_a_rerun_resumes(ns_cluster: NsCluster) -> None:
    answers = ns_cluster.answers()
    h1 = ns_cluster.host("h1")
    started = h1.hang_command("lspci")

    discovery = ["--answers", str(answers), "--only", "discovery", "--json"]
    result = ns_cluster.strike_when(started, discovery, h1.pull_cable)

    assert result.returncode == 1
    failures = host_failures(result.stdout)
    assert failures["h1"].startswith("connection lost during 'lspci"), failures
    assert "keepalive" in failures["h1"]
    # The others ran discovery to the end: their only complaint is the missing ConnectX cards of a namespace host.
    for other in ("h2", "h3"):
        assert failures[other].startswith("ConnectX ports: none found"), failures[other]
    assert (ns_cluster.workdir / "state" / "hosts" / "h1.json").exists(), "h1's progress must be saved"

    h1.plug_cable()
    h1.release_command("lspci")
    again = ns_cluster.run("--answers", str(answers), "--only", "discovery", "--json")
    assert host_failures(again.stdout)["h1"].startswith("ConnectX ports: none found")


@pytest.mark.hosts(3)
def test_a_host_that_crashes_mid_command_fails_alone(ns_cluster: NsCluster) -> None:
    answers = ns_cluster.answers()
    h2 = ns_cluster.host("h2")
    started = h2.hang_command("lspci")

    result = ns_cluster.strike_when(started, ["--answers", str(answers), "--only", "discovery", "--json"], h2.crash)

    failures = host_failures(result.stdout)
    assert failures["h2"].startswith("connection lost during 'lspci"), failures
    assert all(failures[h].startswith("ConnectX ports: none found") for h in ("h1", "h3")), failures
    assert "Traceback" not in result.stderr


@pytest.mark.hosts(2)
def test_a_command_that_never_returns_times_out_on_its_host_only(ns_cluster: NsCluster) -> None:
    answers = ns_cluster.answers(ssh={"command_timeout_s": 5})
    ns_cluster.host("h1").hang_command("lspci")

    result = ns_cluster.run("--answers", str(answers), "--only", "discovery", "--json")

    failures = host_failures(result.stdout)
    assert "lspci" in failures["h1"] and "5" in failures["h1"], failures
    assert failures["h2"].startswith("ConnectX ports: none found"), failures
    finished = {e["host"] for e in events(result.stdout) if e["event"] == "host_status"}
    assert finished == {"h1", "h2"}


@pytest.mark.hosts(2)
def test_an_open_session_survives_its_listener_dying(ns_cluster: NsCluster) -> None:
    """As on a real server, killing sshd's listener leaves established sessions alone: the wizard's one reused
    connection per host finishes the stage; only new connections are refused."""
    answers = ns_cluster.answers()
    h1 = ns_cluster.host("h1")
    started = h1.hang_command("lspci")

    def kill_listener_then_let_the_command_finish() -> None:
        h1.kill_listener()
        h1.release_command("lspci")  # the slow probe returns, over the session opened before the listener died

    result = ns_cluster.strike_when(
        started, ["--answers", str(answers), "--only", "discovery", "--json"], kill_listener_then_let_the_command_finish
    )
    assert host_failures(result.stdout)["h1"].startswith("ConnectX ports: none found"), result.stdout
    refused = ns_cluster.run("check", "--answers", str(answers), "--host", "h1")
    assert refused.returncode == 1 and "cannot connect to 10.77.0.11:22" in refused.stdout
