"""The GID tables are read in two steps (steps/discovery/gid_read.py): the slots in use, then the type and netdev of
those only. The table the parser builds must be the one the single wide read gave, on real output and on the lab."""

from __future__ import annotations

import shlex

from steps.discovery.gid_read import GID_VALUES, gid_attrs_command, read_gid_text
from tests.fixture_files import real_output
from wizard.lab.cluster import Lab
from wizard.lab.rails_plan import host_names
from wizard.parsers.rdma_gids import parse_sysfs_gids

ZERO = ":".join(["0000"] * 8)
# A Debian 12 VM's two Soft-RoCE ports, captured with the one wide grep over gids, types and ndevs (SOURCES.md)
WIDE = real_output("sysfs_gids", "vmlab-debian12-rxe-first-4-slots.txt")
WIDE_COMMAND = (
    "grep -sH . /sys/class/infiniband/*/ports/*/gids/* /sys/class/infiniband/*/ports/*/gid_attrs/types/* "
    "/sys/class/infiniband/*/ports/*/gid_attrs/ndevs/*"
)


def _answers_from_capture(command: str) -> str:
    """What each of the two reads prints on the captured VM: the slots in use, or the attribute files asked for
    (the capture shows no attributes for the empty slots: the kernel fails those reads with EINVAL)."""
    lines = WIDE.splitlines()
    if command == GID_VALUES:
        return "".join(f"{line}\n" for line in lines if "/gids/" in line and not line.endswith(ZERO))
    asked = set(shlex.split(command)[3:])
    return "".join(f"{line}\n" for line in lines if line.split(":", 1)[0] in asked)


async def test_two_reads_give_the_table_the_wide_read_gave_on_a_real_host() -> None:
    commands: list[str] = []

    async def grep(command: str) -> str:
        commands.append(command)
        return _answers_from_capture(command)

    text = await read_gid_text(grep)
    assert parse_sysfs_gids(text) == parse_sysfs_gids(WIDE)
    assert len(parse_sysfs_gids(text).entries) == 4  # fe80 and the IPv4 GID on each of the two ports
    assert commands[0] == GID_VALUES
    assert commands[1] == (
        "grep -sH . /sys/class/infiniband/rxe_bond0/ports/1/gid_attrs/types/0 "
        "/sys/class/infiniband/rxe_bond0/ports/1/gid_attrs/ndevs/0 "
        "/sys/class/infiniband/rxe_bond0/ports/1/gid_attrs/types/1 "
        "/sys/class/infiniband/rxe_bond0/ports/1/gid_attrs/ndevs/1 "
        "/sys/class/infiniband/rxe_eth3/ports/1/gid_attrs/types/0 "
        "/sys/class/infiniband/rxe_eth3/ports/1/gid_attrs/ndevs/0 "
        "/sys/class/infiniband/rxe_eth3/ports/1/gid_attrs/types/1 "
        "/sys/class/infiniband/rxe_eth3/ports/1/gid_attrs/ndevs/1"
    )


async def test_no_slot_in_use_makes_no_second_read() -> None:
    commands: list[str] = []

    async def grep(command: str) -> str:
        commands.append(command)
        return ""  # no RDMA device: the glob matches nothing

    assert await read_gid_text(grep) == ""
    assert commands == [GID_VALUES]


def test_only_lines_in_the_sysfs_layout_name_attribute_files() -> None:
    values = (
        "/sys/class/infiniband/mlx5_0/ports/1/gids/3:0000:0000:0000:0000:0000:ffff:0a00:0001\n"
        "/sys/class/infiniband/mlx5_0;reboot/ports/1/gids/4:0000:0000:0000:0000:0000:ffff:0a00:0002\n"
        "grep: warning: something\n"
    )
    assert gid_attrs_command(values) == (
        "grep -sH . /sys/class/infiniband/mlx5_0/ports/1/gid_attrs/types/3 "
        "/sys/class/infiniband/mlx5_0/ports/1/gid_attrs/ndevs/3"
    )
    assert gid_attrs_command("") is None


async def test_on_a_simulated_rails_host_the_two_reads_match_the_wide_read() -> None:
    names = host_names(16)
    host = Lab.for_profile("rails-16", names).host(names[0])

    async def grep(command: str) -> str:
        return (await host.run(command, user="ubuntu")).stdout

    two_step = parse_sysfs_gids(await read_gid_text(grep))
    wide = (await host.run(WIDE_COMMAND, user="ubuntu")).stdout
    assert two_step == parse_sysfs_gids(wide)
    assert len(two_step.entries) == 16  # eight ports, each with its link-local GID as RoCE v1 and v2
    assert ZERO not in await grep(GID_VALUES)
