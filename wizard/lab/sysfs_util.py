"""Small builders for computed /sys entries (constant files, writable integers, indexed directories)."""

from __future__ import annotations

import errno
from collections.abc import Callable
from typing import TYPE_CHECKING

from wizard.lab.gids import GID_TABLE_LEN
from wizard.lab.vfs import DynDir, DynFile, FsError, Node

if TYPE_CHECKING:
    pass


def _ro(value: Callable[[], str]) -> DynFile:
    return DynFile(lambda: value() + "\n")


def _const(text: str) -> DynFile:
    return DynFile(lambda: text + "\n")


def _fail(code: int) -> Callable[[], str]:
    def reader() -> str:
        raise FsError(code, "")

    return reader


def _dir(entries: Callable[[], dict[str, Node]]) -> DynDir:
    return DynDir(entries)


_INDEX_NAMES = tuple(str(i) for i in range(GID_TABLE_LEN))


def _indexed(make: Callable[[int], Node]) -> DynDir:
    """A directory of files 0..254 (GID table) whose single entries resolve without listing all. ``make``'s nodes
    must compute their content when read (they are made once and kept): a grep over every GID file of eight ports
    reads 6,120 of them per host, and building them anew for each command was most of a 1,024-host discovery."""
    made: dict[str, Node] = {}

    def get(name: str) -> Node | None:
        node = made.get(name)
        if node is None and name.isdigit() and int(name) < GID_TABLE_LEN and str(int(name)) == name:
            node = made[name] = make(int(name))
        return node

    listing: dict[str, Node] = {}

    def entries() -> dict[str, Node]:
        if len(listing) < GID_TABLE_LEN:
            listing.update((name, get(name)) for name in _INDEX_NAMES)  # type: ignore[misc]
        return listing

    return DynDir(entries, getter=get)


def _int_writer(lo: int, hi: int, setter: Callable[[int], None]) -> Callable[[str], None]:
    def write(text: str) -> None:
        try:
            value = int(text.strip())
        except ValueError:
            raise FsError(errno.EINVAL, "") from None
        if not lo <= value <= hi:
            raise FsError(errno.EINVAL, "")
        setter(value)

    return write
