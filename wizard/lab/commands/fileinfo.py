"""File metadata and path tools: chmod/chown/stat, checksums, mktemp, readlink, find, seq."""

from __future__ import annotations

import hashlib
import posixpath
import random
import string
import time

from wizard.lab.commands import command, getopts
from wizard.lab.streams import CommandFailed, Ctx
from wizard.lab.vfs import Dir, DynDir, FsError, Node, Symlink


def _user(ctx: Ctx, uid: int) -> str:
    return next((n for n, u in ctx.host.users.items() if u == uid), str(uid))


def _uid(ctx: Ctx, name: str) -> int | None:
    if name.isdigit():
        return int(name)
    return ctx.host.users.get(name)


def mode_string(node: Node) -> str:
    kind = {"dir": "d", "link": "l"}.get(node.kind, "-")
    bits = ""
    for shift in (6, 3, 0):
        part = (node.mode >> shift) & 7
        bits += ("r" if part & 4 else "-") + ("w" if part & 2 else "-") + ("x" if part & 1 else "-")
    if node.mode & 0o1000:
        bits = bits[:8] + ("t" if bits[8] == "x" else "T")
    return kind + bits


def parse_mode(spec: str, current: int, is_dir: bool = False) -> int:
    if spec and all(c in "01234567" for c in spec):
        return int(spec, 8)
    mode = current
    for clause in spec.split(","):
        who = ""
        i = 0
        while i < len(clause) and clause[i] in "ugoa":
            who += clause[i]
            i += 1
        who = who or "a"
        while i < len(clause):
            op = clause[i]
            i += 1
            perms = ""
            while i < len(clause) and clause[i] in "rwxXst":
                perms += clause[i]
                i += 1
            if op not in "+-=":
                raise ValueError(spec)
            bits = 0
            for w in who:
                shifts = {"u": [6], "g": [3], "o": [0], "a": [6, 3, 0]}[w]
                for s in shifts:
                    for p in perms:
                        if p == "r":
                            bits |= 4 << s
                        elif p == "w":
                            bits |= 2 << s
                        elif p == "x" or (p == "X" and (is_dir or current & 0o111)):
                            bits |= 1 << s
                if "t" in perms:
                    bits |= 0o1000
            if op == "+":
                mode |= bits
            elif op == "-":
                mode &= ~bits
            else:
                mask = sum(7 << s for w in who for s in {"u": [6], "g": [3], "o": [0], "a": [6, 3, 0]}[w])
                mode = (mode & ~mask) | bits
    return mode


@command("chmod")
async def chmod(ctx: Ctx) -> int:
    args = [a for a in ctx.args if a not in ("-R", "-v", "-f")]
    if len(args) < 2:
        raise CommandFailed("chmod: missing operand")
    spec, *paths = args
    status = 0
    for p in paths:
        node = ctx.fs.lookup(p, ctx.cwd)
        if node is None:
            ctx.eprint(f"chmod: cannot access '{p}': No such file or directory")
            status = 1
            continue
        if not ctx.root and node.uid != ctx.cred.uid:
            ctx.eprint(f"chmod: changing permissions of '{p}': Operation not permitted")
            status = 1
            continue
        try:
            node.mode = parse_mode(spec, node.mode, node.kind == "dir")
        except ValueError:
            raise CommandFailed(f"chmod: invalid mode: '{spec}'") from None
    return status


@command("chown")
async def chown(ctx: Ctx) -> int:
    args = [a for a in ctx.args if a not in ("-R", "-v", "-h")]
    if len(args) < 2:
        raise CommandFailed("chown: missing operand")
    spec, *paths = args
    user, _, group = spec.partition(":")
    uid = _uid(ctx, user) if user else None
    gid = _uid(ctx, group) if group else None
    if user and uid is None:
        raise CommandFailed(f"chown: invalid user: '{spec}'")
    status = 0
    for p in paths:
        node = ctx.fs.lookup(p, ctx.cwd)
        if node is None:
            ctx.eprint(f"chown: cannot access '{p}': No such file or directory")
            status = 1
        elif not ctx.root:
            ctx.eprint(f"chown: changing ownership of '{p}': Operation not permitted")
            status = 1
        else:
            node.uid = uid if uid is not None else node.uid
            node.gid = (
                gid if gid is not None else (uid if uid is not None and group == "" and ":" in spec else node.gid)
            )
    return status


@command("stat")
async def stat(ctx: Ctx) -> int:
    opts, paths = getopts(ctx, "c:L", ["format=", "printf="])
    fmt = opts.get("c") or opts.get("format") or opts.get("printf")
    status = 0
    for p in paths:
        node = ctx.fs.lookup(p, ctx.cwd, follow="L" in opts)
        if node is None:
            ctx.eprint(f"stat: cannot statx '{p}': No such file or directory")
            status = 1
            continue
        if fmt is None:
            ctx.print(f"  File: {p}\n  Size: {node.size}\t\tBlocks: 8          IO Block: 4096   {_ftype(node)}")
            ctx.print(
                f"Access: (0{node.mode & 0o7777:o}/{mode_string(node)})  Uid: ({node.uid:>5}/{_user(ctx, node.uid):>8})"
                f"   Gid: ({node.gid:>5}/{_user(ctx, node.gid):>8})"
            )
            continue
        ctx.out.write(_stat_format(ctx, fmt, p, node) + ("" if "printf" in opts else "\n"))
    return status


def _ftype(node: Node) -> str:
    return {"dir": "directory", "link": "symbolic link"}.get(
        node.kind, "regular file" if node.size else "regular empty file"
    )


def _stat_format(ctx: Ctx, fmt: str, path: str, node: Node) -> str:
    values = {
        "a": f"{node.mode & 0o7777:o}",
        "A": mode_string(node),
        "U": _user(ctx, node.uid),
        "G": _user(ctx, node.gid),
        "u": str(node.uid),
        "g": str(node.gid),
        "s": str(node.size),
        "n": path,
        "F": _ftype(node),
        "Y": str(int(node.mtime)),
        "y": time.strftime("%Y-%m-%d %H:%M:%S.000000000 +0000", time.gmtime(node.mtime)),
        "%": "%",
    }
    out, i = [], 0
    while i < len(fmt):
        if fmt[i] == "%" and i + 1 < len(fmt):
            out.append(values.get(fmt[i + 1], "?"))
            i += 2
        else:
            out.append(fmt[i])
            i += 1
    return "".join(out).replace("\\n", "\n")


@command("sha256sum", "md5sum")
async def checksum(ctx: Ctx) -> int:
    algo = hashlib.sha256 if ctx.name == "sha256sum" else hashlib.md5
    status = 0
    for p in [a for a in ctx.args if not a.startswith("-")] or ["-"]:
        try:
            data = (await ctx.stdin.read()).encode() if p == "-" else ctx.fs.read_bytes(p, ctx.cred, ctx.cwd)
        except FsError as exc:
            ctx.eprint(f"{ctx.name}: {p}: {exc.reason}")
            status = 1
            continue
        ctx.print(f"{algo(data).hexdigest()}  {p}")
    return status


@command("mktemp")
async def mktemp(ctx: Ctx) -> int:
    opts, rest = getopts(ctx, "dp:tuq", ["directory", "tmpdir=", "suffix="])
    template = rest[0] if rest else "tmp.XXXXXXXXXX"
    base = opts.get("p") or opts.get("tmpdir") or ("/tmp" if not rest or "t" in opts or "/" not in template else "")
    n = len(template) - len(template.rstrip("X"))
    if n < 3:
        raise CommandFailed(f"mktemp: too few X's in template '{template}'")
    rnd = "".join(random.choice(string.ascii_letters + string.digits) for _ in range(n))
    name = template[: len(template) - n] + rnd + opts.get("suffix", "")
    path = posixpath.join(base, name) if base else name
    try:
        if "d" in opts or "directory" in opts:
            ctx.fs.mkdir(path, ctx.cred, ctx.cwd, mode=0o700)
        else:
            ctx.fs.write_bytes(path, b"", ctx.cred, ctx.cwd, mode=0o600)
    except FsError as exc:
        raise CommandFailed(f"mktemp: failed to create file via template '{path}': {exc.reason}") from None
    ctx.print(ctx.path(path))
    return 0


@command("readlink", "realpath")
async def readlink(ctx: Ctx) -> int:
    opts, paths = getopts(ctx, "fenmqsz", ["canonicalize"])
    canon = ctx.name == "realpath" or bool({"f", "e", "m", "canonicalize"} & set(opts))
    status = 0
    for p in paths:
        if canon:
            try:
                ctx.print(ctx.fs.realpath(p, ctx.cwd))
            except FsError as exc:
                if "m" in opts or ("f" in opts and exc.errno == 2 and ctx.fs.lookup(posixpath.dirname(ctx.path(p)))):
                    ctx.print(ctx.path(p))
                else:
                    if ctx.name == "realpath":
                        ctx.eprint(f"realpath: {p}: {exc.reason}")
                    status = 1
            continue
        node = ctx.fs.lookup(p, ctx.cwd, follow=False)
        if isinstance(node, Symlink):
            ctx.print(node.target)
        else:
            status = 1
    return status


@command("basename")
async def basename(ctx: Ctx) -> int:
    if not ctx.args:
        raise CommandFailed("basename: missing operand")
    name = posixpath.basename(ctx.args[0].rstrip("/")) or "/"
    if len(ctx.args) > 1 and name.endswith(ctx.args[1]) and name != ctx.args[1]:
        name = name[: -len(ctx.args[1])]
    ctx.print(name)
    return 0


@command("dirname")
async def dirname(ctx: Ctx) -> int:
    for p in ctx.args:
        ctx.print(posixpath.dirname(p.rstrip("/")) or ".")
    return 0


@command("find")
async def find(ctx: Ctx) -> int:
    import fnmatch

    args = list(ctx.args)
    roots = []
    while args and not args[0].startswith("-"):
        roots.append(args.pop(0))
    roots = roots or ["."]
    maxdepth, name, ftype = 1 << 30, None, None
    while args:
        a = args.pop(0)
        if a == "-maxdepth":
            maxdepth = int(args.pop(0))
        elif a in ("-name", "-iname"):
            name = args.pop(0)
        elif a == "-type":
            ftype = args.pop(0)
        elif a == "-print":
            pass
    status = 0

    def walk(path: str, depth: int) -> None:
        node = ctx.fs.lookup(path, ctx.cwd, follow=depth == 0)
        if node is None:
            return
        kind = {"dir": "d", "link": "l"}.get(node.kind, "f")
        if (name is None or fnmatch.fnmatchcase(posixpath.basename(path), name)) and (ftype in (None, kind)):
            ctx.print(path)
        if isinstance(node, Dir) and not isinstance(node, DynDir) and depth < maxdepth:
            for child in sorted(node.children()):
                walk(posixpath.join(path, child), depth + 1)

    for r in roots:
        if ctx.fs.lookup(r, ctx.cwd) is None:
            ctx.eprint(f"find: '{r}': No such file or directory")
            status = 1
            continue
        walk(r, 0)
    return status


@command("seq")
async def seq(ctx: Ctx) -> int:
    nums = [int(a) for a in ctx.args if a.lstrip("-").isdigit()]
    first, inc, last = (
        (1, 1, nums[0]) if len(nums) == 1 else (nums[0], 1, nums[1]) if len(nums) == 2 else tuple(nums[:3])
    )
    for i in range(first, last + (1 if inc > 0 else -1), inc):
        ctx.print(str(i))
    return 0
