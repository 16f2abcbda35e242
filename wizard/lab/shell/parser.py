"""Recursive-descent parser turning tokens into a small shell AST."""

from __future__ import annotations

import functools
import re

from wizard.lab.shell.lexer import ShellSyntaxError, Token, Word, tokenize
from wizard.lab.shell.syntax import (
    AndOr,
    Case,
    For,
    FuncDef,
    Group,
    If,
    Node,
    Pipeline,
    Redir,
    Seq,
    Simple,
    While,
)

ASSIGN_RE = re.compile(r"^([A-Za-z_][A-Za-z0-9_]*)(\+?)=")
RESERVED_END = {"then", "elif", "else", "fi", "do", "done", "esac", "}"}


class Parser:
    def __init__(self, src: str) -> None:
        self.toks = tokenize(src)
        self.pos = 0

    # -- token helpers -----------------------------------------------------------------------------------
    @property
    def tok(self) -> Token:
        return self.toks[self.pos]

    def next(self) -> Token:
        tok = self.toks[self.pos]
        self.pos += 1
        return tok

    def at_word(self, *values: str) -> bool:
        return self.tok.kind == "WORD" and self.tok.word is not None and self.tok.word.literal in values

    def at_op(self, *values: str) -> bool:
        return self.tok.kind == "OP" and self.tok.value in values

    def error(self) -> ShellSyntaxError:
        tok = self.tok
        text = {"EOF": "end of file", "NL": "newline"}.get(tok.kind)
        if text is None:
            text = tok.value if tok.kind != "WORD" else (tok.word.plain() if tok.word else "")
            return ShellSyntaxError(f"syntax error near unexpected token `{text}'", tok.line)
        return ShellSyntaxError(f"syntax error: unexpected {text}", tok.line)

    def expect_word(self, value: str) -> None:
        if not self.at_word(value):
            raise self.error()
        self.next()

    def skip_newlines(self) -> None:
        while self.tok.kind == "NL":
            self.next()

    # -- grammar -----------------------------------------------------------------------------------------
    def parse(self) -> Seq:
        self.skip_newlines()
        seq = self.parse_list()
        if self.tok.kind != "EOF":
            raise self.error()
        return seq

    def parse_list(self) -> Seq:
        items: list[tuple[Node, bool]] = []
        self.skip_newlines()
        while self.tok.kind not in ("EOF",) and not self.at_op(")", ";;") and not self._at_end_word():
            node = self.parse_and_or()
            background = False
            if self.at_op("&"):
                self.next()
                background = True
            elif self.at_op(";"):
                self.next()
            elif self.tok.kind == "NL":
                pass
            elif self.tok.kind != "EOF" and not self.at_op(")", ";;") and not self._at_end_word():
                raise self.error()
            items.append((node, background))
            self.skip_newlines()
        return Seq(items)

    def _at_end_word(self) -> bool:
        return self.tok.kind == "WORD" and self.tok.word is not None and self.tok.word.literal in RESERVED_END

    def parse_and_or(self) -> Node:
        first = self.parse_pipeline()
        rest: list[tuple[str, Node]] = []
        while self.at_op("&&", "||"):
            op = self.next().value
            self.skip_newlines()
            rest.append((op, self.parse_pipeline()))
        return AndOr(first, rest) if rest else first

    def parse_pipeline(self) -> Node:
        negate = False
        if self.at_word("!"):
            self.next()
            negate = True
        cmds = [self.parse_command()]
        while self.at_op("|"):
            self.next()
            self.skip_newlines()
            cmds.append(self.parse_command())
        if len(cmds) == 1 and not negate:
            return cmds[0]
        return Pipeline(cmds, negate)

    def parse_command(self) -> Node:
        tok = self.tok
        if tok.kind == "WORD" and tok.word is not None:
            lit = tok.word.literal
            if lit == "if":
                return self._with_redirs(self.parse_if())
            if lit == "for":
                return self._with_redirs(self.parse_for())
            if lit in ("while", "until"):
                return self._with_redirs(self.parse_while())
            if lit == "case":
                return self._with_redirs(self.parse_case())
            if lit == "{":
                self.next()
                body = self.parse_list()
                self.expect_word("}")
                return self._with_redirs(Group(body))
            if lit == "function":
                self.next()
                name = self.next().word
                if self.at_op("("):
                    self.next()
                    self._expect_op(")")
                self.skip_newlines()
                return FuncDef(name.plain() if name else "", self.parse_command())
            if (
                lit
                and self.toks[self.pos + 1].kind == "OP"
                and self.toks[self.pos + 1].value == "("
                and self.toks[self.pos + 2].kind == "OP"
                and self.toks[self.pos + 2].value == ")"
            ):
                self.pos += 3
                self.skip_newlines()
                return FuncDef(lit, self.parse_command())
        if self.at_op("("):
            self.next()
            body = self.parse_list()
            self._expect_op(")")
            return self._with_redirs(Group(body, subshell=True))
        return self.parse_simple()

    def _expect_op(self, value: str) -> None:
        if not self.at_op(value):
            raise self.error()
        self.next()

    def _with_redirs(self, node: Node) -> Node:
        redirs = getattr(node, "redirs", None)
        while self.tok.kind == "REDIR" and redirs is not None:
            redirs.append(self.parse_redir())
        return node

    def parse_redir(self) -> Redir:
        tok = self.next()
        if tok.heredoc is not None:
            return Redir(tok.value, tok.fd, None, tok.heredoc)
        if self.tok.kind != "WORD":
            raise self.error()
        return Redir(tok.value, tok.fd, self.next().word)

    def parse_simple(self) -> Simple:
        line = self.tok.line
        assigns: list[tuple[str, Word, bool]] = []
        words: list[Word] = []
        redirs: list[Redir] = []
        while True:
            tok = self.tok
            if tok.kind == "REDIR":
                redirs.append(self.parse_redir())
            elif tok.kind == "WORD" and tok.word is not None:
                if not words and self._assignment(tok.word, assigns):
                    self.next()
                    continue
                if words or tok.word.literal not in RESERVED_END:
                    words.append(self.next().word)  # type: ignore[arg-type]
                else:
                    break
            else:
                break
        if not words and not assigns and not redirs:
            raise self.error()
        return Simple(assigns, words, redirs, line)

    @staticmethod
    def _assignment(word: Word, assigns: list[tuple[str, Word, bool]]) -> bool:
        first = word.parts[0] if word.parts else None
        if first is None or not hasattr(first, "text") or getattr(first, "quoted", True):
            return False
        m = ASSIGN_RE.match(first.text)  # type: ignore[union-attr]
        if not m:
            return False
        from wizard.lab.shell.lexer import Lit

        value_parts = list(word.parts[1:])
        rest = first.text[m.end() :]  # type: ignore[union-attr]
        if rest:
            value_parts.insert(0, Lit(rest))
        assigns.append((m.group(1), Word(value_parts), bool(m.group(2))))
        return True

    def parse_if(self) -> If:
        self.expect_word("if")
        clauses = []
        cond = self.parse_list()
        self.expect_word("then")
        body = self.parse_list()
        clauses.append((cond, body))
        orelse = None
        while True:
            if self.at_word("elif"):
                self.next()
                cond = self.parse_list()
                self.expect_word("then")
                clauses.append((cond, self.parse_list()))
            elif self.at_word("else"):
                self.next()
                orelse = self.parse_list()
            else:
                break
        self.expect_word("fi")
        return If(clauses, orelse)

    def parse_for(self) -> For:
        self.expect_word("for")
        name_tok = self.next()
        if name_tok.kind != "WORD" or name_tok.word is None:
            raise self.error()
        words: list[Word] | None = None
        self.skip_newlines()
        if self.at_word("in"):
            self.next()
            words = []
            while self.tok.kind == "WORD":
                words.append(self.next().word)  # type: ignore[arg-type]
        if self.at_op(";"):
            self.next()
        self.skip_newlines()
        self.expect_word("do")
        body = self.parse_list()
        self.expect_word("done")
        return For(name_tok.word.plain(), words, body)

    def parse_while(self) -> While:
        until = self.next().word.literal == "until"  # type: ignore[union-attr]
        cond = self.parse_list()
        self.expect_word("do")
        body = self.parse_list()
        self.expect_word("done")
        return While(cond, body, until)

    def parse_case(self) -> Case:
        self.expect_word("case")
        word = self.next().word
        self.skip_newlines()
        self.expect_word("in")
        self.skip_newlines()
        arms: list[tuple[list[Word], Seq]] = []
        while not self.at_word("esac"):
            if self.at_op("("):
                self.next()
            pats = [self.next().word]
            while self.at_op("|"):
                self.next()
                pats.append(self.next().word)
            self._expect_op(")")
            body = self.parse_list()
            arms.append((pats, body))  # type: ignore[arg-type]
            if self.at_op(";;"):
                self.next()
            self.skip_newlines()
            if self.tok.kind == "EOF":
                raise self.error()
        self.expect_word("esac")
        return Case(word, arms)  # type: ignore[arg-type]


def parse(src: str) -> Seq:
    """Parse a whole script or ``-c`` string. The tree is shared by every host that runs the same text, so nothing
    may change it once parsed (the interpreter only reads it)."""
    return _parse_cached(src)


@functools.lru_cache(maxsize=128)  # bounded by count: a probe batch's tree is a few hundred KB
def _parse_cached(src: str) -> Seq:
    # A fleet's probe batch is the same script on every host: parsed once, not 1,024 times (the lab's tokenizer
    # and parser were a third of its CPU while the wizard read a fleet's facts). A syntax error is not cached.
    return Parser(src).parse()


__all__ = [
    "AndOr",
    "Case",
    "For",
    "FuncDef",
    "Group",
    "If",
    "Node",
    "Parser",
    "Pipeline",
    "Redir",
    "Seq",
    "Simple",
    "While",
    "parse",
]
