"""Tokeniser for the simulated shell: POSIX quoting, $-expansions, operators, redirections and here-documents."""

from __future__ import annotations

import re
from dataclasses import dataclass, field

META = set(" \t\n;&|<>()")
# A run of characters that mean nothing to the shell: taken in one step, not one character at a time (the lab parses
# every probe batch and perftest command line anew, since each carries its own token, port or address).
_ORDINARY = re.compile(r"[^ \t\n;&|<>()\\'\"$`]+")
SPECIAL_PARAMS = set("?#@*$!-0123456789")
PARAM_OPS = (":-", ":=", ":+", ":?", "-", "=", "+", "?", "%%", "%", "##", "#", "//", "/")


class ShellSyntaxError(Exception):
    """Bad input; ``token`` is what bash would quote in "syntax error near unexpected token"."""

    def __init__(self, message: str, line: int = 1) -> None:
        super().__init__(message)
        self.line = line


@dataclass
class Lit:
    text: str
    quoted: bool = False


@dataclass
class Param:
    name: str
    op: str = ""
    arg: str = ""
    quoted: bool = False
    length: bool = False


@dataclass
class CmdSub:
    source: str
    quoted: bool = False


@dataclass
class Arith:
    expr: str
    quoted: bool = False


Part = Lit | Param | CmdSub | Arith


@dataclass
class Word:
    parts: list[Part]

    @property
    def literal(self) -> str | None:
        """The text when the word is plain unquoted literal text (reserved words, assignments)."""
        if len(self.parts) == 1 and isinstance(self.parts[0], Lit) and not self.parts[0].quoted:
            return self.parts[0].text
        return None

    def plain(self) -> str:
        """Quote-removed text when no expansion is involved (function names, heredoc delimiters)."""
        return "".join(p.text if isinstance(p, Lit) else "" for p in self.parts)


@dataclass
class HereDoc:
    delimiter: str
    quoted: bool
    strip_tabs: bool
    body: str = ""


@dataclass
class Token:
    kind: str  # WORD, OP, REDIR, NL, EOF
    value: str = ""
    word: Word | None = None
    fd: int | None = None
    heredoc: HereDoc | None = None
    line: int = 1
    parts: list[Part] = field(default_factory=list)


def _find_closing(src: str, i: int, open_ch: str, close_ch: str) -> int:
    """Index of the ``close_ch`` matching the opener just before ``i``, skipping quotes and nesting."""
    depth = 1
    while i < len(src):
        c = src[i]
        if c == "\\":
            i += 2
            continue
        if c == "'":
            j = src.find("'", i + 1)
            if j < 0:
                break
            i = j + 1
            continue
        if c == '"':
            i += 1
            while i < len(src) and src[i] != '"':
                i += 2 if src[i] == "\\" else 1
            i += 1
            continue
        if c == open_ch:
            depth += 1
        elif c == close_ch:
            depth -= 1
            if depth == 0:
                return i
        i += 1
    raise ShellSyntaxError(f"unexpected EOF while looking for matching `{close_ch}'")


def read_dollar(src: str, i: int, quoted: bool) -> tuple[Part, int]:
    """Parse an expansion starting at ``src[i] == '$'``; returns the part and the index after it."""
    nxt = src[i + 1] if i + 1 < len(src) else ""
    if src.startswith("$((", i):
        end = src.find("))", i + 3)
        if end < 0:
            raise ShellSyntaxError("unexpected EOF while looking for matching `))'")
        return Arith(src[i + 3 : end], quoted), end + 2
    if nxt == "(":
        end = _find_closing(src, i + 2, "(", ")")
        return CmdSub(src[i + 2 : end], quoted), end + 1
    if nxt == "{":
        end = _find_closing(src, i + 2, "{", "}")
        return _braced(src[i + 2 : end], quoted), end + 1
    if nxt and (nxt.isalpha() or nxt == "_"):
        j = i + 1
        while j < len(src) and (src[j].isalnum() or src[j] == "_"):
            j += 1
        return Param(src[i + 1 : j], quoted=quoted), j
    if nxt and nxt in SPECIAL_PARAMS:
        return Param(nxt, quoted=quoted), i + 2
    return Lit("$", quoted), i + 1


def _braced(body: str, quoted: bool) -> Param:
    if body.startswith("#") and len(body) > 1:
        return Param(body[1:], quoted=quoted, length=True)
    j = 0
    while j < len(body) and (body[j].isalnum() or body[j] == "_"):
        j += 1
    if j == 0 and body[:1] in SPECIAL_PARAMS:
        j = 1
    name, rest = body[:j], body[j:]
    if not name:
        raise ShellSyntaxError(f"${{{body}}}: bad substitution")
    if not rest:
        return Param(name, quoted=quoted)
    for op in PARAM_OPS:
        if rest.startswith(op):
            return Param(name, op, rest[len(op) :], quoted)
    raise ShellSyntaxError(f"${{{body}}}: bad substitution")


def read_word(src: str, i: int, *, stop_at_space: bool = True) -> tuple[Word, int]:
    """Read one word from ``src[i]``; with ``stop_at_space=False`` the whole string is one word."""
    parts: list[Part] = []
    buf: list[str] = []

    def flush(quoted: bool = False) -> None:
        if buf:
            parts.append(Lit("".join(buf), quoted))
            buf.clear()

    n = len(src)
    while i < n:
        c = src[i]
        if stop_at_space and c in META:
            break
        if c == "\\":
            if i + 1 < n and src[i + 1] == "\n":
                i += 2
                continue
            flush()
            parts.append(Lit(src[i + 1 : i + 2], True))
            i += 2
        elif c == "'":
            end = src.find("'", i + 1)
            if end < 0:
                raise ShellSyntaxError("unexpected EOF while looking for matching `''")
            flush()
            parts.append(Lit(src[i + 1 : end], True))
            i = end + 1
        elif c == '"':
            flush()
            i = _read_dquoted(src, i + 1, parts)
        elif c == "$":
            flush()
            part, i = read_dollar(src, i, False)
            parts.append(part)
        elif c == "`":
            end = src.find("`", i + 1)
            if end < 0:
                raise ShellSyntaxError("unexpected EOF while looking for matching ``'")
            flush()
            parts.append(CmdSub(src[i + 1 : end]))
            i = end + 1
        else:
            run = _ORDINARY.match(src, i)
            end = run.end() if run is not None else i + 1  # None: a META character inside a whole-string word
            buf.append(src[i:end])
            i = end
    flush()
    return Word(parts), i


def _read_dquoted(src: str, i: int, parts: list[Part]) -> int:
    buf: list[str] = []
    start = len(parts)
    while True:
        if i >= len(src):
            raise ShellSyntaxError("unexpected EOF while looking for matching `\"'")
        c = src[i]
        if c == '"':
            break
        if c == "\\" and i + 1 < len(src) and src[i + 1] in '$`"\\\n':
            if src[i + 1] != "\n":
                buf.append(src[i + 1])
            i += 2
        elif c == "$":
            if buf:
                parts.append(Lit("".join(buf), True))
                buf.clear()
            part, i = read_dollar(src, i, True)
            parts.append(part)
        elif c == "`":
            end = src.find("`", i + 1)
            if buf:
                parts.append(Lit("".join(buf), True))
                buf.clear()
            parts.append(CmdSub(src[i + 1 : end], True))
            i = end + 1
        else:
            buf.append(c)
            i += 1
    if buf or len(parts) == start:
        parts.append(Lit("".join(buf), True))
    return i + 1


_OPS = ("&&", "||", ";;", ";", "&", "|", "(", ")")
_REDIRS = ("<<<", "<<-", "&>>", "<<", ">>", ">&", "<&", ">|", "&>", "<", ">")
_OPERATOR_START = set("<>&;|()")


def tokenize(src: str) -> list[Token]:
    """Split ``src`` into tokens; here-document bodies are attached to their ``<<`` tokens."""
    toks: list[Token] = []
    pending: list[HereDoc] = []
    i, n, line = 0, len(src), 1
    while i < n:
        c = src[i]
        if c in " \t":
            i += 1
            continue
        if c == "\\" and i + 1 < n and src[i + 1] == "\n":
            i, line = i + 2, line + 1
            continue
        if c == "#":
            while i < n and src[i] != "\n":
                i += 1
            continue
        if c == "\n":
            toks.append(Token("NL", "\n", line=line))
            i, line = i + 1, line + 1
            for doc in pending:
                i, line = _read_heredoc(src, i, line, doc)
            pending.clear()
            continue
        if c not in _OPERATOR_START and not c.isdigit():  # a word: no redirection or operator can start here
            word, i2 = read_word(src, i)
            line += src.count("\n", i, i2)
            toks.append(Token("WORD", word=word, line=line))
            i = i2
            continue
        fd = None
        j = i
        while j < n and src[j].isdigit():
            j += 1
        if j > i and j < n and src[j] in "<>":
            fd, i = int(src[i:j]), j
        redir = next((r for r in _REDIRS if src.startswith(r, i)), None)
        if redir:
            tok = Token("REDIR", redir, fd=fd, line=line)
            i += len(redir)
            if redir in ("<<", "<<-"):
                while i < n and src[i] in " \t":
                    i += 1
                word, i = read_word(src, i)
                quoted = any(isinstance(p, Lit) and p.quoted for p in word.parts)
                tok.heredoc = HereDoc(word.plain(), quoted, redir == "<<-")
                pending.append(tok.heredoc)
            toks.append(tok)
            continue
        op = next((o for o in _OPS if src.startswith(o, i)), None)
        if op:
            toks.append(Token("OP", op, line=line))
            i += len(op)
            continue
        word, i2 = read_word(src, i)
        line += src.count("\n", i, i2)
        toks.append(Token("WORD", word=word, line=line))
        i = i2
    if pending:
        for doc in pending:
            i, line = _read_heredoc(src, i, line, doc)
    toks.append(Token("EOF", line=line))
    return toks


def _read_heredoc(src: str, i: int, line: int, doc: HereDoc) -> tuple[int, int]:
    body: list[str] = []
    while i < len(src):
        end = src.find("\n", i)
        text = src[i:] if end < 0 else src[i:end]
        i = len(src) if end < 0 else end + 1
        line += 1
        check = text.lstrip("\t") if doc.strip_tabs else text
        if check == doc.delimiter:
            break
        body.append(check + "\n")
    doc.body = "".join(body)
    return i, line
