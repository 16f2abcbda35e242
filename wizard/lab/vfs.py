"""In-memory virtual filesystem of a simulated host, with owners, modes, symlinks and computed (sysfs) trees."""

from __future__ import annotations

import errno
import fnmatch
import posixpath
from collections.abc import Iterator
from contextlib import contextmanager

from wizard.lab.nodes import (  # re-exported: the public filesystem API lives in wizard.lab.vfs
    _EPOCH,
    ROOT,
    Cred,
    Dir,
    DynDir,
    DynFile,
    File,
    FsError,
    Node,
    Symlink,
    invalidate,
)


def _child_path(directory: str, name: str) -> str:
    """posixpath.join for a name without slashes under an absolute directory (a tenth of a sysfs scan's time)."""
    return directory + name if directory.endswith("/") else directory + "/" + name


class VFS:
    """Path-level operations with POSIX-like errors and permission checks."""

    def __init__(self) -> None:
        self.root = Dir(0o755)
        self.mounts: dict[str, Dir] = {}
        # While a read-only command walks thousands of files of one directory (grep over sysfs GID tables),
        # each directory is resolved once: {absolute path: (directory node, real path)}.
        self._dirs: dict[str, tuple[Node, str]] | None = None

    @contextmanager
    def walk_cache(self) -> Iterator[None]:
        """Remember resolved directories for the duration of a read-only scan (the tree must not change)."""
        outer = self._dirs is not None
        if not outer:
            self._dirs = {}
        try:
            yield
        finally:
            if not outer:
                self._dirs = None

    # -- paths -------------------------------------------------------------------------------------------
    @staticmethod
    def abspath(path: str, cwd: str = "/") -> str:
        if path[:1] == "/" and "//" not in path and "/." not in path and path[-1] != "/":
            return path  # already normal: the common case of thousands of sysfs reads skips normpath
        joined = path if path.startswith("/") else posixpath.join(cwd, path)
        norm = posixpath.normpath(joined)
        # POSIX keeps a leading "//"; Linux treats it as "/".
        return "/" + norm.lstrip("/") if norm.startswith("//") else norm

    def mount(self, path: str, node: Dir) -> None:
        parent, name, _ = self._parent(path, "/", ROOT, check=False)
        parent.add(name, node)

    def _walk(self, path: str, cwd: str, follow_last: bool, depth: int = 0) -> tuple[Node, str]:
        if depth > 20:
            raise FsError(errno.ELOOP, path)
        apath = self.abspath(path, cwd)
        if self._dirs is not None and depth == 0 and apath != "/":
            return self._walk_cached(apath, path, follow_last)
        node: Node = self.root
        parts = [p for p in apath.split("/") if p]
        real = "/"
        for i, part in enumerate(parts):
            if not isinstance(node, Dir):
                raise FsError(errno.ENOTDIR, path)
            child = node.child(part)
            if child is None:
                raise FsError(errno.ENOENT, path)
            last = i == len(parts) - 1
            if isinstance(child, Symlink) and (follow_last or not last):
                target = child.target if child.target.startswith("/") else posixpath.join(real, child.target)
                child, real = self._walk(target, "/", True, depth + 1)
            else:
                real = _child_path(real, part)
            node = child
        return node, real

    def _walk_cached(self, apath: str, path: str, follow_last: bool) -> tuple[Node, str]:
        """The last step of ``_walk`` from a remembered parent directory; errors come from the full walk."""
        assert self._dirs is not None
        head, name = apath.rsplit("/", 1)
        head = head or "/"
        found = self._dirs.get(head)
        if found is None:
            try:
                found = self._walk(head, "/", True, 1)
            except FsError:
                return self._walk(apath, "/", follow_last, 1)
            self._dirs[head] = found
        parent, real = found
        child = parent.child(name) if isinstance(parent, Dir) else None
        if child is None:
            return self._walk(apath, "/", follow_last, 1)  # the uncached walk raises the right error
        if isinstance(child, Symlink) and follow_last:
            target = child.target if child.target.startswith("/") else posixpath.join(real, child.target)
            return self._walk(target, "/", True, 1)
        return child, _child_path(real, name)

    def resolve(self, path: str, cwd: str = "/", *, follow: bool = True) -> Node:
        return self._walk(path, cwd, follow)[0]

    def realpath(self, path: str, cwd: str = "/") -> str:
        return self._walk(path, cwd, True)[1]

    def lookup(self, path: str, cwd: str = "/", *, follow: bool = True) -> Node | None:
        try:
            return self.resolve(path, cwd, follow=follow)
        except FsError:
            return None

    def exists(self, path: str, cwd: str = "/") -> bool:
        return self.lookup(path, cwd) is not None

    def _parent(self, path: str, cwd: str, cred: Cred, *, check: bool = True) -> tuple[Dir, str, str]:
        apath = self.abspath(path, cwd)
        head, name = posixpath.split(apath)
        if not name:
            raise FsError(errno.EEXIST, path)
        parent = self.resolve(head or "/")
        if not isinstance(parent, Dir):
            raise FsError(errno.ENOTDIR, path)
        if check and not parent.allows(cred, 2):
            raise FsError(errno.EACCES, path)
        return parent, name, apath

    # -- reading -----------------------------------------------------------------------------------------
    def read_bytes(self, path: str, cred: Cred = ROOT, cwd: str = "/") -> bytes:
        node = self.resolve(path, cwd)
        if isinstance(node, Dir):
            raise FsError(errno.EISDIR, path)
        if not node.allows(cred, 4):
            raise FsError(errno.EACCES, path)
        assert isinstance(node, File)
        try:
            return node.read()
        except FsError as exc:
            raise FsError(exc.errno or errno.EIO, path) from None

    def read_text(self, path: str, cred: Cred = ROOT, cwd: str = "/") -> str:
        return self.read_bytes(path, cred, cwd).decode(errors="replace")

    def listdir(self, path: str, cred: Cred = ROOT, cwd: str = "/") -> list[str]:
        node = self.resolve(path, cwd)
        if not isinstance(node, Dir):
            raise FsError(errno.ENOTDIR, path)
        if not node.allows(cred, 4):
            raise FsError(errno.EACCES, path)
        return sorted(node.children())

    # -- writing -----------------------------------------------------------------------------------------
    def write_bytes(
        self,
        path: str,
        data: bytes,
        cred: Cred = ROOT,
        cwd: str = "/",
        *,
        append: bool = False,
        mode: int = 0o644,
    ) -> File:
        node = self.lookup(path, cwd)
        if node is None:
            parent, name, _ = self._parent(path, cwd, cred)
            new = File(data, mode, cred.uid, cred.gid)
            parent.add(name, new, path)
            return new
        if isinstance(node, Dir):
            raise FsError(errno.EISDIR, path)
        if not node.allows(cred, 2):
            raise FsError(errno.EACCES, path)
        assert isinstance(node, File)
        try:
            node.write(data, append=append, path=path)
        except FsError as exc:
            raise FsError(exc.errno or errno.EIO, path) from None
        return node

    def install(self, path: str, data: bytes | str, mode: int = 0o644, uid: int = 0, gid: int = 0) -> File:
        """Create or replace a file as the system would (packages, boot), making parent directories."""
        raw = data.encode() if isinstance(data, str) else data
        self.mkdir(posixpath.dirname(self.abspath(path)), ROOT, parents=True)
        parent, name, _ = self._parent(path, "/", ROOT, check=False)
        node = File(raw, mode, uid, gid)
        parent.add(name, node)
        return node

    def mkdir(self, path: str, cred: Cred = ROOT, cwd: str = "/", *, parents: bool = False, mode: int = 0o755) -> None:
        apath = self.abspath(path, cwd)
        existing = self.lookup(apath)
        if existing is not None:
            if parents and isinstance(existing, Dir):
                return
            raise FsError(errno.EEXIST, path)
        if parents:
            head = posixpath.dirname(apath)
            if head != apath:
                self.mkdir(head, cred, parents=True, mode=0o755)
        parent, name, _ = self._parent(apath, "/", cred)
        parent.add(name, Dir(mode, cred.uid, cred.gid), path)

    def symlink(self, target: str, path: str, cred: Cred = ROOT, cwd: str = "/") -> None:
        if self.lookup(path, cwd, follow=False) is not None:
            raise FsError(errno.EEXIST, path)
        parent, name, _ = self._parent(path, cwd, cred)
        parent.add(name, Symlink(target, cred.uid, cred.gid), path)

    def remove(self, path: str, cred: Cred = ROOT, cwd: str = "/", *, recursive: bool = False) -> None:
        node = self.resolve(path, cwd, follow=False)
        parent, name, _ = self._parent(path, cwd, cred)
        if parent.mode & 0o1000 and not cred.root and cred.uid not in (node.uid, parent.uid):
            raise FsError(errno.EPERM, path)
        if isinstance(node, Dir) and not isinstance(node, DynDir):
            if not recursive:
                raise FsError(errno.EISDIR, path)
        parent.remove(name, path)

    def rmdir(self, path: str, cred: Cred = ROOT, cwd: str = "/") -> None:
        node = self.resolve(path, cwd, follow=False)
        if not isinstance(node, Dir):
            raise FsError(errno.ENOTDIR, path)
        parent, name, _ = self._parent(path, cwd, cred)
        if node.children() and not (isinstance(parent, DynDir) and parent.remover):
            raise FsError(errno.ENOTEMPTY, path)
        parent.remove(name, path)

    def rename(self, old: str, new: str, cred: Cred = ROOT, cwd: str = "/") -> None:
        node = self.resolve(old, cwd, follow=False)
        src_parent, src_name, _ = self._parent(old, cwd, cred)
        target = self.lookup(new, cwd)
        if isinstance(target, Dir):
            new = posixpath.join(self.abspath(new, cwd), src_name)
        dst_parent, dst_name, _ = self._parent(new, cwd, cred)
        src_parent.remove(src_name, old)
        dst_parent.add(dst_name, node, new)

    # -- globbing ----------------------------------------------------------------------------------------
    def glob(self, pattern: str, cwd: str = "/") -> list[str]:
        """Expand a shell glob; returns [] when nothing matches (the caller keeps the word then)."""
        with self.walk_cache():
            return self._glob(pattern, cwd)

    def _glob(self, pattern: str, cwd: str) -> list[str]:
        absolute = pattern.startswith("/")
        parts = [p for p in pattern.split("/") if p]
        bases = ["/"] if absolute else [""]
        for i, part in enumerate(parts):
            last = i == len(parts) - 1
            nxt: list[str] = []
            for base in bases:
                dir_path = base or cwd
                if not any(c in part for c in "*?["):
                    cand = posixpath.join(base, part) if base else part
                    if self.lookup(cand, cwd) is not None and (last or isinstance(self.lookup(cand, cwd), Dir)):
                        nxt.append(cand)
                    continue
                node = self.lookup(dir_path, cwd)
                if not isinstance(node, Dir):
                    continue
                for name in sorted(node.names()):
                    if name.startswith(".") and not part.startswith("."):
                        continue
                    if fnmatch.fnmatchcase(name, part):
                        cand = posixpath.join(base, name) if base else name
                        if last or isinstance(self.lookup(cand, cwd), Dir):
                            nxt.append(cand)
            bases = nxt
        return bases


__all__ = [
    "ROOT",
    "VFS",
    "Cred",
    "Dir",
    "DynDir",
    "DynFile",
    "File",
    "FsError",
    "Node",
    "Symlink",
    "_EPOCH",
    "invalidate",
]
