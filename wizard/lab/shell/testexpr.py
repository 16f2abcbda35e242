"""test(1) / [ / [[ over the virtual filesystem."""

from __future__ import annotations

import re
from typing import TYPE_CHECKING

from wizard.lab.shell.builtins import builtin

if TYPE_CHECKING:
    from wizard.lab.shell.interp import IO, Shell


@builtin("test", "[", "[[")
async def _test(sh: Shell, argv: list[str], io: IO) -> int:
    args = argv[1:]
    closer = {"[": "]", "[[": "]]"}.get(argv[0])
    if closer:
        if not args or args[-1] != closer:
            sh.diag(f"{argv[0]}: missing `{closer}'", io)
            return 2
        args = args[:-1]
    try:
        return 0 if TestExpr(sh, args).evaluate() else 1
    except ValueError as exc:
        sh.diag(f"{argv[0]}: {exc}", io)
        return 2


class TestExpr:
    """test(1) expressions over the virtual filesystem."""

    UNARY = set("efdhLrwxsnzbcpSOG")
    BINARY = {"=", "==", "!=", "<", ">", "-eq", "-ne", "-lt", "-le", "-gt", "-ge", "-nt", "-ot", "-ef"}

    def __init__(self, sh: Shell, args: list[str]) -> None:
        self.sh, self.args, self.i = sh, args, 0

    def evaluate(self) -> bool:
        if not self.args:
            return False
        result = self._or()
        if self.i != len(self.args):
            raise ValueError(f"{self.args[self.i]}: unexpected argument")
        return result

    def _peek(self, k: int = 0) -> str | None:
        j = self.i + k
        return self.args[j] if j < len(self.args) else None

    def _or(self) -> bool:
        val = self._and()
        while self._peek() in ("-o", "||"):
            self.i += 1
            val = self._and() or val
        return val

    def _and(self) -> bool:
        val = self._not()
        while self._peek() in ("-a", "&&"):
            self.i += 1
            val = self._not() and val
        return val

    def _not(self) -> bool:
        if self._peek() == "!" and self._peek(1) is not None:
            self.i += 1
            return not self._not()
        return self._primary()

    def _primary(self) -> bool:
        tok = self._peek()
        if tok is None:
            raise ValueError("argument expected")
        if tok == "(" and ")" in self.args[self.i :]:
            self.i += 1
            val = self._or()
            self.i += 1
            return val
        if self._peek(1) in self.BINARY and self._peek(2) is not None:
            left, op, right = tok, self.args[self.i + 1], self.args[self.i + 2]
            self.i += 3
            return self._binary(left, op, right)
        if len(tok) == 2 and tok[0] == "-" and tok[1] in self.UNARY and self._peek(1) is not None:
            self.i += 2
            return self._unary(tok[1], self.args[self.i - 1])
        self.i += 1
        return tok != ""

    def _binary(self, a: str, op: str, b: str) -> bool:
        if op in ("=", "=="):
            return a == b
        if op == "!=":
            return a != b
        if op in ("<", ">"):
            return a < b if op == "<" else a > b
        if op in ("-nt", "-ot", "-ef"):
            return False
        try:
            x, y = int(a), int(b)
        except ValueError:
            raise ValueError(f"{a if not _isint(a) else b}: integer expression expected") from None
        return {"-eq": x == y, "-ne": x != y, "-lt": x < y, "-le": x <= y, "-gt": x > y, "-ge": x >= y}[op]

    def _unary(self, op: str, arg: str) -> bool:
        if op == "n":
            return arg != ""
        if op == "z":
            return arg == ""
        fs, cwd, cred = self.sh.host.fs, self.sh.cwd, self.sh.cred
        if op in "hL":
            node = fs.lookup(arg, cwd, follow=False)
            return node is not None and node.kind == "link"
        node = fs.lookup(arg, cwd)
        if node is None:
            return False
        if op == "e":
            return True
        if op == "f":
            return node.kind == "file"
        if op == "d":
            return node.kind == "dir"
        if op == "s":
            return node.size > 0
        if op in "rwx":
            return node.allows(cred, {"r": 4, "w": 2, "x": 1}[op])
        if op == "O":
            return node.uid == cred.uid
        if op == "G":
            return node.gid == cred.gid
        return False


def _isint(text: str) -> bool:
    return bool(re.fullmatch(r"-?\d+", text))
