"""Fixtures for the lab tests: a started 2-host reference lab and real asyncssh clients to it."""

from __future__ import annotations

from collections.abc import AsyncIterator

import asyncssh
import pytest

from wizard.lab import Lab, parse_fault

NAMES = ["server1", "server2"]
RAILS = """network:
  version: 2
  renderer: networkd
  ethernets:
    ens1f0np0: {{mtu: {mtu}, addresses: [192.168.11.{n}/24]}}
    ens1f1np1: {{mtu: {mtu}, addresses: [192.168.12.{n}/24]}}
    ens2f0np0: {{mtu: {mtu}, addresses: [192.168.13.{n}/24]}}
    ens2f1np1: {{mtu: {mtu}, addresses: [192.168.14.{n}/24]}}
"""


def rails_yaml(n: int, mtu: int = 9000) -> str:
    """The correct per-port rail design of the correctness review: rail i = 192.168.1(0+i).n/24."""
    return RAILS.format(n=n, mtu=mtu)


async def make_lab(*faults: str, names: list[str] | None = None) -> Lab:
    lab = Lab.reference(names or NAMES, faults=[parse_fault(f) for f in faults])
    lab.time_scale = 0.001  # simulated delays (sleep, ping intervals, apt) nearly vanish
    lab.reboot_seconds = 0.3
    await lab.start()
    return lab


@pytest.fixture
async def lab() -> AsyncIterator[Lab]:
    lab = await make_lab()
    try:
        yield lab
    finally:
        await lab.stop()


async def connect(lab: Lab, name: str, user: str = "ubuntu", **kwargs: object) -> asyncssh.SSHClientConnection:
    host, port = lab.endpoint(name)
    return await asyncssh.connect(
        host,
        port,
        username=user,
        client_keys=[str(lab.client_key_path)],
        known_hosts=str(lab.known_hosts_path),
        **kwargs,
    )


async def ssh(
    lab: Lab, name: str, command: str, *, user: str = "ubuntu", **kwargs: object
) -> asyncssh.SSHCompletedProcess:
    """Run one command over a fresh SSH connection, as the wizard's executor would."""
    async with await connect(lab, name, user) as conn:
        return await conn.run(command, **kwargs)


async def root(lab: Lab, name: str, command: str, **kwargs: object) -> asyncssh.SSHCompletedProcess:
    return await ssh(lab, name, command, user="root", **kwargs)


async def install_rails(lab: Lab, mtu: int = 9000) -> None:
    for i, name in enumerate(lab.names, 1):
        r = await root(
            lab,
            name,
            "tee /etc/netplan/60-rails.yaml >/dev/null && chmod 600 /etc/netplan/60-rails.yaml && netplan apply",
            input=rails_yaml(i, mtu),
        )
        assert r.exit_status == 0, r.stderr


DOCA_SETUP = (
    "curl -fsSL -o /tmp/key.pub https://linux.mellanox.com/public/repo/doca/GPG-KEY-Mellanox.pub && "
    "gpg --batch --yes --dearmor -o /etc/apt/trusted.gpg.d/GPG-KEY-Mellanox.gpg /tmp/key.pub && "
    "echo 'deb [signed-by=/etc/apt/trusted.gpg.d/GPG-KEY-Mellanox.gpg] "
    "https://linux.mellanox.com/public/repo/doca/2.9.1/ubuntu22.04/x86_64/ ./' > /etc/apt/sources.list.d/doca.list && "
    "apt-get update && env DEBIAN_FRONTEND=noninteractive apt-get install -y linux-headers-$(uname -r) doca-ofed"
)


async def install_doca(lab: Lab, name: str, *, restart: bool = True) -> None:
    r = await root(lab, name, DOCA_SETUP)
    assert r.exit_status == 0, r.stderr
    if restart:
        r = await root(lab, name, "/etc/init.d/openibd restart")
        assert r.exit_status == 0, r.stderr
