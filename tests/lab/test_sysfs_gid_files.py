"""The simulated /sys GID tables: read fresh on every command, and cheap at a fleet's size. A grep over every GID
file of eight ports reads 6,120 files per host: built twice per read they were most of a 1,024-host discovery's lab
time, and kept between commands 4.6 MB per host."""

from __future__ import annotations

import gc
import tracemalloc

import pytest

from wizard.lab import Lab, nodes, rdma

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


async def test_a_glob_over_the_gid_files_builds_none_and_a_grep_builds_one_per_file_it_reads(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    lab = Lab.reference(["server1", "server2"])
    host = lab.host("server1")
    built = []
    original = nodes.DynFile.__init__

    def counting(self: nodes.DynFile, *args: object, **kwargs: object) -> None:
        built.append(1)
        original(self, *args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(nodes.DynFile, "__init__", counting)
    files = (await host.run("echo /sys/class/infiniband/*/ports/1/gids/*")).stdout.split()
    # the listing builds the device and port directories' own files, not 1,020 GID files
    assert len(files) == 255 * len(rdma.devices(host)) and len(built) < 300
    built.clear()
    assert "gid_attrs/types/1:RoCE v2" in (await host.run(GREP)).stdout  # status 2: empty slots read EINVAL
    assert len(built) < 2 * len(files) + 2 * 300, f"{len(built)} sysfs files built to read {2 * len(files)}"


async def test_a_host_keeps_no_gid_files_between_commands() -> None:
    lab = Lab.reference(["server1", "server2"])
    host = lab.host("server1")
    await host.run("cat /sys/class/infiniband/*/ports/1/state")  # the sysfs tree's own first use
    tracemalloc.start()
    try:
        before = tracemalloc.get_traced_memory()[0]
        for _ in range(3):
            await host.run(GREP)
        gc.collect()
        kept = tracemalloc.get_traced_memory()[0] - before
    finally:
        tracemalloc.stop()
    assert kept < 300_000, f"{kept:,} bytes kept after three greps over the GID tables"
