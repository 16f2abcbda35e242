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
    """A directory of files 0..254 (GID table): its names are listed without building a node per file, and one
    entry resolves without listing all. A glob over every GID file of eight ports names 6,120 files per host; built
    as nodes for the listing and again for the reads, they were most of a 1,024-host discovery's lab time, and kept
    between commands they were 4.6 MB per host."""

    def get(name: str) -> Node | None:
        return make(int(name)) if name.isdigit() and int(name) < GID_TABLE_LEN and str(int(name)) == name else None

    return DynDir(lambda: {str(i): make(i) for i in range(GID_TABLE_LEN)}, getter=get, namer=lambda: _INDEX_NAMES)


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
