"""Text filters: grep, head, tail, wc, sort, uniq, cut, tr, and small subsets of sed and awk."""

from __future__ import annotations

import re

from wizard.lab.commands import command, getopts
from wizard.lab.streams import CommandFailed, Ctx
from wizard.lab.vfs import FsError


def bre_to_python(pattern: str) -> str:
    """POSIX basic regex to Python: in BRE, \\( \\) \\{ \\} \\| \\+ \\? are the operators."""
    out, i = [], 0
    while i < len(pattern):
        c = pattern[i]
        if c == "\\" and i + 1 < len(pattern):
            n = pattern[i + 1]
            out.append(n if n in "(){}|+?" else "\\" + n)
            i += 2
            continue
        out.append("\\" + c if c in "(){}|+?" else c)
        i += 1
    return "".join(out)


async def _inputs(ctx: Ctx, files: list[str]) -> list[tuple[str, str | None, str | None]]:
    """(name, text or None, error) per input; "-" or no files = stdin."""
    if not files:
        return [("(standard input)", await ctx.stdin.read(), None)]
    # stdin is read (awaited) first, so that the files below are read in one go without yielding to other tasks
    stdin = await ctx.stdin.read() if "-" in files else ""
    out: list[tuple[str, str | None, str | None]] = []
    with ctx.fs.walk_cache():  # grep only reads: a big sysfs scan resolves each directory once, not per file
        for f in files:
            if f == "-":
                out.append(("(standard input)", stdin, None))
                stdin = ""  # like a pipe: a second "-" reads nothing more
                continue
            try:  # one path walk per file: reading a directory fails with EISDIR, as grep reports it
                out.append((f, ctx.read_text(f), None))
            except FsError as exc:
                out.append((f, None, exc.reason))
    return out


def _lines(text: str) -> list[str]:
    return text.split("\n")[:-1] if text.endswith("\n") else text.split("\n") if text else []


@command("grep")
async def grep(ctx: Ctx) -> int:
    opts, rest = getopts(ctx, "sHhqEFivconlwxe:rR", ["no-messages", "quiet", "silent", "regexp="])
    patterns = [v for k, v in _pairs(ctx.args) if k in ("-e", "--regexp")] or ([rest.pop(0)] if rest else [])
    if not patterns:
        raise CommandFailed("Usage: grep [OPTION]... PATTERNS [FILE]...\nTry 'grep --help' for more information.", 2)
    flags = re.IGNORECASE if "i" in opts else 0
    pats = []
    for p in patterns:
        for piece in p.split("\n"):
            src = re.escape(piece) if "F" in opts else piece if "E" in opts else bre_to_python(piece)
            if "w" in opts:
                src = rf"\b(?:{src})\b"
            if "x" in opts:
                src = rf"^(?:{src})$"
            try:
                pats.append(re.compile(src, flags))
            except re.error:
                raise CommandFailed("grep: Unmatched ( or \\(", 2) from None
    quiet = bool({"q", "quiet", "silent"} & set(opts))
    silent = "s" in opts or "no-messages" in opts
    with_name = "H" in opts or (len(rest) > 1 and "h" not in opts)
    matched, errors = False, False
    inputs = await _inputs(ctx, rest)
    # stdout to a pipe is block-buffered in grep (stdio): one write, not one SSH packet per matching line
    buffered: list[str] = []
    emit = buffered.append
    try:
        for name, text, error in inputs:
            if text is None:
                errors = True
                if not silent:
                    ctx.eprint(f"grep: {name}: {error}")
                continue
            count = 0
            for n, line in enumerate(_lines(text), 1):
                hit = any(p.search(line) for p in pats)
                if hit == ("v" in opts):
                    continue
                count += 1
                matched = True
                if quiet:
                    return 0
                if "l" in opts:
                    break
                if "c" in opts:
                    continue
                prefix = (f"{name}:" if with_name else "") + (f"{n}:" if "n" in opts else "")
                if "o" in opts:
                    for p in pats:
                        for m in p.finditer(line):
                            emit(prefix + m.group(0))
                else:
                    emit(prefix + line)
            if "l" in opts and count:
                emit(name)
            elif "c" in opts:
                emit((f"{name}:" if with_name else "") + str(count))
    finally:
        if buffered:
            ctx.out.write("\n".join(buffered) + "\n")
    if errors:
        return 2  # GNU grep: an error makes the status 2 even when lines matched (unless -q matched)
    return 0 if matched else 1


def _pairs(args: list[str]) -> list[tuple[str, str]]:
    out = []
    for i, a in enumerate(args):
        if a in ("-e", "--regexp") and i + 1 < len(args):
            out.append((a, args[i + 1]))
        elif a.startswith("--regexp="):
            out.append(("--regexp", a.split("=", 1)[1]))
    return out


def _count_arg(ctx: Ctx, default: int) -> tuple[int, list[str]]:
    args = list(ctx.args)
    n = default
    rest = []
    i = 0
    while i < len(args):
        a = args[i]
        if a == "-n" and i + 1 < len(args):
            n = int(args[i + 1].lstrip("+-") or default)
            i += 2
            continue
        if re.fullmatch(r"-n?\d+", a):
            n = int(a.lstrip("-n"))
        elif a.startswith("-n"):
            n = int(a[2:])
        else:
            rest.append(a)
        i += 1
    return n, rest


@command("head", "tail")
async def head_tail(ctx: Ctx) -> int:
    n, files = _count_arg(ctx, 10)
    for _, text, error in await _inputs(ctx, files):
        if text is None:
            ctx.eprint(f"{ctx.name}: cannot open '{files[0] if files else ''}' for reading: {error}")
            return 1
        lines = _lines(text)
        chosen = lines[:n] if ctx.name == "head" else lines[-n:] if n else []
        for line in chosen:
            ctx.print(line)
    return 0


@command("wc")
async def wc(ctx: Ctx) -> int:
    opts, files = getopts(ctx, "lwc")
    for name, text, _ in await _inputs(ctx, files):
        text = text or ""
        counts = {"l": text.count("\n"), "w": len(text.split()), "c": len(text.encode())}
        keys = [k for k in "lwc" if k in opts] or ["l", "w", "c"]
        vals = [str(counts[k]) for k in keys]
        ctx.print(" ".join(vals) + (f" {name}" if files else ""))
    return 0


@command("sort")
async def sort(ctx: Ctx) -> int:
    opts, files = getopts(ctx, "unrVk:t:")
    lines = [line for _, text, _ in await _inputs(ctx, files) for line in _lines(text or "")]

    def key(line: str) -> object:
        if "n" in opts:
            m = re.match(r"\s*(-?\d+(\.\d+)?)", line)
            return float(m.group(1)) if m else 0.0
        return line

    lines.sort(key=key, reverse="r" in opts)
    if "u" in opts:
        lines = list(dict.fromkeys(lines))
    for line in lines:
        ctx.print(line)
    return 0


@command("uniq")
async def uniq(ctx: Ctx) -> int:
    opts, files = getopts(ctx, "cd")
    prev, count = None, 0
    rows: list[tuple[int, str]] = []
    for _, text, _ in await _inputs(ctx, files):
        for line in _lines(text or ""):
            if line == prev:
                count += 1
                continue
            if prev is not None:
                rows.append((count, prev))
            prev, count = line, 1
    if prev is not None:
        rows.append((count, prev))
    for c, line in rows:
        if "d" in opts and c < 2:
            continue
        ctx.print(f"{c:>7} {line}" if "c" in opts else line)
    return 0


@command("cut")
async def cut(ctx: Ctx) -> int:
    opts, files = getopts(ctx, "d:f:c:s")
    delim = opts.get("d", "\t")
    spec = opts.get("f") or opts.get("c")
    if not spec:
        raise CommandFailed("cut: you must specify a list of bytes, characters, or fields")
    idx: list[int] = []
    for part in spec.split(","):
        a, dash, b = part.partition("-")
        lo = int(a) if a else 1
        hi = int(b) if b else (lo if not dash else 10_000)
        idx.extend(range(lo, hi + 1))
    for _, text, _ in await _inputs(ctx, files):
        for line in _lines(text or ""):
            if "c" in opts:
                ctx.print("".join(line[i - 1] for i in idx if i - 1 < len(line)))
                continue
            if delim not in line:
                if "s" not in opts:
                    ctx.print(line)
                continue
            fields = line.split(delim)
            ctx.print(delim.join(fields[i - 1] for i in idx if i - 1 < len(fields)))
    return 0


def _tr_set(spec: str) -> str:
    classes = {
        "[:upper:]": "ABCDEFGHIJKLMNOPQRSTUVWXYZ",
        "[:lower:]": "abcdefghijklmnopqrstuvwxyz",
        "[:digit:]": "0123456789",
        "[:space:]": " \t\n\r\v\f",
    }
    for k, v in classes.items():
        spec = spec.replace(k, v)
    spec = spec.replace("\\n", "\n").replace("\\t", "\t")
    out, i = [], 0
    while i < len(spec):
        if i + 2 < len(spec) and spec[i + 1] == "-":
            out.extend(chr(c) for c in range(ord(spec[i]), ord(spec[i + 2]) + 1))
            i += 3
        else:
            out.append(spec[i])
            i += 1
    return "".join(out)


@command("tr")
async def tr(ctx: Ctx) -> int:
    args = list(ctx.args)
    delete = squeeze = False
    while args and args[0].startswith("-") and len(args[0]) > 1:
        delete |= "d" in args[0]
        squeeze |= "s" in args[0]
        args.pop(0)
    text = await ctx.stdin.read()
    s1 = _tr_set(args[0]) if args else ""
    if delete:
        text = "".join(c for c in text if c not in s1)
    elif len(args) > 1:
        s2 = _tr_set(args[1])
        s2 = s2 + s2[-1:] * (len(s1) - len(s2))
        text = text.translate(str.maketrans(s1, s2[: len(s1)]))
    if squeeze:
        target = _tr_set(args[-1]) if args else ""
        text = re.sub("([" + re.escape(target) + "])\\1+", r"\1", text)
    ctx.out.write(text)
    return 0
