"""Line clean-up shared by the RDMA, Ethernet and system parsers: CRLF, pane borders, quotes and prompts."""

from __future__ import annotations

import re

from wizard.parsers.common import ParseError

# A shell prompt before a command: `$ cmd`, `# cmd`, `sh-5.1# cmd`, `root@host:~# cmd`, `[root@n75 ~]# cmd`,
# `((venv) ) [u@h ~]$ cmd`, or a `set -x` trace line `+ cmd`.
_PROMPT = re.compile(
    r"""^\s*
    (?:\([^)]*\)\s*\)?\s*)*                  # conda/venv markers: (base) ((sglang-0.5.9) )
    (?:
        \[[^\]\n]*\]\s*[#$]                  # [root@node75 ~]#
      | [\w.-]+@[\w.-]+(?::[^\s#$]*)?\s*[#$] # root@host:~#  user@host $
      | (?:sh|bash)-[\d.]+[#$]               # sh-5.1#
      | [#$]                                 # bare # or $
      | \++                                  # set -x trace
    )
    (?:\s+(?P<cmd>.*?))?\s*$""",
    re.VERBOSE,
)
_BORDER = "\u2502\u2503|"  # box-drawing borders of a tmux/screen pane pasted with the text


def require_lines(text: str, tool: str) -> list[str]:
    """Return :func:`clean_lines` of ``text``; blank input is no output of ``tool`` at all."""
    if not text.strip():
        raise ParseError(f"empty input: no {tool} output")
    return clean_lines(text)


def clean_lines(text: str) -> list[str]:
    """Split ``text`` into lines without CR, trailing blanks, pane borders or a mail quote prefix."""
    lines = text.replace("\r\n", "\n").replace("\r", "\n").split("\n")
    if lines and all(line.startswith("\u2502") for line in lines if line.strip()):
        lines = [line.strip().strip(_BORDER) for line in lines]
    # A mail-quoted paste (`> ` on every line) keeps its indentation after the `>`.
    if any(line.strip() for line in lines) and all(line.startswith(">") for line in lines if line.strip()):
        lines = [line[1:] for line in lines]
    return [line.rstrip() for line in lines]


def prompt_command(line: str) -> str | None:
    """Return the command typed after a shell prompt on ``line`` ('' for a bare prompt), else ``None``."""
    match = _PROMPT.match(line)
    if match is None:
        return None
    return match.group("cmd") or ""


def command_arg(command: str, tool: str, flags: tuple[str, ...] = ()) -> str | None:
    """Return the first plain argument after ``tool`` (and after one of ``flags`` if given) in ``command``."""
    words = command.replace("|", " | ").split()
    for at, word in enumerate(words):
        if word.rsplit("/", 1)[-1] != tool:
            continue
        rest = words[at + 1 :]
        for i, arg in enumerate(rest):
            if arg == "|":
                break
            if flags:
                if arg in flags and i + 1 < len(rest):
                    return rest[i + 1]
                continue
            if not arg.startswith("-"):
                return arg
    return None


def split_pairs(words: list[str]) -> dict[str, str]:
    """Read ``key value key value ...`` words into a dict; a trailing lone word maps to ''."""
    return {words[i]: (words[i + 1] if i + 1 < len(words) else "") for i in range(0, len(words), 2)}


def to_int(value: str | None) -> int | None:
    """Parse a decimal or 0x-hex integer, or return ``None`` for anything else."""
    if value is None:
        return None
    value = value.strip()
    try:
        return int(value, 16) if value.lower().startswith("0x") else int(value)
    except ValueError:
        return None
