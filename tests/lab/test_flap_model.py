"""The lab's link counters: carrier drops from reconfiguration versus physical link losses (the flap fault).

Sources: Documentation/ABI/testing/sysfs-class-net (carrier_changes = carrier_up_count + carrier_down_count,
net/core/net-sysfs.c); mlx5e drops the carrier on ``ip link set down`` (mlx5e_close) and around an MTU change of a
running port (mlx5e_change_mtu -> mlx5e_switch_priv_channels); ``link_down_events_phy`` (NVIDIA "Understanding
mlx5 ethtool Counters") counts physical link losses only.
"""

from __future__ import annotations

from tests.lab.test_rails16_sim import RAIL0, RAIL1, booted


async def _carrier(lab, host: str, dev: str) -> tuple[int, int, int]:  # noqa: ANN001 - a Lab
    """(carrier_changes, carrier_down_count, carrier_up_count) as sysfs shows them."""
    out = (await lab.host(host).run(f"grep -sH . /sys/class/net/{dev}/carrier_*")).stdout
    found = {line.split("/")[-1].split(":")[0]: int(line.rsplit(":", 1)[1]) for line in out.splitlines()}
    return found["carrier_changes"], found["carrier_down_count"], found["carrier_up_count"]


async def _phy_downs(lab, host: str, dev: str) -> int:  # noqa: ANN001
    stats = (await lab.host(host).run(f"ethtool -S {dev}")).stdout
    return int(stats.split("link_down_events_phy: ")[1].split()[0])


async def test_a_healthy_port_after_boot_has_one_carrier_down_and_no_physical_loss() -> None:
    lab = await booted()
    assert await _carrier(lab, "gpu-001", RAIL0) == (2, 1, 1)
    assert await _phy_downs(lab, "gpu-001", RAIL0) == 0


async def test_an_mtu_change_cycles_the_carrier_but_is_no_physical_link_loss() -> None:
    lab = await booted()
    assert (await lab.host("gpu-002").run(f"ip link set {RAIL1} mtu 9000")).status == 0
    assert await _carrier(lab, "gpu-002", RAIL1) == (4, 2, 2)
    assert (await lab.host("gpu-002").run(f"ip link set {RAIL1} mtu 9000")).status == 0  # unchanged: no reopen
    assert (await _carrier(lab, "gpu-002", RAIL1))[1] == 2
    assert await _phy_downs(lab, "gpu-002", RAIL1) == 0
    assert (await _carrier(lab, "gpu-002", RAIL0))[1] == 1


async def test_ip_link_down_drops_the_carrier_and_up_raises_it_again() -> None:
    lab = await booted()
    host = lab.host("gpu-004")
    assert (await host.run(f"ip link set {RAIL0} down")).status == 0
    assert await _carrier(lab, "gpu-004", RAIL0) == (3, 2, 1)
    assert (await host.run(f"ip link set {RAIL0} up")).status == 0
    assert await _carrier(lab, "gpu-004", RAIL0) == (4, 2, 2)
    assert await _phy_downs(lab, "gpu-004", RAIL0) == 0
