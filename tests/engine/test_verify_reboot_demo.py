"""``verify --reboot`` and ``verify --flap`` on the simulated pair, brought up once with the inference service
spanning both hosts (layout span: one serving group, so its Ray worker on server2 holds queue pairs on the rails).

Each test works on its own copy of that state: the simulated hosts boot from the copied disks, so a reboot or a
fault in one test never reaches another.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tests.engine.test_headless_demo import ENV, EXAMPLE, cli


@pytest.fixture(scope="module")
def span(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    """(answers, state) of a pair where every stage is done, inference spanning both hosts."""
    root = tmp_path_factory.mktemp("span")
    answers = root / "answers.yaml"
    text = EXAMPLE.read_text()
    answers.write_text(text.replace("  layout: auto ", "  layout: span #", 1))
    assert "layout: span" in answers.read_text()
    done = cli("--demo", "--answers", str(answers), "--yes", "--state-dir", str(root / "state"))
    assert done.returncode == 0, done.stderr[-3000:]
    return answers, root / "state"


def verify(span: tuple[Path, Path], tmp_path: Path, *args: str) -> tuple[int, str, str]:
    answers, state = span
    mine = tmp_path / "state"
    shutil.copytree(state, mine)
    if "--with-bandwidth" not in args:
        r = cli("verify", "--demo", "--answers", str(answers), "--state-dir", str(mine), "--no-bandwidth", *args)
        return r.returncode, r.stdout, r.stderr
    # Traffic needs the lab's clock at 0.03 or slower: at 0.01 the `timeout 33` bwtest puts around each perftest
    # server is scaled to 0.33 s and ends before bwtest's start delay (0.5 real seconds) lets the client connect.
    # The lab scales every command's time alike, and a real host's clock cannot be scaled: a lab limit.
    argv = [a for a in args if a != "--with-bandwidth"]
    command = [sys.executable, "-m", "wizard", "verify", "--demo", "--answers", str(answers), "--state-dir", str(mine)]
    env = {**ENV, "ROCE_WIZARD_LAB_TIME_SCALE": "0.05"}
    r = subprocess.run([*command, *argv], capture_output=True, text=True, timeout=300, env=env)
    return r.returncode, r.stdout, r.stderr


@pytest.mark.slow  # the bring-up once (about 15 s), then about 10 s per test
def test_a_rolling_reboot_reboots_one_host_at_a_time_and_everything_survives(
    span: tuple[Path, Path], tmp_path: Path
) -> None:
    code, out, err = verify(span, tmp_path, "--reboot", "--yes", "--json", "--with-bandwidth")

    assert code == 0, err[-3000:]
    assert "same-rail bandwidth: 4/4 rail runs pass" in err  # before any reboot: the rails carry traffic
    assert "rolling reboot: 2 host(s) in 2 wave(s) of at most 1: server1; server2" in err
    rows = [json.loads(line) for line in out.splitlines()]
    assert [(r["host"], r["wave"], r["came_back"], r["lost"]) for r in rows] == [
        ("server1", 1, True, {}),
        ("server2", 2, True, {}),
    ]
    assert "all 2 host(s) rebooted and discovery, ofed, network, roce, gpudirect, nccl, inference held" in err


@pytest.mark.slow
def test_a_unit_disabled_before_the_reboot_is_named_with_what_should_have_restored_it_and_the_run_stops(
    span: tuple[Path, Path], tmp_path: Path
) -> None:
    code, _, err = verify(span, tmp_path, "--reboot", "--yes", "--only", "roce", "--fault", "server1:unit_disabled")

    assert code == 1
    # Before the reboot the runtime settings are all there: only the reboot shows nothing re-applies them.
    assert "roce holds on all 2 hosts" in err
    assert "server1: roce did not survive the reboot" in err
    assert "roce-wizard-qos.service is disabled" in err
    assert "why: not restored at boot; the stage would: persist across reboots" in err
    assert "stopped before wave 2: server1 did not hold, so 1 host(s) were not rebooted: server2" in err
    assert "wave 2/2" not in err


@pytest.mark.slow
def test_a_host_that_does_not_come_back_is_named_with_what_its_address_still_answers(
    span: tuple[Path, Path], tmp_path: Path
) -> None:
    code, _, err = verify(
        span, tmp_path, "--reboot", "--yes", "--only", "network", "--boot-timeout", "3", "--fault", "server1:no_boot"
    )

    assert code == 1
    line = next(ln for ln in err.splitlines() if "server1: did not come back" in ln)
    assert "sshd does not listen" in line and "console" in line
    assert "1 host(s) were not rebooted: server2" in err


@pytest.mark.slow
def test_nothing_is_rebooted_while_a_stage_already_fails(span: tuple[Path, Path], tmp_path: Path) -> None:
    code, _, err = verify(
        span, tmp_path, "--reboot", "--yes", "--only", "network", "--fault", "server2:link_down=ens1f0np0"
    )

    assert code == 1
    assert "nothing was rebooted: what fails now would fail after it too" in err
    assert "rolling reboot" not in err


def test_a_reboot_or_a_flap_without_yes_and_without_a_terminal_is_refused_before_anything_runs(
    span: tuple[Path, Path],
) -> None:
    answers, state = span
    for check in (["--reboot"], ["--flap", "server2:ens1f1np1"]):
        r = cli("verify", "--demo", "--answers", str(answers), "--state-dir", str(state), *check)
        assert r.returncode == 2, r.stderr
        assert "pass --yes, or run it at a terminal to be asked" in r.stderr
        assert "booted from the disks" not in r.stderr


@pytest.mark.slow
def test_a_flap_that_moves_the_gid_names_the_ray_worker_started_before_it(
    span: tuple[Path, Path], tmp_path: Path
) -> None:
    code, _, err = verify(
        span, tmp_path, "--flap", "server2:ens1f1np1", "--yes", "--only", "nccl", "--fault", "server2:gid_reorder"
    )

    assert code == 1, err[-3000:]
    assert "server2:ens1f1np1: its RoCE v2 IPv4 GID ::ffff:192.168.12.2 moved from index 3 to 5" in err
    assert "started before the flap and may hold queue pairs on ens1f1np1" in err
    assert "ray start --address=10.0.0.11:6379" in err


@pytest.mark.slow
def test_a_clean_flap_brings_back_mtu_routes_qos_and_the_same_gid(span: tuple[Path, Path], tmp_path: Path) -> None:
    code, _, err = verify(span, tmp_path, "--flap", "server2:ens1f1np1", "--yes", "--only", "network,roce,nccl")

    assert code == 0, err[-3000:]
    assert "RoCE v2 IPv4 GID unchanged at index 3" in err
    assert "server2:ens1f1np1 came back whole" in err


def test_the_management_port_and_unknown_hosts_are_refused_before_anything_changes(
    span: tuple[Path, Path], tmp_path: Path
) -> None:
    code, _, err = verify(span, tmp_path, "--flap", "server1:eno1", "--yes")
    assert code == 2 and "not flapping server1:eno1: eno1 carries this SSH session" in err
    assert "verify:" not in err.replace("roce-wizard: verify: --flap", "")  # refused before the baseline verify

    answers, state = span
    r = cli("verify", "--demo", "--answers", str(answers), "--state-dir", str(state), "--flap", "server9:x", "--yes")
    assert r.returncode == 2 and "server9 is not a host of the answers file" in r.stderr
    assert "booted from the disks" not in r.stderr  # refused before the lab started


def test_a_host_that_cannot_be_read_fails_the_baseline_even_for_a_stage_that_skips_it(
    span: tuple[Path, Path], tmp_path: Path
) -> None:
    """--only network on an unreachable host: the stage is skipped there (discovery cannot read it), which is not
    holding; nothing is rebooted and the host is named with its connection error."""
    code, _, err = verify(span, tmp_path, "--reboot", "--yes", "--only", "network", "--fault", "server2:unreachable")

    assert code == 1
    line = next(ln for ln in err.splitlines() if "server2: network no longer holds" in ln)
    assert "cannot connect to 127.0.0.1" in line
    assert "nothing was rebooted" in err and "rolling reboot" not in err
