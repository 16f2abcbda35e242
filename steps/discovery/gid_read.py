"""The GID tables of every RDMA port, read in two steps: the slots in use, then the type and netdev of those only.

A ConnectX port has 255 RoCE GID slots, a host with eight ports 2,040, and nearly all are empty. Reading the type and
netdev of every slot as well (``gid_attrs/types/*``, ``gid_attrs/ndevs/*``) was 6,120 sysfs files and 175 KB of
output per host, most of it zero GIDs, which a fleet's read carried over SSH for every host.

The kernel shows an empty slot as the zero GID and fails the read of its attributes with EINVAL
(drivers/infiniband/core/sysfs.c: ``show_port_gid`` prints ``zgid`` for an invalid entry, ``print_gid_attr`` returns
the lookup's error). The captures in tests/fixtures/real-outputs agree: the Soft-RoCE VM's wide read prints no
attribute of an empty slot, and the RoCE LAG capture notes that the other indexes return "Invalid argument". So the
empty slots say nothing the parser keeps (wizard/parsers/rdma_gids.py drops zero GIDs). The first read leaves them
out with ``grep -v``, a filter on which lines to send, not parsing; the second names the attribute files of the
slots left. What the parser gets is what the one wide read gave it, less the empty slots.
"""

from __future__ import annotations

import re
import shlex
from collections.abc import Awaitable, Callable

# Every slot's GID but the empty ones ('^[0:]*$': the zero GID, 0000:...:0000, and an empty line).
GID_VALUES = "grep -sHv '^[0:]*$' /sys/class/infiniband/*/ports/*/gids/*"
# How the second read starts (a Step's dependent_probes pattern names it by this).
GID_ATTRS_PATTERN = "grep -sH . /sys/class/infiniband/*/gid_attrs/*"
GID_ATTRS_WHY = "the type and netdev of each GID slot in use, known only once the GID values of this read answered"

_IN_USE = re.compile(r"^(?P<port>/sys/class/infiniband/[A-Za-z0-9_.:-]+/ports/\d+)/gids/(?P<index>\d+):")


def gid_attrs_command(values: str) -> str | None:
    """``grep -sH .`` over ``gid_attrs/types/N`` and ``gid_attrs/ndevs/N`` of every slot ``values`` (GID_VALUES'
    output) shows in use; None when it shows none. Only paths matching the sysfs layout are taken, quoted anyway."""
    paths: list[str] = []
    for line in values.splitlines():
        if found := _IN_USE.match(line):
            port, index = found.group("port"), found.group("index")
            paths += [f"{port}/gid_attrs/types/{index}", f"{port}/gid_attrs/ndevs/{index}"]
    return shlex.join(["grep", "-sH", ".", *paths]) if paths else None


async def read_gid_text(grep: Callable[[str], Awaitable[str]]) -> str:
    """The sysfs GID lines of the slots in use, values and attributes together, as ``parse_sysfs_gids`` reads them.
    ``grep`` runs one command line and gives its output (the caller decides which exit statuses count)."""
    values = await grep(GID_VALUES)
    command = gid_attrs_command(values)
    if command is None:
        return values
    return values.rstrip("\n") + "\n" + await grep(command)
