"""Word expansion: parameters, command substitution, arithmetic, field splitting, globbing, quote removal."""

from __future__ import annotations

import ast
import fnmatch
import operator
import re
from typing import TYPE_CHECKING

from wizard.lab.shell.lexer import Arith, CmdSub, Lit, Param, ShellSyntaxError, Word, read_word

if TYPE_CHECKING:
    from wizard.lab.shell.interp import Shell


class ExpansionError(Exception):
    """An expansion failed (unbound variable, ${x:?msg}); the shell prints it and stops."""


GLOB_CHARS = set("*?[")


async def expand_words(shell: Shell, words: list[Word]) -> list[str]:
    out: list[str] = []
    for w in words:
        out.extend(await expand_word(shell, w))
    return out


async def expand_word(shell: Shell, word: Word, *, split: bool = True, glob: bool = True) -> list[str]:
    """Expand one word into zero or more fields."""
    # "$@" alone expands to the positional parameters as separate fields.
    if len(word.parts) == 1 and isinstance(word.parts[0], Param) and word.parts[0].name == "@":
        p = word.parts[0]
        if p.quoted:
            return list(shell.positional)
        return [f for a in shell.positional for f in a.split()]
    fields: list[list[tuple[str, bool]]] = [[]]  # each field: list of (text, quoted)
    keep = [False]  # a field survives if it has text or came from quotes ("" is one empty field)
    for part in word.parts:
        if isinstance(part, Lit):
            fields[-1].append((part.text, part.quoted))
            keep[-1] = keep[-1] or part.quoted or part.text != ""
            continue
        value = await _expand_part(shell, part)
        if part.quoted or not split:
            fields[-1].append((value, True))
            keep[-1] = True
            continue
        tokens = value.split()
        if not tokens:
            continue
        if value[0] in " \t\n" and keep[-1]:
            fields.append([])
            keep.append(False)
        for k, tok in enumerate(tokens):
            if k > 0:
                fields.append([])
                keep.append(False)
            fields[-1].append((tok, False))
            keep[-1] = True
        if value[-1] in " \t\n":
            fields.append([])
            keep.append(False)
    result: list[str] = []
    for f, k in zip(fields, keep, strict=True):
        if not k:
            continue
        text = "".join(t for t, _ in f)
        pattern_active = glob and any(not q and any(c in GLOB_CHARS for c in t) for t, q in f)
        if pattern_active:
            pattern = "".join(t if not q else _escape_glob(t) for t, q in f)
            matches = shell.host.fs.glob(pattern, shell.cwd)
            if matches:
                result.extend(matches)
                continue
        result.append(text)
    return result


def _escape_glob(text: str) -> str:
    return "".join(f"[{c}]" if c in GLOB_CHARS else c for c in text)


async def expand_str(shell: Shell, word: Word) -> str:
    """Expand without splitting or globbing (assignments, redirection targets, case words)."""
    parts = []
    for part in word.parts:
        parts.append(part.text if isinstance(part, Lit) else await _expand_part(shell, part))
    return "".join(parts)


async def expand_text(shell: Shell, text: str) -> str:
    """Expand ``$``-expressions inside free text (unquoted here-document bodies)."""
    out: list[str] = []
    i = 0
    from wizard.lab.shell.lexer import read_dollar

    while i < len(text):
        c = text[i]
        if c == "\\" and i + 1 < len(text) and text[i + 1] in "$`\\":
            out.append(text[i + 1])
            i += 2
        elif c == "$":
            part, i = read_dollar(text, i, True)
            out.append(part.text if isinstance(part, Lit) else await _expand_part(shell, part))
        else:
            out.append(c)
            i += 1
    return "".join(out)


async def _expand_part(shell: Shell, part: Param | CmdSub | Arith | Lit) -> str:
    if isinstance(part, Lit):
        return part.text
    if isinstance(part, CmdSub):
        return await shell.command_substitution(part.source)
    if isinstance(part, Arith):
        expr = await expand_text(shell, part.expr)
        return str(arith(shell, expr))
    return await _expand_param(shell, part)


async def _arg(shell: Shell, text: str) -> str:
    if not text:
        return ""
    word, _ = read_word(text, 0, stop_at_space=False)
    return await expand_str(shell, word)


async def _expand_param(shell: Shell, p: Param) -> str:
    value = shell.get_var(p.name)
    if p.length:
        return str(len(value or ""))
    op = p.op
    unset = value is None
    empty = unset or value == ""
    if op in (":-", "-"):
        if (op == ":-" and empty) or (op == "-" and unset):
            return await _arg(shell, p.arg)
        return value or ""
    if op in (":=", "="):
        if (op == ":=" and empty) or (op == "=" and unset):
            new = await _arg(shell, p.arg)
            shell.set_var(p.name, new)
            return new
        return value or ""
    if op in (":+", "+"):
        if (op == ":+" and not empty) or (op == "+" and not unset):
            return await _arg(shell, p.arg)
        return ""
    if op in (":?", "?"):
        if (op == ":?" and empty) or (op == "?" and unset):
            msg = await _arg(shell, p.arg) or "parameter null or not set"
            raise ExpansionError(f"{p.name}: {msg}")
        return value or ""
    if unset and shell.opts.get("nounset") and p.name not in ("@", "*", "#", "?", "-", "$", "!", "0"):
        raise ExpansionError(f"{p.name}: unbound variable")
    text = value or ""
    if op in ("%", "%%", "#", "##"):
        pat = await _arg(shell, p.arg)
        return _trim(text, pat, op)
    if op in ("/", "//"):
        pat, _, repl = p.arg.partition("/")
        pat, repl = await _arg(shell, pat), await _arg(shell, repl)
        regex = fnmatch.translate(pat).removesuffix("\\Z").removeprefix("(?s:").removesuffix(")")
        return re.sub(regex, repl.replace("\\", "\\\\"), text, count=0 if op == "//" else 1)
    return text


def _trim(text: str, pat: str, op: str) -> str:
    rng = range(len(text) + 1)
    if op in ("#", "##"):
        cands = [i for i in rng if fnmatch.fnmatchcase(text[:i], pat)]
        if not cands:
            return text
        return text[(max(cands) if op == "##" else min(cands)) :]
    cands = [i for i in rng if fnmatch.fnmatchcase(text[i:], pat)]
    if not cands:
        return text
    return text[: (min(cands) if op == "%%" else max(cands))]


_BINOPS = {
    ast.Add: operator.add,
    ast.Sub: operator.sub,
    ast.Mult: operator.mul,
    ast.FloorDiv: operator.floordiv,
    ast.Div: operator.floordiv,
    ast.Mod: operator.mod,
    ast.LShift: operator.lshift,
    ast.RShift: operator.rshift,
    ast.BitAnd: operator.and_,
    ast.BitOr: operator.or_,
    ast.BitXor: operator.xor,
}
_CMPOPS = {
    ast.Eq: operator.eq,
    ast.NotEq: operator.ne,
    ast.Lt: operator.lt,
    ast.LtE: operator.le,
    ast.Gt: operator.gt,
    ast.GtE: operator.ge,
}


def arith(shell: Shell, expr: str) -> int:
    """Evaluate shell integer arithmetic (the common operators; names are variables, unset = 0)."""
    py = expr.replace("&&", " and ").replace("||", " or ").replace("/", "//").replace("////", "//")
    py = re.sub(r"!(?!=)", " not ", py)
    try:
        tree = ast.parse(py.strip() or "0", mode="eval")
    except SyntaxError:
        raise ExpansionError(f"{expr.strip()}: syntax error in expression") from None

    def ev(node: ast.AST) -> int:
        if isinstance(node, ast.Expression):
            return ev(node.body)
        if isinstance(node, ast.Constant) and isinstance(node.value, int):
            return node.value
        if isinstance(node, ast.Name):
            raw = shell.get_var(node.id) or "0"
            return int(raw) if re.fullmatch(r"-?\d+", raw.strip()) else 0
        if isinstance(node, ast.BinOp) and type(node.op) in _BINOPS:
            return int(_BINOPS[type(node.op)](ev(node.left), ev(node.right)))
        if isinstance(node, ast.UnaryOp):
            val = ev(node.operand)
            if isinstance(node.op, ast.USub):
                return -val
            if isinstance(node.op, ast.Not):
                return int(not val)
            if isinstance(node.op, ast.Invert):
                return ~val
            return val
        if isinstance(node, ast.Compare):
            left = ev(node.left)
            for op, right in zip(node.ops, node.comparators, strict=True):
                r = ev(right)
                if not _CMPOPS[type(op)](left, r):
                    return 0
                left = r
            return 1
        if isinstance(node, ast.BoolOp):
            vals = [ev(v) for v in node.values]
            return int(all(vals) if isinstance(node.op, ast.And) else any(vals))
        if isinstance(node, ast.IfExp):
            return ev(node.body) if ev(node.test) else ev(node.orelse)
        raise ExpansionError(f"{expr.strip()}: syntax error in expression")

    try:
        return ev(tree)
    except ZeroDivisionError:
        raise ExpansionError(f"{expr.strip()}: division by 0") from None
    except KeyError:
        raise ExpansionError(f"{expr.strip()}: syntax error in expression") from None


__all__ = ["ExpansionError", "ShellSyntaxError", "expand_str", "expand_text", "expand_word", "expand_words"]
