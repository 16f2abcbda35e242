"""Fixtures of the real-kernel lab: a cached image, a booted snapshot, and a fresh pair of VMs for each test.

Every test here carries the ``vmlab`` marker (`pytest -m vmlab` runs only them) and skips, with the reason, on a
machine without qemu (or without root and mmdebstrap when the image is not cached yet).
"""

from __future__ import annotations

import asyncio
import json
import shlex
import shutil
import subprocess
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import asyncssh
import pytest
import yaml

from tests.vmlab.guest_shell import GuestShells
from tests.vmlab.vms import SNAPSHOT, Vm, VmPair, ensure_image, locked, missing_requirements

STATIC_MANAGEMENT = (
    "network:\n  version: 2\n  renderer: networkd\n  ethernets:\n    eth0:\n      addresses: [10.0.2.15/24]\n"
    "      routes: [{to: default, via: 10.0.2.2}]\n      nameservers: {addresses: [10.0.2.3]}\n"
)
# The image's own management configuration (DHCP), for the tests that move eth0 into a bond: the wizard rightly
# refuses to bond a NIC whose static addresses netplan would carry over.
DHCP_MANAGEMENT = "network:\n  version: 2\n  renderer: networkd\n  ethernets:\n    eth0:\n      dhcp4: true\n"
BOOT_TIMEOUT_S = 300  # a cold TCG boot takes 30-50 s on two busy cores; leave room for a slow CI machine


@dataclass
class LabVms:
    """Two running VMs and what the wizard needs to reach them: key, known_hosts, ports."""

    pair: VmPair
    workdir: Path
    shells: GuestShells | None = field(default=None, repr=False)

    @property
    def vms(self) -> list[Vm]:
        return self.pair.vms

    @property
    def known_hosts(self) -> Path:
        return self.pair.workdir / "known_hosts"

    def answers(
        self,
        network: dict[str, Any],
        *,
        hosts: list[str] | None = None,
        ssh: dict[str, Any] | None = None,
        host_extra: dict[str, dict[str, Any]] | None = None,
        file: str = "answers.yaml",
        **sections: Any,
    ) -> Path:
        """An answers file for these VMs (login ubuntu with passwordless sudo, strict host key checking);
        ``ssh`` overrides ssh keys, ``host_extra`` adds keys to one host's entry, ``file`` names it in the workdir
        (two runs side by side need two files)."""
        chosen = [vm for vm in self.vms if hosts is None or vm.name in hosts]
        data: dict[str, Any] = {
            "version": 1,
            "cluster": {"name": "vmlab"},
            "ssh": {
                "user": "ubuntu",
                "identity_file": str(self.pair.key_file),
                "known_hosts": str(self.known_hosts),
                "connect_timeout_s": 20,
                "keepalive_interval_s": 5,  # the default: a TCG guest busy in netplan apply can be silent for 6 s
                "command_timeout_s": 300,
                **(ssh or {}),
            },
            "hosts": [
                {"name": vm.name, "address": "127.0.0.1", "port": vm.ssh_port, **(host_extra or {}).get(vm.name, {})}
                for vm in chosen
            ],
            "ofed": {"stack": "inbox"},
            "network": network,
            "inference": {"enabled": False},
            **sections,
        }
        path = self.workdir / file
        path.write_text(yaml.safe_dump(data, sort_keys=False))
        return path

    def run_cli(
        self, *args: str, timeout_s: float = 600, env: dict[str, str] | None = None
    ) -> subprocess.CompletedProcess[str]:
        """Run the real CLI, as an operator would, with this lab's state directory."""
        state = self.workdir / "state"
        return subprocess.run(
            [sys.executable, "-m", "wizard", *args, "--state-dir", str(state)],
            capture_output=True,
            text=True,
            timeout=timeout_s,
            env=env,
        )

    def wizard(
        self, *args: str, timeout_s: float = 600, env: dict[str, str] | None = None
    ) -> tuple[int, list[dict[str, Any]], str]:
        """Run a headless wizard run with --json; returns exit code, events and stderr."""
        proc = self.run_cli(*args, timeout_s=timeout_s, env=env)
        events = [json.loads(line) for line in proc.stdout.splitlines() if line.startswith("{")]
        return proc.returncode, events, proc.stderr

    def management_by_dhcp(self, vm: Vm) -> None:
        """Give ``vm``'s management NIC its DHCP configuration back (the file only; the address is the same)."""
        done = self.ssh(vm, f"printf %s {shlex.quote(DHCP_MANAGEMENT)} > /etc/netplan/01-management.yaml")
        assert done.exit_status == 0, done.stderr

    def ssh(self, vm: Vm, command: str, *, timeout_s: float = 120) -> asyncssh.SSHCompletedProcess:
        """One command on a VM as root (the test inspects; the wizard logs in as ubuntu, on its own connections),
        on the test's kept connection to that VM (tests/vmlab/guest_shell.py)."""
        if self.shells is None:
            self.shells = GuestShells(self.pair.key_file, self.known_hosts)
        return self.shells.run(vm.ssh_port, command, timeout_s)

    def close(self) -> None:
        """Close the test's own connections (before the VMs stop)."""
        if self.shells is not None:
            self.shells.close()
            self.shells = None


async def _run(pair: VmPair, vm: Vm, command: str, timeout_s: float) -> asyncssh.SSHCompletedProcess:
    async with asyncssh.connect(
        "127.0.0.1",
        vm.ssh_port,
        username="root",
        client_keys=[str(pair.key_file)],
        known_hosts=str(pair.workdir / "known_hosts"),
        connect_timeout=20,
    ) as conn:
        return await conn.run(command, timeout=timeout_s)


async def _wait_ssh(pair: VmPair, deadline: float) -> None:
    for vm in pair.vms:
        last: Exception | None = None
        while time.monotonic() < deadline:
            try:
                result = await _run(pair, vm, "true", 30)
                if result.exit_status == 0:
                    break
            except (OSError, asyncssh.Error, TimeoutError) as exc:
                last = exc
            await asyncio.sleep(1)
        else:
            raise TimeoutError(f"{vm.name} did not answer on SSH ({last}); serial log: {vm.serial}")


def _write_known_hosts(pair: VmPair) -> None:
    key = " ".join((pair.image / "host_ed25519.pub").read_text().split()[:2])
    lines = [f"[127.0.0.1]:{vm.ssh_port} {key}" for vm in pair.vms]
    (pair.workdir / "known_hosts").write_text("\n".join(lines) + "\n")


@pytest.fixture(scope="session")
def vm_image() -> Path:
    reason = missing_requirements()
    if reason:
        pytest.skip(reason)
    return ensure_image()


@pytest.fixture(scope="session")
def booted_snapshot(vm_image: Path) -> Path:
    """Disks holding a `savevm` of both VMs right after their first boot (made once per image)."""
    with locked(vm_image.with_name(vm_image.name + ".snapshot.lock")):
        return _make_snapshot(vm_image)


def _make_snapshot(vm_image: Path) -> Path:
    target = vm_image / "snapshot"
    if (target / "vm2.qcow2").exists():
        return target
    building = vm_image / "snapshot.building"
    shutil.rmtree(building, ignore_errors=True)
    pair = VmPair(vm_image, building)
    pair.start()
    try:
        _write_known_hosts(pair)
        pair.wait_for_ssh_ports()
        asyncio.run(_wait_ssh(pair, time.monotonic() + BOOT_TIMEOUT_S))
        for vm in pair.vms:
            vm.hmp(f"savevm {SNAPSHOT}", wait_s=120)
    finally:
        pair.stop()
    for leftover in building.iterdir():
        if leftover.suffix != ".qcow2":
            leftover.unlink()
    building.rename(target)
    return target


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo[None]) -> Iterator[None]:
    """Keep each phase's report on the test item, so a fixture's teardown knows whether the test failed."""
    outcome = yield
    report = outcome.get_result()
    setattr(item, f"rep_{report.when}", report)


def _guest_evidence(pair: VmPair) -> str:
    """What the guests were doing, for a failed test: qemu's view and the tail of each serial console (the
    kernel's messages: hung tasks, oopses, link changes), so a failure in CI can be read without re-running it."""
    parts = []
    for vm in pair.vms:
        try:
            status = vm.hmp("info status", wait_s=10)
            network = vm.hmp("info network", wait_s=10)
        except OSError as exc:
            status, network = f"monitor unreachable: {exc}", ""
        serial = vm.serial.read_text(errors="replace")[-6000:] if vm.serial.exists() else "(no serial log)"
        parts.append(f"--- {vm.name}: {status}\n{network}\n--- {vm.name} serial console, last lines:\n{serial}")
    return "\n".join(parts)


@pytest.fixture
def lab_vms(booted_snapshot: Path, vm_image: Path, tmp_path: Path, request: pytest.FixtureRequest) -> Iterator[LabVms]:
    """Both VMs resumed from the booted snapshot, with Soft-RoCE on their third cable (rxe_eth3).

    rxe_eth3 plays the part a ConnectX port's mlx5 device plays on a real server: RDMA hardware that is there
    before the wizard runs. (The wizard never creates RDMA devices; it discovers them.)
    """
    workdir = tmp_path / "vms"
    workdir.mkdir()
    for disk in booted_snapshot.glob("*.qcow2"):
        shutil.copyfile(disk, workdir / disk.name)
    pair = VmPair(vm_image, workdir)
    pair.start(loadvm=SNAPSHOT)
    lab = LabVms(pair, tmp_path)
    try:
        _write_known_hosts(pair)
        pair.wait_for_ssh_ports()
        asyncio.run(_wait_ssh(pair, time.monotonic() + BOOT_TIMEOUT_S))
        for vm in pair.vms:
            # A resumed snapshot's clock is as old as the snapshot.
            # dmesg -n 7: the kernel's messages reach the serial console (the image boots with `quiet`).
            # The management NIC gets the address qemu gave it as a static one (as most servers have): the clock
            # jumps from the snapshot's time to now, and twice in CI a netplan apply later left eth0 without its
            # DHCP address for minutes (slirp saw SYNs to 10.0.2.15 go unanswered), which no real host would show.
            ready = lab.ssh(
                vm,
                f"date -s @{time.time():.3f} >/dev/null && dmesg -n 7 && modprobe rdma_rxe && "
                "rdma link add rxe_eth3 type rxe netdev eth3 && "
                f"printf %s {shlex.quote(STATIC_MANAGEMENT)} > /etc/netplan/01-management.yaml",
            )
            assert ready.exit_status == 0, ready.stderr
        yield lab
        call = getattr(request.node, "rep_call", None)
        if call is not None and call.failed:
            print(_guest_evidence(pair))  # shown under "Captured stdout teardown" of the failed test
            for log in sorted((tmp_path / "state").glob("**/*.log")):
                print(f"--- the wizard's log {log.name}, last lines:\n" + "\n".join(log.read_text().splitlines()[-40:]))
    finally:
        lab.close()
        pair.stop()
        for disk in workdir.glob("*.qcow2"):
            disk.unlink()  # 300 MB each; pytest keeps the last runs' temporary directories
