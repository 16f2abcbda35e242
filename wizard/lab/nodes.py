"""Filesystem nodes of a simulated host: files, directories, symlinks and computed (sysfs-style) entries."""

from __future__ import annotations

import errno
import os
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass


class FsError(OSError):
    """A filesystem error carrying the errno and the path the caller used, like the C library's."""

    def __init__(self, code: int, path: str) -> None:
        super().__init__(code, os.strerror(code), path)
        self.path = path

    @property
    def reason(self) -> str:
        return os.strerror(self.errno or 0)


@dataclass(frozen=True)
class Cred:
    """Who performs an operation."""

    uid: int
    gid: int
    user: str = "root"

    @property
    def root(self) -> bool:
        return self.uid == 0


ROOT = Cred(0, 0, "root")


_CHANGES = [0]


def changes() -> int:
    """How many changes a disk image would show were made to any node so far (contents, entries, mode, owner).

    wizard/lab/disk.py dumps a host's image after each of its commands only when this moved: most commands only
    read, and dumping every host's files after each of a bandwidth round's thousands of commands was a fifth of the
    lab's work. Computed nodes count too (they are never saved, so that only costs a dump that finds no change)."""
    return _CHANGES[0]


def _changed() -> None:
    _CHANGES[0] += 1


class _Counted:
    """A node attribute whose every assignment after the node was made counts as a change (chmod, chown): the
    disk image shows it though no byte of the file moved. Stored as ``_<name>``, which __init__ sets directly."""

    def __set_name__(self, owner: type, name: str) -> None:
        self.slot = "_" + name

    def __get__(self, node: object, owner: type | None = None) -> int:
        return getattr(node, self.slot)

    def __set__(self, node: object, value: int) -> None:
        setattr(node, self.slot, value)
        _changed()


class Node:
    kind = "node"
    _mtime: float | None = None
    mode = _Counted()
    uid = _Counted()
    gid = _Counted()

    def __init__(self, mode: int, uid: int = 0, gid: int = 0) -> None:
        self._mode, self._uid, self._gid = mode, uid, gid  # a new node is not a change until it is added

    @property
    def mtime(self) -> float:
        # computed nodes (sysfs) are created by the thousand; they get a timestamp only when asked
        if self._mtime is None:
            self._mtime = time.time()
        return self._mtime

    @mtime.setter
    def mtime(self, value: float) -> None:
        self._mtime = value

    @property
    def size(self) -> int:
        return 0

    def allows(self, cred: Cred, bit: int) -> bool:
        """Classic owner/group/other check for one of r=4, w=2, x=1; root passes except for exec."""
        if cred.root:
            return bit != 1 or self.kind == "dir" or bool(self.mode & 0o111)
        if cred.uid == self.uid:
            return bool(self.mode & (bit << 6))
        if cred.gid == self.gid:
            return bool(self.mode & (bit << 3))
        return bool(self.mode & bit)


class File(Node):
    kind = "file"

    def __init__(self, data: bytes = b"", mode: int = 0o644, uid: int = 0, gid: int = 0) -> None:
        super().__init__(mode, uid, gid)
        self.data = bytes(data)

    @property
    def size(self) -> int:
        return len(self.data)

    def read(self) -> bytes:
        return self.data

    def write(self, data: bytes, *, append: bool = False, path: str = "") -> None:
        self.data = self.data + data if append else bytes(data)
        self.mtime = time.time()
        _changed()


class DynFile(File):
    """A computed file (sysfs/procfs): reading calls ``reader``, writing calls ``writer`` with the text."""

    def __init__(
        self,
        reader: Callable[[], str] | None,
        writer: Callable[[str], None] | None = None,
        mode: int | None = None,
    ) -> None:
        # File.__init__'s work without its calls: a glob over a host's sysfs builds thousands of these per command
        self._mode, self._uid, self._gid = mode if mode is not None else (0o644 if writer else 0o444), 0, 0
        self.data = b""
        self.reader = reader
        self.writer = writer

    @property
    def size(self) -> int:
        return 4096

    def read(self) -> bytes:
        if self.reader is None:
            raise FsError(errno.EINVAL, "")
        return self.reader().encode()

    def write(self, data: bytes, *, append: bool = False, path: str = "") -> None:
        if self.writer is None:
            raise FsError(errno.EACCES, path)
        try:
            self.writer(data.decode(errors="replace"))
        finally:
            invalidate()


class Symlink(Node):
    kind = "link"

    def __init__(self, target: str, uid: int = 0, gid: int = 0) -> None:
        super().__init__(0o777, uid, gid)
        self.target = target

    @property
    def size(self) -> int:
        return len(self.target)


class Dir(Node):
    kind = "dir"

    def __init__(self, mode: int = 0o755, uid: int = 0, gid: int = 0) -> None:
        super().__init__(mode, uid, gid)
        self._children: dict[str, Node] = {}

    @property
    def size(self) -> int:
        return 4096

    def children(self) -> dict[str, Node]:
        return self._children

    def names(self) -> Iterable[str]:
        """The entries' names (a glob needs no more)."""
        return self.children().keys()

    def child(self, name: str) -> Node | None:
        return self.children().get(name)

    def add(self, name: str, node: Node, path: str = "") -> None:
        self._children[name] = node
        self.mtime = time.time()
        _changed()

    def remove(self, name: str, path: str = "") -> None:
        del self._children[name]
        self.mtime = time.time()
        _changed()


_EPOCH = [0]


def invalidate() -> None:
    """Forget cached computed directory listings (called before every command and after sysfs writes)."""
    _EPOCH[0] += 1


class DynDir(Dir):
    """A computed directory: ``lister`` gives its entries (nodes or node factories), cached per epoch so one
    command walking thousands of sysfs files builds each directory once."""

    def __init__(
        self,
        lister: Callable[[], dict[str, Node]],
        mode: int = 0o755,
        getter: Callable[[str], Node | None] | None = None,
        maker: Callable[[str], None] | None = None,
        remover: Callable[[str], None] | None = None,
        namer: Callable[[], Iterable[str]] | None = None,
    ) -> None:
        super().__init__(mode)
        self.lister = lister
        self.getter = getter  # fast path for one entry of a big directory (sysfs gids/0..254)
        self.namer = namer  # and its names without a node per entry
        self.maker = maker  # configfs: mkdir creates a group
        self.remover = remover
        self._epoch = -1
        self._entries: dict[str, object] = {}

    def _fresh(self) -> None:
        if self._epoch != _EPOCH[0]:
            self._epoch = _EPOCH[0]
            self._entries = dict(self.lister())

    def children(self) -> dict[str, Node]:
        if self.getter is not None:
            # A big indexed directory (a GID table: 255 files) is built when listed and never kept: the last
            # command's nodes, kept per host until the next, were megabytes per host on a 1,024-host lab.
            return dict(self.lister())
        self._fresh()
        for k, v in self._entries.items():
            if not isinstance(v, Node):
                self._entries[k] = v()  # type: ignore[operator]
        return self._entries  # type: ignore[return-value]

    def names(self) -> Iterable[str]:
        return self.namer() if self.namer is not None else self.children().keys()

    def child(self, name: str) -> Node | None:
        if self.getter is not None:
            return self.getter(name)  # one entry, built for this look-up only
        self._fresh()
        value = self._entries.get(name)
        if value is not None and not isinstance(value, Node):
            value = self._entries[name] = value()  # type: ignore[operator]
        return value  # type: ignore[return-value]

    def add(self, name: str, node: Node, path: str = "") -> None:
        if self.maker is None or not isinstance(node, Dir):
            raise FsError(errno.EPERM, path)
        try:
            self.maker(name)
        except FsError as exc:
            raise FsError(exc.errno or errno.EPERM, path) from None
        invalidate()

    def remove(self, name: str, path: str = "") -> None:
        if self.remover is None:
            raise FsError(errno.EPERM, path)
        self.remover(name)
        invalidate()
