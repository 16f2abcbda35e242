"""A simulated perftest connection costs the same in a lab of any size. A rail of a rails-N fabric is one L2 segment
across its SUs; the lab used to search it port by port, and every host's addresses, for each connection: at 1,024
hosts most of the lab's work in a 4,096-flow round. Now the host that answers is the one the fabric delivered the
packet to, and each segment learns which port holds which address in one pass."""

from __future__ import annotations

import pytest

from tests.lab.test_degraded_faults import ready, write_bw
from wizard.lab import Lab, reach
from wizard.lab.rails_plan import host_names


async def ports_looked_at(hosts: int, monkeypatch: pytest.MonkeyPatch) -> tuple[int, float]:
    """Ports whose netdevs the lab examined while gpu-002 connects to the lab's second-to-last host (another SU:
    through the spine), after gpu-001 connected to the last one."""
    lab = Lab.rails(hosts)
    for host in lab.hosts.values():
        host.power_on()  # every host up, as in a fleet run: a search goes through them all
    names = host_names(hosts)
    await ready(lab, "gpu-001", "gpu-002", names[-2], names[-1])
    assert await write_bw(lab, names[-1], "gpu-001") > 300
    seen = [0]
    real = reach._owner_netdev

    def counted(host: object, port: int) -> str | None:
        seen[0] += 1
        return real(host, port)  # type: ignore[arg-type]

    with monkeypatch.context() as patch:
        patch.setattr(reach, "_owner_netdev", counted)
        gbps = await write_bw(lab, names[-2], "gpu-002")
    return seen[0], gbps


async def test_a_connection_looks_at_as_many_ports_in_128_hosts_as_in_64(monkeypatch: pytest.MonkeyPatch) -> None:
    small, small_gbps = await ports_looked_at(64, monkeypatch)
    large, large_gbps = await ports_looked_at(128, monkeypatch)
    assert small_gbps == pytest.approx(large_gbps, rel=0.01) and small_gbps > 300, "a flow at full rate in both"
    assert large == small, f"{small} ports looked at in 64 hosts, {large} in 128"
