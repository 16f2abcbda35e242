"""Many read-only commands in one remote exec: a generated sh script that prints each command's output between
delimiters with its exit status, split again in Python into one CommandResult per command.

Why: every exec is an SSH channel open and a round trip; a stage reads a host with 20 to 40 probes, so through a
bastion with 30 ms of round-trip time that is a second or more per host before any work happens. One exec per host
costs one round trip. Parsing stays in Python with the same pure parsers: the script only runs the commands.

stdout and stderr travel on separate SSH streams, so each stream gets its own delimiters: a line
``<token> <i>`` opens command i and ``<token> <i> <status>`` closes it on stdout, ``<token> <i> end`` on stderr.
The token is random per batch, so a command's output cannot forge a delimiter. It reaches the script as its first
argument (``sh -s -- <token>``), not in its text: the same probes make the same script on every host and in every
run, which the simulated lab's shell parses once for a whole fleet (a real sh reads it as it goes either way).
"""

from __future__ import annotations

import re
import secrets
import shlex
from collections.abc import Sequence
from dataclasses import dataclass

from wizard.executors.base import CommandResult, render_command


@dataclass(frozen=True, slots=True)
class Split:
    """One command's share of a batch's output."""

    exit_status: int | None  # None: the batch ended before this command finished
    stdout: str  # exactly as the command printed it
    stderr: str


def new_token() -> str:
    return "@@roce-wizard-" + secrets.token_hex(8)


def shell_argv(token: str) -> list[str]:
    """How the script is run: sh reads it from stdin, with the batch's token as its first argument."""
    return ["sh", "-s", "--", token]


def script(commands: Sequence[Sequence[str] | str], *, timeout_s: float | None = None) -> str:
    """The sh script that runs ``commands`` in order; each reads /dev/null, none can stop the others. It takes the
    batch's token as its first argument (``shell_argv``).

    Each command runs in a subshell so an ``exit`` or ``set -e`` inside it ends only itself. With ``timeout_s``
    each command is wrapped in coreutils ``timeout`` (a hung probe ends with status 124, the others still run).

    A stopped wizard ends the batch through the SSH "signal" request: sshd kill()s the session's process group as
    the login user. Under sudo that reaches only sudo, which relays the signal to its own child (this script) and
    no further, and the user may not signal root's processes: the probe running at that moment would be left behind
    (seen on OpenSSH 9.2 and sudo 1.9.13, tests/nslab/test_interrupt_real.py). So the script passes the signal on to
    its whole process group itself. A shell defers a trap while a foreground command runs, but ``wait`` returns at
    once for a trapped signal (POSIX sh, "Signals and Error Handling"): each command runs as a job that is waited for.
    """
    lines = ['T="$1"', "trap 'trap - TERM HUP; kill -TERM 0; exit 143' TERM HUP"]
    for i, argv in enumerate(commands):
        command = render_command(argv)
        if timeout_s is not None:
            command = f"timeout {timeout_s:g} sh -c {shlex.quote(command)}"
        lines += [
            f"printf '\\n%s %d\\n' \"$T\" {i}; printf '\\n%s %d\\n' \"$T\" {i} >&2",
            f"( {command} ) </dev/null & wait $!",
            f"printf '\\n%s %d %d\\n' \"$T\" {i} $?; printf '\\n%s %d end\\n' \"$T\" {i} >&2",
        ]
    return "\n".join(lines) + "\n"


def split(stdout: str, stderr: str, token: str, count: int) -> list[Split]:
    """The per-command outputs of a batch (``stdout`` exactly as received); missing tails have no status."""
    tok = re.escape(token)
    outs: dict[int, tuple[int | None, str]] = {}
    for m in re.finditer(rf"\n{tok} (\d+)\n(.*?)(?:\n{tok} \1 (\d+)\n|\Z)", stdout, re.S):
        status = int(m.group(3)) if m.group(3) is not None else None
        body = m.group(2) if status is not None else m.group(2).removesuffix("\n")
        outs[int(m.group(1))] = (status, body)
    errs: dict[int, str] = {}
    for m in re.finditer(rf"\n{tok} (\d+)\n(.*?)(?:\n{tok} \1 end\n|\Z)", stderr, re.S):
        errs[int(m.group(1))] = m.group(2)
    return [Split(outs.get(i, (None, ""))[0], outs.get(i, (None, ""))[1], errs.get(i, "")) for i in range(count)]


def as_result(command: Sequence[str] | str, part: Split, duration_s: float, *, sudo: bool) -> CommandResult:
    """A CommandResult shaped like the one a single exec would have returned."""
    shown = render_command(command)
    raw = part.stdout
    return CommandResult(
        f"sudo {shown}" if sudo else shown,
        part.exit_status if part.exit_status is not None else 255,
        raw.removesuffix("\n"),
        part.stderr.removesuffix("\n"),
        duration_s,
        raw,
    )
