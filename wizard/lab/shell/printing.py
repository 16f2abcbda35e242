"""echo -e and printf(1) formatting shared by the builtins and the /usr/bin binaries."""

from __future__ import annotations

import re
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    pass


def echo_text(args: list[str]) -> str:
    newline, escapes = True, False
    while args and re.fullmatch(r"-[neE]+", args[0]):
        for ch in args[0][1:]:
            newline = newline and ch != "n"
            escapes = (escapes or ch == "e") and ch != "E"
        args = args[1:]
    text = " ".join(args)
    if escapes:
        text, stop = unescape(text, echo=True)
        if stop:
            return text
    return text + ("\n" if newline else "")


def unescape(text: str, *, echo: bool = False) -> tuple[str, bool]:
    """Backslash escapes of echo -e / printf %b; returns (text, stopped_at_\\c)."""
    out, i = [], 0
    table = {"n": "\n", "t": "\t", "r": "\r", "a": "\a", "b": "\b", "f": "\f", "v": "\v", "\\": "\\", "e": "\x1b"}
    while i < len(text):
        c = text[i]
        if c != "\\" or i + 1 >= len(text):
            out.append(c)
            i += 1
            continue
        n = text[i + 1]
        if n in table:
            out.append(table[n])
            i += 2
        elif n == "c":
            return "".join(out), True
        elif n == "0" or (n.isdigit() and not echo):
            m = re.match(r"0?([0-7]{1,3})", text[i + 1 :])
            out.append(chr(int(m.group(1), 8)) if m else "\0")
            i += 1 + (m.end() if m else 1)
        elif n == "x":
            m = re.match(r"[0-9a-fA-F]{1,2}", text[i + 2 :])
            out.append(chr(int(m.group(0), 16)) if m else "\\x")
            i += 2 + (m.end() if m else 0)
        else:
            out.append(c)
            i += 1
    return "".join(out), False


_SPEC = re.compile(r"%([-+ #0]*)(\d*)(?:\.(\d+))?([sdiuxXofcb%])")


def _conv(m: re.Match[str], arg: str) -> str:
    flags, width, prec, conv = m.groups()
    if conv == "b":
        return unescape(arg)[0]
    if conv in "diuxXo":
        try:
            val = int(arg, 0) if arg else 0
        except ValueError:
            val = 0
        return f"%{flags}{width}{conv if conv not in 'iu' else 'd'}" % val
    if conv == "f":
        return f"%{flags}{width}.{prec or 6}f" % float(arg or 0)
    if conv == "c":
        return arg[:1]
    return f"%{flags}{width}{'.' + prec if prec else ''}s" % arg


def printf_text(fmt: str, args: list[str]) -> str:
    """printf(1): the format is reused while arguments remain."""
    fmt_u, _ = unescape(fmt)
    out: list[str] = []
    cursor = [0]

    def repl(m: re.Match[str]) -> str:
        if m.group(4) == "%":
            return "%"
        arg = args[cursor[0]] if cursor[0] < len(args) else ""
        cursor[0] += 1
        return _conv(m, arg)

    while True:
        before = cursor[0]
        out.append(_SPEC.sub(repl, fmt_u))
        if cursor[0] == before or cursor[0] >= len(args):
            break
    return "".join(out)
