"""Small, honest subsets of sed (s///, p, d with addresses, -n, -i, -E) and awk (/re/ or NR==n, print fields)."""

from __future__ import annotations

import re

from wizard.lab.commands import command
from wizard.lab.commands.text import _inputs, _lines, bre_to_python
from wizard.lab.streams import CommandFailed, Ctx


@command("sed")
async def sed(ctx: Ctx) -> int:
    args = list(ctx.args)
    quiet = inplace = False
    extended = False
    scripts: list[str] = []
    files: list[str] = []
    while args:
        a = args.pop(0)
        if a in ("-n", "--quiet"):
            quiet = True
        elif a.startswith("-i"):
            inplace = True
        elif a in ("-E", "-r"):
            extended = True
        elif a == "-e":
            scripts.append(args.pop(0))
        elif not scripts and not a.startswith("-"):
            scripts.append(a)
        else:
            files.append(a)
    prog = [_sed_cmd(c, extended) for s in scripts for c in re.split(r"[;\n]", s) if c.strip()]
    inputs = await _inputs(ctx, files)
    for name, text, error in inputs:
        if text is None:
            raise CommandFailed(f"sed: can't read {name}: {error}", 2)
        out: list[str] = []
        lines = _lines(text)
        for n, line in enumerate(lines, 1):
            deleted = False
            for addr, op, arg in prog:
                if not _sed_match(addr, n, len(lines), line):
                    continue
                if op == "d":
                    deleted = True
                    break
                if op == "p":
                    out.append(line)
                elif op == "s":
                    regex, repl, count, printing = arg
                    new, k = regex.subn(repl, line, count=count)
                    line = new
                    if k and printing:
                        out.append(line)
            if not deleted and not quiet:
                out.append(line)
        result = "".join(x + "\n" for x in out)
        if inplace and files:
            ctx.fs.write_bytes(name, result.encode(), ctx.cred, ctx.cwd)
        else:
            ctx.out.write(result)
    return 0


def _sed_cmd(text: str, extended: bool) -> tuple[object, str, object]:
    text = text.strip()
    addr: object = None
    m = re.match(r"^(\d+|\$|/(?:[^/\\]|\\.)*/)", text)
    if m:
        raw = m.group(1)
        addr = re.compile(raw[1:-1] if extended else bre_to_python(raw[1:-1])) if raw.startswith("/") else raw
        text = text[m.end() :].strip()
    if text.startswith("s") and len(text) > 1:
        sep = text[1]
        parts = re.split(rf"(?<!\\){re.escape(sep)}", text[2:])
        if len(parts) < 3:
            raise CommandFailed(f"sed: -e expression #1, char {len(text)}: unterminated `s' command", 1)
        pat, repl, flags = parts[0], parts[1], parts[2]
        regex = re.compile(pat if extended else bre_to_python(pat), re.IGNORECASE if "I" in flags else 0)
        repl = re.sub(r"\\(\d)", r"\\\1", repl).replace("&", r"\g<0>")
        return addr, "s", (regex, repl, 0 if "g" in flags else 1, "p" in flags)
    if text in ("p", "d"):
        return addr, text, None
    raise CommandFailed(f"sed: -e expression #1, char 1: unknown command: `{text[:1]}'", 1)


def _sed_match(addr: object, n: int, total: int, line: str) -> bool:
    if addr is None:
        return True
    if isinstance(addr, re.Pattern):
        return bool(addr.search(line))
    return n == total if addr == "$" else n == int(str(addr))


@command("awk")
async def awk(ctx: Ctx) -> int:
    args = list(ctx.args)
    sep = None
    while args and args[0].startswith("-F"):
        a = args.pop(0)
        sep = a[2:] or args.pop(0)
    if not args:
        raise CommandFailed("usage: awk [-F value] [-v var=value] [--] 'program text' [file ...]", 2)
    prog, files = args[0], args[1:]
    m = re.fullmatch(
        r"\s*(?:/((?:[^/\\]|\\.)*)/|NR\s*==\s*(\d+)|(\$\d+\s*==\s*\"[^\"]*\"))?\s*(\{(.*)\})?\s*", prog, re.S
    )
    if not m:
        raise CommandFailed("awk: line 1: syntax error at source line 1 (simulated awk supports '/re/ {print ...}')", 2)
    regex = re.compile(m.group(1)) if m.group(1) else None
    nr = int(m.group(2)) if m.group(2) else None
    action = m.group(5) if m.group(4) else "print"
    count = 0
    for _, text, _ in await _inputs(ctx, files):
        for line in _lines(text or ""):
            count += 1
            fields = line.split(sep) if sep else line.split()
            if regex and not regex.search(line):
                continue
            if nr is not None and count != nr:
                continue
            for stmt in action.split(";"):
                stmt = stmt.strip()
                if stmt.startswith("print"):
                    ctx.print(_awk_print(stmt[5:].strip(), line, fields, count))
    return 0


def _awk_print(expr: str, line: str, fields: list[str], nr: int) -> str:
    if not expr:
        return line
    out = []
    for item in re.findall(r'"[^"]*"|\$\w+|NF|NR|,|[^\s,]+', expr):
        if item == ",":
            out.append(" ")
        elif item.startswith('"'):
            out.append(item[1:-1])
        elif item == "NF":
            out.append(str(len(fields)))
        elif item == "NR":
            out.append(str(nr))
        elif item.startswith("$"):
            k = len(fields) if item == "$NF" else int(item[1:]) if item[1:].isdigit() else 0
            out.append(line if k == 0 else fields[k - 1] if k <= len(fields) else "")
    return "".join(out)
