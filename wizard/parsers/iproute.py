"""``ip route get`` answers (text or -j JSON, one or many as ``ip -force -j -batch -`` prints them) and errors.

Formats from iproute2 ip/iproute.c print_route: the JSON object of one answer has ``dst``, ``from`` (only when the
request gave a source: the kernel's rt_fill_info echoes RTA_SRC), ``gateway``, ``dev``, ``table`` (absent for the
main table), ``prefsrc`` (only when the source differs from ``from``), ``flags``, ``uid`` and ``cache``; the text
form prints the same fields as ``[TYPE] DST [from SRC] [via GW] dev DEV [table T] [src PREFSRC] uid N`` and a
``cache`` line. In a batch each command prints its own JSON array on its own line, and a failing line prints its
error and ``Command failed FILE:LINE`` on stderr (lib/utils.c do_batch).
"""

from __future__ import annotations

import json
import re

from wizard.parsers._text import prompt_command, require_lines
from wizard.parsers.common import Parsed, ParseError

_FAILED = re.compile(r"^Command failed (\S+):(\d+)\s*$")
_ERROR = re.compile(r"^(RTNETLINK answers: .+|Error: .+|Cannot find device .+)$")
_TYPES = ("local", "broadcast", "unreachable", "blackhole", "prohibit", "multicast", "anycast", "unicast")


class RouteGet(Parsed):
    """One answer: where a flow to ``dst`` (from ``src`` when given) goes."""

    dst: str
    dev: str
    src: str | None = None  # the ``from`` of the request
    gateway: str | None = None
    table: str = "main"
    prefsrc: str | None = None
    type: str = "unicast"


class FailedLine(Parsed):
    """A batch line the kernel refused: its number and iproute2's message."""

    line: int
    error: str


class RouteGets(Parsed):
    routes: list[RouteGet]
    failed: list[FailedLine] = []

    def find(self, dst: str, src: str | None) -> RouteGet | None:
        return next((r for r in self.routes if r.dst == dst and r.src == src), None)


def _from_json(obj: dict) -> RouteGet:
    if "dst" not in obj or "dev" not in obj:
        raise ParseError("ip route get JSON object without dst or dev")
    return RouteGet(
        dst=str(obj["dst"]),
        dev=str(obj["dev"]),
        src=obj.get("from"),
        gateway=obj.get("gateway"),
        table=str(obj.get("table", "main")),
        prefsrc=obj.get("prefsrc"),
        type=str(obj.get("type", "unicast")),
    )


def _from_text(line: str) -> RouteGet | None:
    words = line.split()
    if not words or "dev" not in words:
        return None
    kind = "unicast"
    if words[0] in _TYPES:
        kind, words = words[0], words[1:]
    if not words:
        return None
    # options follow dst as KEY VALUE, mixed with lone flags such as "onlink": read them by key
    values = {k: words[i + 1] for i, k in enumerate(words[:-1]) if k in ("from", "via", "dev", "table", "src")}
    if "dev" not in values:
        return None  # "dev" as the last word, with no device after it: not a route answer
    return RouteGet(
        dst=words[0],
        dev=values["dev"],
        src=values.get("from"),
        gateway=values.get("via"),
        table=values.get("table", "main"),
        prefsrc=values.get("src"),
        type=kind,
    )


def parse_ip_route_get(text: str) -> RouteGets:
    """Answers and refused lines of one or more ``ip [-j] route get`` commands (stdout and stderr together)."""
    lines = require_lines(text, "ip route get")
    routes: list[RouteGet] = []
    failed: list[FailedLine] = []
    last_error = ""
    for line in lines:
        stripped = line.strip()
        if stripped.startswith("["):
            try:
                doc = json.loads(stripped)
            except json.JSONDecodeError:
                raise ParseError("ip -j route get: a JSON line that does not parse (truncated?)") from None
            if not isinstance(doc, list) or not all(isinstance(o, dict) for o in doc):
                raise ParseError("ip -j route get: not a JSON array of route objects")
            routes += [_from_json(o) for o in doc]
            continue
        failed_match = _FAILED.match(stripped)
        if failed_match:
            failed.append(FailedLine(line=int(failed_match.group(2)), error=last_error or "failed"))
            last_error = ""
            continue
        if _ERROR.match(stripped):
            last_error = stripped
            continue
        if stripped.startswith("cache") or not stripped or prompt_command(stripped) is not None:
            continue
        route = _from_text(stripped)
        if route is None:
            raise ParseError(f"not ip route get output: {stripped[:60]!r}")
        routes.append(route)
    if last_error and not routes and not failed:
        failed.append(FailedLine(line=1, error=last_error))
    if not routes and not failed:
        raise ParseError("no route in the input")
    return RouteGets(routes=routes, failed=failed)
