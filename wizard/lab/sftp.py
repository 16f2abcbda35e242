"""SFTP subsystem backed by a simulated host's virtual filesystem."""

from __future__ import annotations

import errno
import posixpath
import stat as st
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

import asyncssh

from wizard.lab.vfs import Dir, FsError, Node, Symlink

if TYPE_CHECKING:
    from wizard.lab.host import SimHost


def _sftp_error(exc: FsError) -> asyncssh.SFTPError:
    if exc.errno == errno.ENOENT:
        return asyncssh.SFTPNoSuchFile(exc.reason)
    if exc.errno in (errno.EACCES, errno.EPERM):
        return asyncssh.SFTPPermissionDenied(exc.reason)
    return asyncssh.SFTPFailure(exc.reason)


def attrs_of(node: Node) -> asyncssh.SFTPAttrs:
    kind = {"dir": st.S_IFDIR, "link": st.S_IFLNK}.get(node.kind, st.S_IFREG)
    ftype = {"dir": asyncssh.FILEXFER_TYPE_DIRECTORY, "link": asyncssh.FILEXFER_TYPE_SYMLINK}.get(
        node.kind, asyncssh.FILEXFER_TYPE_REGULAR
    )
    t = int(node.mtime)
    return asyncssh.SFTPAttrs(
        type=ftype,
        size=node.size,
        uid=node.uid,
        gid=node.gid,
        permissions=kind | (node.mode & 0o7777),
        atime=t,
        mtime=t,
    )


@dataclass
class _Handle:
    path: str
    writable: bool
    append: bool = False
    data: bytearray = field(default_factory=bytearray)
    dirty: bool = False


class HostSFTPServer(asyncssh.SFTPServer):
    """Files land in the host's VFS owned by the login user (0644 unless chmod'ed); errors map to SFTP codes."""

    def __init__(self, chan: asyncssh.SSHServerChannel, host: SimHost) -> None:
        super().__init__(chan)
        self.host = host
        user = chan.get_extra_info("username") or "root"
        self.cred = host.cred_for(user)
        self.home = "/root" if user == "root" else f"/home/{user}"
        host.history.append("<sftp session>")

    def _path(self, path: bytes) -> str:
        text = path.decode(errors="replace") or "."
        return self.host.fs.abspath(text, self.home)

    def realpath(self, path: bytes) -> bytes:
        p = self._path(path)
        try:
            p = self.host.fs.realpath(p)
        except FsError:
            pass
        return p.encode()

    def open(self, path: bytes, pflags: int, attrs: asyncssh.SFTPAttrs) -> _Handle:
        p = self._path(path)
        fs = self.host.fs
        node = fs.lookup(p)
        try:
            if pflags & asyncssh.FXF_WRITE:
                if node is not None and pflags & asyncssh.FXF_EXCL:
                    raise asyncssh.SFTPFailure("File already exists")
                if isinstance(node, Dir):
                    raise asyncssh.SFTPFailure("Is a directory")
                if node is None:
                    if not pflags & asyncssh.FXF_CREAT:
                        raise asyncssh.SFTPNoSuchFile("No such file")
                    mode = (attrs.permissions & 0o7777) if attrs.permissions is not None else 0o644
                    fs.write_bytes(p, b"", self.cred, mode=mode)
                    handle = _Handle(p, True)
                else:
                    if not node.allows(self.cred, 2):
                        raise asyncssh.SFTPPermissionDenied("Permission denied")
                    keep = not pflags & asyncssh.FXF_TRUNC
                    existing = fs.read_bytes(p, self.cred) if keep and node.allows(self.cred, 4) else b""
                    handle = _Handle(p, True, bool(pflags & asyncssh.FXF_APPEND), bytearray(existing))
                    handle.dirty = not keep
                return handle
            return _Handle(p, False, data=bytearray(fs.read_bytes(p, self.cred)))
        except FsError as exc:
            raise _sftp_error(exc) from None

    def read(self, file_obj: _Handle, offset: int, size: int) -> bytes:
        return bytes(file_obj.data[offset : offset + size])

    def write(self, file_obj: _Handle, offset: int, data: bytes) -> int:
        if not file_obj.writable:
            raise asyncssh.SFTPPermissionDenied("File not open for writing")
        if file_obj.append:
            offset = len(file_obj.data)
        end = offset + len(data)
        if end > len(file_obj.data):
            file_obj.data.extend(b"\0" * (end - len(file_obj.data)))
        file_obj.data[offset:end] = data
        file_obj.dirty = True
        return len(data)

    def close(self, file_obj: _Handle) -> None:
        if file_obj.writable and file_obj.dirty:
            try:
                self.host.fs.write_bytes(file_obj.path, bytes(file_obj.data), self.cred)
            except FsError as exc:
                raise _sftp_error(exc) from None

    def _node(self, path: bytes, follow: bool = True) -> Node:
        try:
            return self.host.fs.resolve(self._path(path), follow=follow)
        except FsError as exc:
            raise _sftp_error(exc) from None

    def stat(self, path: bytes) -> asyncssh.SFTPAttrs:
        return attrs_of(self._node(path))

    def lstat(self, path: bytes) -> asyncssh.SFTPAttrs:
        return attrs_of(self._node(path, follow=False))

    def fstat(self, file_obj: _Handle) -> asyncssh.SFTPAttrs:
        attrs = attrs_of(self._node(file_obj.path.encode()))
        attrs.size = len(file_obj.data)
        return attrs

    def _setattrs(self, node: Node, attrs: asyncssh.SFTPAttrs) -> None:
        if attrs.permissions is not None:
            if not self.cred.root and node.uid != self.cred.uid:
                raise asyncssh.SFTPPermissionDenied("Operation not permitted")
            node.mode = attrs.permissions & 0o7777
        if (attrs.uid is not None and attrs.uid != node.uid) or (attrs.gid is not None and attrs.gid != node.gid):
            if not self.cred.root:
                raise asyncssh.SFTPPermissionDenied("Operation not permitted")
            node.uid = attrs.uid if attrs.uid is not None else node.uid
            node.gid = attrs.gid if attrs.gid is not None else node.gid
        if attrs.mtime is not None:
            node.mtime = float(attrs.mtime)

    def setstat(self, path: bytes, attrs: asyncssh.SFTPAttrs) -> None:
        self._setattrs(self._node(path), attrs)

    def fsetstat(self, file_obj: _Handle, attrs: asyncssh.SFTPAttrs) -> None:
        self._setattrs(self._node(file_obj.path.encode()), attrs)

    def remove(self, path: bytes) -> None:
        node = self._node(path, follow=False)
        if isinstance(node, Dir):
            raise asyncssh.SFTPFailure("Is a directory")
        try:
            self.host.fs.remove(self._path(path), self.cred)
        except FsError as exc:
            raise _sftp_error(exc) from None

    def rename(self, oldpath: bytes, newpath: bytes) -> None:
        if self.host.fs.lookup(self._path(newpath), follow=False) is not None:
            raise asyncssh.SFTPFailure("File already exists")
        self.posix_rename(oldpath, newpath)

    def posix_rename(self, oldpath: bytes, newpath: bytes) -> None:
        fs = self.host.fs
        try:
            if fs.lookup(self._path(newpath), follow=False) is not None:
                fs.remove(self._path(newpath), self.cred, recursive=True)
            fs.rename(self._path(oldpath), self._path(newpath), self.cred)
        except FsError as exc:
            raise _sftp_error(exc) from None

    def mkdir(self, path: bytes, attrs: asyncssh.SFTPAttrs) -> None:
        mode = (attrs.permissions & 0o7777) if attrs.permissions is not None else 0o755
        try:
            self.host.fs.mkdir(self._path(path), self.cred, mode=mode)
        except FsError as exc:
            raise _sftp_error(exc) from None

    def rmdir(self, path: bytes) -> None:
        try:
            self.host.fs.rmdir(self._path(path), self.cred)
        except FsError as exc:
            raise _sftp_error(exc) from None

    def readlink(self, path: bytes) -> bytes:
        node = self._node(path, follow=False)
        if not isinstance(node, Symlink):
            raise asyncssh.SFTPFailure("Invalid argument")
        return node.target.encode()

    def symlink(self, oldpath: bytes, newpath: bytes) -> None:
        try:
            self.host.fs.symlink(oldpath.decode(), self._path(newpath), self.cred)
        except FsError as exc:
            raise _sftp_error(exc) from None

    async def scandir(self, path: bytes) -> AsyncIterator[asyncssh.SFTPName]:
        p = self._path(path)
        try:
            names = self.host.fs.listdir(p, self.cred)
        except FsError as exc:
            raise _sftp_error(exc) from None
        for name in [".", ".."] + names:
            node = self.host.fs.lookup(posixpath.join(p, name), follow=False)
            if node is not None:
                yield asyncssh.SFTPName(name.encode(), b"", attrs_of(node))
