"""Secrets never reach a report: the state's Redactor (known values) plus the shapes a secret takes in text."""

from __future__ import annotations

import os
import re
from collections.abc import Callable
from typing import Any

from pydantic import BaseModel

from wizard.answers.model import _SECRET_WORDS, SUDO_PASSWORD_ENV
from wizard.engine.logs import Redactor

MASK = "******"
# "password=hunter2", "token: abc", "--api-key abc"; the key words are the answers file's own list of secret names
_WORDS = "|".join(w.replace("_", "[_-]?") for w in (*_SECRET_WORDS, "api_key"))
# a bare value ends at a space or separator; closing brackets right before that belong to the text around it
_VALUE = r"(\"[^\"]*\"|'[^']*'|[^\s,;&]+?(?=[)\]]*(?:[\s,;&]|\Z)))"
_ASSIGNED = re.compile(rf"(?i)(\b[\w-]*(?:{_WORDS})[\w-]*)(\s*[=:]\s*)(?!\*{{6}}){_VALUE}")
_FLAG = re.compile(rf"(?i)(--[\w-]*(?:{_WORDS})[\w-]*)(\s+)(?!\*{{6}}){_VALUE}")
_PEM = re.compile(r"-----BEGIN [A-Z ]*PRIVATE KEY-----.*?(?:-----END [A-Z ]*PRIVATE KEY-----|\Z)", re.S)
_PEM_END = re.compile(r"\A.*?-----END [A-Z ]*PRIVATE KEY-----", re.S)  # a log tail that starts inside a key
_CANDIDATE = re.compile(rf"(?i){_WORDS}|bearer|PRIVATE KEY")
_BEARER = re.compile(r"(?i)\b(authorization:\s*bearer|bearer)\s+[A-Za-z0-9._~+/=-]{8,}")
# A header file or a digest names a secret without holding it: those words stay.
_HARMLESS_WORDS = "digest|file|path|not|missing|matches|differs?|set|unset|present|absent"
_HARMLESS = re.compile(rf"(?i)^(?:@?/|sha\d+|(?:{_HARMLESS_WORDS})\b)")


def report_redactor(extra: list[str] | None = None) -> Callable[[str], str]:
    """The state's Redactor with the sudo password of this environment (when set) and ``extra`` values, then
    the patterns: assignments to secret-named keys, bearer tokens and PEM private keys."""
    known = Redactor([*(extra or []), os.environ.get(SUDO_PASSWORD_ENV) or ""])

    def redact(text: str) -> str:
        text = known(text)
        if not _CANDIDATE.search(text):  # most text names no secret: one scan instead of four substitutions
            return text
        text = _PEM_END.sub(f"[private key {MASK}]", _PEM.sub(f"[private key {MASK}]", text))
        text = _BEARER.sub(lambda m: f"{m.group(1)} {MASK}", text)
        return _FLAG.sub(_mask_value, _ASSIGNED.sub(_mask_value, text))

    return redact


def _mask_value(match: re.Match[str]) -> str:
    key, sep, value = match.groups()
    if _HARMLESS.match(value.strip("\"'")):
        return match.group(0)
    return f"{key}{sep}{MASK}"


def redact_tree(data: Any, redact: Callable[[str], str]) -> Any:
    """Every string in a tree of pydantic models, dicts, lists and tuples (dict keys too) passed through
    ``redact``; models are changed in place (no second validation of a thousand hosts' records)."""
    seen: dict[str, str] = {}  # the same titles and words repeat on every host

    def walk(node: Any) -> Any:
        if isinstance(node, str):
            if node not in seen:
                seen[node] = redact(node)
            return seen[node]
        if isinstance(node, BaseModel):
            for name, value in node.__dict__.items():
                node.__dict__[name] = walk(value)
            return node
        if isinstance(node, dict):
            return {walk(k): walk(v) for k, v in node.items()}
        if isinstance(node, list):
            return [walk(v) for v in node]
        if isinstance(node, tuple):
            return tuple(walk(v) for v in node)
        return node

    return walk(data)
