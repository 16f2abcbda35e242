"""`lab serve --hosts 50`-style labs: many hosts, switched rails, concurrent sessions."""

from __future__ import annotations

import asyncio
import time

from tests.lab.conftest import connect, rails_yaml
from wizard.lab import Lab, parse_fault
from wizard.parsers import parse


async def test_fifty_hosts_answer_concurrently_each_with_its_own_identity() -> None:
    lab = Lab.generated(50, faults=[parse_fault("gpu-050:link_down=ens1f0np0")])
    lab.time_scale = 0.001
    started = time.monotonic()
    await lab.start()
    try:
        assert lab.names[0] == "gpu-001" and lab.names[-1] == "gpu-050"

        async def probe(name: str) -> tuple[str, str]:
            async with await connect(lab, name) as conn:
                r = await conn.run("hostname; printenv SSH_CONNECTION")
                return name, r.stdout

        results = await asyncio.gather(*(probe(n) for n in lab.names))
        for i, (name, out) in enumerate(results):
            hostname, conn_line = out.splitlines()
            assert hostname == name
            assert conn_line.split()[2] == f"10.0.0.{11 + i}"
        assert time.monotonic() - started < 30
        links = parse("rdma_link", (await lab.host("gpu-050").run("rdma link")).stdout).links
        assert [x.state for x in links] == ["DOWN", "ACTIVE", "ACTIVE", "ACTIVE"]
    finally:
        await lab.stop()


async def test_generated_hosts_sit_on_per_port_rail_switches() -> None:
    lab = Lab.generated(3)
    lab.time_scale = 0.001
    for i, name in enumerate(lab.names, 1):
        r = await lab.host(name).run("tee /etc/netplan/60.yaml >/dev/null && netplan apply", stdin=rails_yaml(i))
        assert r.status == 0, r.stderr
    host = lab.host("gpu-001")
    # rail 2 reaches every other host's rail-2 port through the switch, and nothing on rail 1
    assert (await host.run("ping -c 1 -I ens1f1np1 192.168.12.3")).status == 0
    assert (await host.run("ping -c 1 -I ens1f1np1 192.168.11.3")).status == 1
    six = await host.run("ping -6 -n -c 1 -I ens2f0np0 ff02::1")
    assert six.stdout.count("(DUP!)") == 2
