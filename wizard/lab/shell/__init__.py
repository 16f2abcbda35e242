"""A small, honest POSIX/bash-like shell that runs command lines and scripts against a simulated host."""

from __future__ import annotations

from wizard.lab.shell.interp import IO, MARKER, Shell, ShellExit
from wizard.lab.shell.lexer import ShellSyntaxError
from wizard.lab.shell.parser import parse

__all__ = ["IO", "MARKER", "Shell", "ShellExit", "ShellSyntaxError", "parse"]
