"""The simulated /sys GID tables: read fresh on every command, built once. A grep over every GID file of eight ports
reads 6,120 files per host; building them anew for each command was most of a 1,024-host discovery in the lab."""

from __future__ import annotations

import pytest

from wizard.lab import Lab, nodes

GREP = "grep -sH . /sys/class/infiniband/*/ports/1/gids/* /sys/class/infiniband/*/ports/1/gid_attrs/types/*"


async def test_a_new_address_shows_in_the_gid_files_of_the_next_command() -> None:
    lab = Lab.reference(["server1", "server2"])
    host = lab.host("server1")
    before = (await host.run(GREP)).stdout
    assert "c0a8:6301" not in before  # 192.168.99.1 is on no port yet
    netdev = next(iter(sorted(n for n in host.netdevs if n.startswith("ens"))))
    assert (await host.run(f"ip addr add 192.168.99.1/24 dev {netdev}")).status == 0
    after = (await host.run(GREP)).stdout
    assert "0000:0000:0000:0000:0000:ffff:c0a8:6301" in after
    assert "RoCE v2" in after


async def test_the_gid_files_are_built_once_per_device_not_for_every_command(monkeypatch: pytest.MonkeyPatch) -> None:
    lab = Lab.reference(["server1", "server2"])
    host = lab.host("server1")
    await host.run(GREP)
    built = []
    original = nodes.DynFile.__init__

    def counting(self: nodes.DynFile, *args: object, **kwargs: object) -> None:
        built.append(1)
        original(self, *args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(nodes.DynFile, "__init__", counting)
    for _ in range(3):
        assert "gid_attrs/types/1:RoCE v2" in (await host.run(GREP)).stdout  # status 2: empty slots read EINVAL
    assert len(built) < 500, f"{len(built)} sysfs files built for three greps over {255 * 2} files per port"
