"""The simulated shell's syntax tree (what the parser builds and the interpreter runs)."""

from __future__ import annotations

from dataclasses import dataclass, field

from wizard.lab.shell.lexer import HereDoc, Word


@dataclass
class Redir:
    op: str
    fd: int | None
    target: Word | None
    heredoc: HereDoc | None = None


@dataclass
class Simple:
    assigns: list[tuple[str, Word, bool]]  # name, value, append (+=)
    words: list[Word]
    redirs: list[Redir]
    line: int = 1


@dataclass
class Pipeline:
    commands: list[Node]
    negate: bool = False


@dataclass
class AndOr:
    first: Node
    rest: list[tuple[str, Node]]


@dataclass
class Seq:
    items: list[tuple[Node, bool]]  # node, background


@dataclass
class If:
    clauses: list[tuple[Seq, Seq]]
    orelse: Seq | None
    redirs: list[Redir] = field(default_factory=list)


@dataclass
class For:
    var: str
    words: list[Word] | None
    body: Seq
    redirs: list[Redir] = field(default_factory=list)


@dataclass
class While:
    cond: Seq
    body: Seq
    until: bool = False
    redirs: list[Redir] = field(default_factory=list)


@dataclass
class Case:
    word: Word
    arms: list[tuple[list[Word], Seq]]
    redirs: list[Redir] = field(default_factory=list)


@dataclass
class Group:
    body: Seq
    subshell: bool = False
    redirs: list[Redir] = field(default_factory=list)


@dataclass
class FuncDef:
    name: str
    body: Node


Node = Simple | Pipeline | AndOr | Seq | If | For | While | Case | Group | FuncDef
