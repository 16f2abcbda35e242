"""coreutils-style file commands over the virtual filesystem (cat, ls, cp, install, stat, tee, ...)."""

from __future__ import annotations

import posixpath
import time

from wizard.lab.commands import command, getopts
from wizard.lab.commands.fileinfo import _uid, _user, mode_string
from wizard.lab.streams import CommandFailed, Ctx
from wizard.lab.vfs import Dir, FsError, Node, Symlink


@command("cat")
async def cat(ctx: Ctx) -> int:
    status = 0
    args = list(ctx.args)
    if "--" in args:
        cut = args.index("--")
        files = [a for a in args[:cut] if not a.startswith("-") or a == "-"] + args[cut + 1 :]
    else:
        files = [a for a in args if not a.startswith("-") or a == "-"]
    for path in files or ["-"]:
        if path == "-":
            ctx.out.write(await ctx.stdin.read())
            continue
        try:
            ctx.out.write(ctx.read_text(path))
        except FsError as exc:
            ctx.eprint(f"cat: {path}: {exc.reason}")
            status = 1
    return status


@command("ls")
async def ls(ctx: Ctx) -> int:
    opts, paths = getopts(ctx, "laA1dhRtr", ["all", "color="])
    long_, show_all, dir_only = "l" in opts, "a" in opts or "A" in opts, "d" in opts
    paths = paths or ["."]
    status = 0
    files, dirs = [], []
    for p in paths:
        node = ctx.fs.lookup(p, ctx.cwd, follow=not long_ or not dir_only)
        if node is None:
            ctx.eprint(f"ls: cannot access '{p}': No such file or directory")
            status = 2
        elif isinstance(node, Dir) and not dir_only:
            dirs.append(p)
        else:
            files.append((p, node))
    for p, node in files:
        ctx.print(_ls_line(ctx, p, node) if long_ else p)
    for i, p in enumerate(dirs):
        if len(paths) > 1:
            ctx.print(("\n" if i or files else "") + f"{p}:")
        try:
            names = ctx.fs.listdir(p, ctx.cred, ctx.cwd)
        except FsError as exc:
            ctx.eprint(f"ls: cannot open directory '{p}': {exc.reason}")
            status = 2
            continue
        if "a" in opts:
            names = [".", ".."] + names
        elif not show_all:
            names = [n for n in names if not n.startswith(".")]
        if long_:
            ctx.print(f"total {4 * len(names)}")
            for n in names:
                node = ctx.fs.lookup(posixpath.join(p, n), ctx.cwd, follow=False)
                if node is not None:
                    ctx.print(_ls_line(ctx, n, node))
        else:
            for n in names:
                ctx.print(n)
    return status


def _ls_line(ctx: Ctx, name: str, node: Node) -> str:
    stamp = time.strftime("%b %d %H:%M", time.gmtime(node.mtime))
    nlink = 2 if node.kind == "dir" else 1
    line = f"{mode_string(node)} {nlink} {_user(ctx, node.uid)} {_user(ctx, node.gid)} {node.size:>5} {stamp} {name}"
    if isinstance(node, Symlink):
        line += f" -> {node.target}"
    return line


@command("mkdir")
async def mkdir(ctx: Ctx) -> int:
    opts, paths = getopts(ctx, "pm:v", ["parents", "mode="])
    mode = int(opts.get("m") or opts.get("mode") or "755", 8)
    status = 0
    for p in paths:
        try:
            ctx.fs.mkdir(p, ctx.cred, ctx.cwd, parents="p" in opts or "parents" in opts, mode=mode)
        except FsError as exc:
            ctx.eprint(f"mkdir: cannot create directory '{p}': {exc.reason}")
            status = 1
    return status


@command("rmdir")
async def rmdir(ctx: Ctx) -> int:
    status = 0
    for p in ctx.args:
        try:
            ctx.fs.rmdir(p, ctx.cred, ctx.cwd)
        except FsError as exc:
            ctx.eprint(f"rmdir: failed to remove '{p}': {exc.reason}")
            status = 1
    return status


@command("rm")
async def rm(ctx: Ctx) -> int:
    opts, paths = getopts(ctx, "rRfv", ["force", "recursive"])
    force = "f" in opts or "force" in opts
    recursive = bool({"r", "R", "recursive"} & set(opts))
    status = 0
    for p in paths:
        node = ctx.fs.lookup(p, ctx.cwd, follow=False)
        if node is None:
            if not force:
                ctx.eprint(f"rm: cannot remove '{p}': No such file or directory")
                status = 1
            continue
        if isinstance(node, Dir) and not recursive:
            ctx.eprint(f"rm: cannot remove '{p}': Is a directory")
            status = 1
            continue
        try:
            ctx.fs.remove(p, ctx.cred, ctx.cwd, recursive=True)
        except FsError as exc:
            ctx.eprint(f"rm: cannot remove '{p}': {exc.reason}")
            status = 1
    return status


def _copy_node(ctx: Ctx, src: str, dst: str, *, preserve: bool, recursive: bool, mode: int | None = None) -> None:
    node = ctx.fs.resolve(src, ctx.cwd)
    if isinstance(node, Dir):
        if not recursive:
            raise CommandFailed(f"cp: -r not specified; omitting directory '{src}'")
        if ctx.fs.lookup(dst, ctx.cwd) is None:
            ctx.fs.mkdir(dst, ctx.cred, ctx.cwd, mode=node.mode if preserve else 0o755)
        for name in ctx.fs.listdir(src, ctx.cred, ctx.cwd):
            _copy_node(ctx, f"{src}/{name}", f"{dst}/{name}", preserve=preserve, recursive=True)
        return
    data = ctx.fs.read_bytes(src, ctx.cred, ctx.cwd)
    new_mode = mode if mode is not None else (node.mode if preserve else node.mode & 0o755)
    existed = ctx.fs.lookup(dst, ctx.cwd) is not None
    written = ctx.fs.write_bytes(dst, data, ctx.cred, ctx.cwd, mode=new_mode)
    if not existed or preserve or mode is not None:
        written.mode = new_mode
    if preserve and ctx.root:
        written.uid, written.gid = node.uid, node.gid


def _target(ctx: Ctx, src: str, dst: str) -> str:
    if isinstance(ctx.fs.lookup(dst, ctx.cwd), Dir):
        return posixpath.join(dst, posixpath.basename(src.rstrip("/")))
    return dst


@command("cp")
async def cp(ctx: Ctx) -> int:
    opts, paths = getopts(ctx, "apRrfvL", ["archive", "preserve=", "recursive", "force"])
    if len(paths) < 2:
        raise CommandFailed("cp: missing destination file operand after '" + (paths[0] if paths else "") + "'")
    preserve = bool({"a", "p", "archive", "preserve"} & set(opts))
    recursive = bool({"a", "r", "R", "archive", "recursive"} & set(opts))
    *srcs, dst = paths
    status = 0
    for src in srcs:
        try:
            _copy_node(ctx, src, _target(ctx, src, dst), preserve=preserve, recursive=recursive)
        except FsError as exc:
            ctx.eprint(f"cp: cannot stat '{src}': {exc.reason}" if exc.path == src else f"cp: {exc.path}: {exc.reason}")
            status = 1
    return status


@command("mv")
async def mv(ctx: Ctx) -> int:
    _, paths = getopts(ctx, "fvn", ["force"])
    if len(paths) < 2:
        raise CommandFailed("mv: missing destination file operand")
    *srcs, dst = paths
    status = 0
    for src in srcs:
        try:
            target = _target(ctx, src, dst)
            if ctx.fs.lookup(target, ctx.cwd, follow=False) is not None:
                ctx.fs.remove(target, ctx.cred, ctx.cwd, recursive=True)
            ctx.fs.rename(src, target, ctx.cred, ctx.cwd)
        except FsError as exc:
            ctx.eprint(f"mv: cannot move '{src}' to '{dst}': {exc.reason}")
            status = 1
    return status


@command("install")
async def install(ctx: Ctx) -> int:
    opts, paths = getopts(ctx, "o:g:m:dDvCp", ["owner=", "group=", "mode="])
    mode = int(opts.get("m") or opts.get("mode") or "755", 8)
    owner, group = opts.get("o") or opts.get("owner"), opts.get("g") or opts.get("group")
    if (owner or group) and not ctx.root:
        raise CommandFailed(
            f"install: cannot change ownership of '{paths[-1] if paths else ''}': Operation not permitted"
        )
    uid = _uid(ctx, owner) if owner else None
    gid = _uid(ctx, group) if group else None
    if owner and uid is None:
        raise CommandFailed(f"install: invalid user '{owner}'")
    try:
        if "d" in opts:
            for p in paths:
                ctx.fs.mkdir(p, ctx.cred, ctx.cwd, parents=True, mode=mode)
                _own(ctx.fs.resolve(p, ctx.cwd), uid, gid, mode)
            return 0
        if len(paths) < 2:
            raise CommandFailed("install: missing destination file operand")
        *srcs, dst = paths
        if "D" in opts:
            ctx.fs.mkdir(posixpath.dirname(ctx.path(dst)), ctx.cred, parents=True)
        for src in srcs:
            target = _target(ctx, src, dst)
            data = ctx.fs.read_bytes(src, ctx.cred, ctx.cwd)
            node = ctx.fs.write_bytes(target, data, ctx.cred, ctx.cwd, mode=mode)
            _own(node, uid, gid, mode)
    except FsError as exc:
        raise CommandFailed(f"install: cannot create regular file '{exc.path}': {exc.reason}") from None
    return 0


def _own(node: Node, uid: int | None, gid: int | None, mode: int) -> None:
    node.mode = mode
    if uid is not None:
        node.uid = uid
    if gid is not None:
        node.gid = gid


@command("touch")
async def touch(ctx: Ctx) -> int:
    status = 0
    for p in [a for a in ctx.args if not a.startswith("-")]:
        node = ctx.fs.lookup(p, ctx.cwd)
        try:
            if node is None:
                ctx.fs.write_bytes(p, b"", ctx.cred, ctx.cwd)
            elif node.allows(ctx.cred, 2) or node.uid == ctx.cred.uid:
                node.mtime = time.time()
            else:
                raise FsError(13, p)
        except FsError as exc:
            ctx.eprint(f"touch: cannot touch '{p}': {exc.reason}")
            status = 1
    return status


@command("ln")
async def ln(ctx: Ctx) -> int:
    opts, paths = getopts(ctx, "sfnTv", ["symbolic", "force"])
    if len(paths) != 2:
        raise CommandFailed("ln: missing file operand")
    target, link = paths
    if isinstance(ctx.fs.lookup(link, ctx.cwd), Dir) and "n" not in opts:
        link = posixpath.join(link, posixpath.basename(target))
    try:
        if ctx.fs.lookup(link, ctx.cwd, follow=False) is not None:
            if "f" not in opts and "force" not in opts:
                raise CommandFailed(f"ln: failed to create symbolic link '{link}': File exists")
            ctx.fs.remove(link, ctx.cred, ctx.cwd)
        if "s" in opts or "symbolic" in opts:
            ctx.fs.symlink(target, link, ctx.cred, ctx.cwd)
        else:
            data = ctx.fs.read_bytes(target, ctx.cred, ctx.cwd)
            ctx.fs.write_bytes(link, data, ctx.cred, ctx.cwd)
    except FsError as exc:
        raise CommandFailed(f"ln: failed to create symbolic link '{link}': {exc.reason}") from None
    return 0


@command("tee")
async def tee(ctx: Ctx) -> int:
    opts, paths = getopts(ctx, "ai", ["append"])
    data = await ctx.stdin.read()
    ctx.out.write(data)
    status = 0
    for p in paths:
        try:
            ctx.fs.write_bytes(p, data.encode(), ctx.cred, ctx.cwd, append="a" in opts or "append" in opts)
        except FsError as exc:
            ctx.eprint(f"tee: {p}: {exc.reason}")
            status = 1
    return status
