"""Host ranges in the answers: `name: gpu[001-256]` entries expanded into plain host entries before validation."""

from __future__ import annotations

import ipaddress
import itertools
import json
import string
from collections import OrderedDict
from typing import Any

from wizard.answers.validators import _address, _hostname

MAX_HOSTS = 100_000
"""Most hosts one range (and one answers file) may name: a typo such as [1-1000000] is refused, not expanded."""
RANGE_ONLY_KEYS = ("address_start", "host_id_start")
_REMEMBERED = 16


HOSTS_NAMED = 8
"""Most hosts a one-line message names one by one; past it, the count and the first and last."""


def hosts_text(hosts: list[str]) -> str:
    """Hosts named in one line: every name for a few, the count and the ends for a fleet (a 1,024-name line says
    nothing a reader can take in, and fills a terminal's scrollback)."""
    if len(hosts) <= HOSTS_NAMED:
        return ", ".join(hosts)
    return f"{len(hosts)} hosts ({hosts[0]} .. {hosts[-1]})"


class KeyProblem(ValueError):
    """A problem that knows which key it belongs to (("hosts", 2, "address")), so the message can name key and line."""

    def __init__(self, path: tuple[str | int, ...], message: str) -> None:
        self.path = path
        super().__init__(message)


def has_range(text: str) -> bool:
    """Whether ``text`` holds a bracket range (or a stray bracket, which expanding then refuses)."""
    return "[" in text or "]" in text


def _parts(pattern: str, sep: str, stride: bool) -> list[list[str]]:
    """Literal text and ranges in order: a literal is a one-item list, a range the list of its values."""
    parts: list[list[str]] = []
    rest = pattern
    while rest:
        open_at, close_at = rest.find("["), rest.find("]")
        if open_at < 0 and close_at < 0:
            parts.append([rest])
            break
        if close_at >= 0 and (open_at < 0 or close_at < open_at):
            raise ValueError(f"unbalanced brackets: ']' without '[' in {pattern}")
        if close_at < 0:
            raise ValueError(f"unbalanced brackets: '[' without ']' in {pattern}")
        if "[" in rest[open_at + 1 : close_at]:
            raise ValueError(f"unbalanced brackets: '[' inside a range in {pattern}")
        if open_at:
            parts.append([rest[:open_at]])
        parts.append(_values(rest[open_at + 1 : close_at], sep, stride))
        rest = rest[close_at + 1 :]
    return parts


def _values(body: str, sep: str, stride: bool) -> list[str]:
    fields = body.split(sep)
    if len(fields) not in ((2, 3) if stride else (2,)) or not all(fields):
        form = f"[start{sep}end{sep}step]" if stride else f"[start{sep}end]"
        raise ValueError(f"[{body}] is not a range of the form {form}")
    start, end = fields[0], fields[1]
    step = 1
    if len(fields) == 3:
        if not fields[2].isdigit() or int(fields[2]) == 0:
            raise ValueError(f"[{body}]: the step {fields[2]} is not a positive number")
        step = int(fields[2])
    if start.isdigit() and end.isdigit():
        if int(start) > int(end):
            raise ValueError(f"[{body}] runs backwards (start {start} is after end {end})")
        width = len(start) if start.startswith("0") and len(start) > 1 else 0
        if width and len(end) != width:
            raise ValueError(f"[{body}]: a zero-padded start needs an end of the same width ({start} and {end})")
        return [str(n).zfill(width) for n in range(int(start), int(end) + 1, step)]
    letters = string.ascii_letters
    if len(start) == 1 and len(end) == 1 and start in letters and end in letters and start.islower() == end.islower():
        if start > end:
            raise ValueError(f"[{body}] runs backwards (start {start} is after end {end})")
        return [chr(c) for c in range(ord(start), ord(end) + 1, step)]
    raise ValueError(f"[{body}]: start and end must both be numbers or both single letters of the same case")


def count(pattern: str, *, sep: str = "-", stride: bool = False) -> int:
    """How many values ``pattern`` expands to."""
    total = 1
    for part in _parts(pattern, sep, stride):
        total *= len(part)
    return total


def expand(pattern: str, *, sep: str = "-", stride: bool = False, limit: int = MAX_HOSTS) -> list[str]:
    """Every value of ``pattern`` in order, the leftmost range changing slowest (r[1-2]n[1-2]: r1n1 r1n2 r2n1 r2n2).

    ``sep`` is "-" in the answers and ":" in Ansible inventories (which also allow a step). Raises ValueError with a
    one-line reason for a malformed pattern or one naming more than ``limit`` values."""
    parts = _parts(pattern, sep, stride)
    total = 1
    for part in parts:
        total *= len(part)
    if total > limit:
        raise ValueError(f"{pattern} names {total:,} values, more than the limit of {limit:,}")
    return ["".join(combo) for combo in itertools.product(*parts)]


def is_range_entry(entry: Any) -> bool:
    """A host entry that names several hosts (a bracket range in its name, or a range-only key)."""
    if not isinstance(entry, dict):
        return False
    name = entry.get("name")
    return (isinstance(name, str) and has_range(name)) or any(k in entry for k in RANGE_ONLY_KEYS)


def expand_hosts(entries: list[Any], default_port: Any = 22) -> tuple[list[Any], list[int]]:
    """Plain host entries for ``entries`` and, for each, the index of the entry it came from.

    Entries without ranges pass through untouched (the model validates them as before). Raises KeyProblem naming the
    key path for a malformed range, mismatched counts, and names or addresses given twice across entries."""
    hosts: list[Any] = []
    sources: list[int] = []
    for index, entry in enumerate(entries):
        expanded = _expand_entry(index, entry) if is_range_entry(entry) else [entry]
        hosts.extend(expanded)
        sources.extend([index] * len(expanded))
        if len(hosts) > MAX_HOSTS:
            raise KeyProblem(("hosts", index), f"the hosts add up to more than the limit of {MAX_HOSTS:,}")
    if any(is_range_entry(e) for e in entries):
        _no_duplicates(entries, hosts, sources, default_port)
    return hosts, sources


def _expand_entry(index: int, entry: dict[str, Any]) -> list[dict[str, Any]]:
    name = entry.get("name")
    if not isinstance(name, str) or not has_range(name):
        key = next(k for k in RANGE_ONLY_KEYS if k in entry)
        raise KeyProblem(("hosts", index, key), f"{key} only goes with a name range such as gpu[001-016]")
    names = _expanded(index, "name", name)
    for value in names:
        _check(index, "name", name, value, _hostname)
    addresses = _addresses(index, entry, name, len(names))
    ids = _host_ids(index, entry, name, len(names))
    shared = {k: v for k, v in entry.items() if k not in ("name", "address", *RANGE_ONLY_KEYS)}
    return [
        {"name": n, "address": a, **shared, **({"host_id": i} if i is not None else {})}
        for n, a, i in zip(names, addresses, ids, strict=True)
    ]


def _expanded(index: int, key: str, pattern: str) -> list[str]:
    try:
        return expand(pattern)
    except ValueError as exc:
        raise KeyProblem(("hosts", index, key), str(exc)) from None


def _check(index: int, key: str, pattern: str, value: str, validate: Any) -> None:
    try:
        validate(value)
    except ValueError as exc:
        raise KeyProblem(("hosts", index, key), f"{pattern}: {exc}") from None


def _addresses(index: int, entry: dict[str, Any], name: str, wanted: int) -> list[str]:
    if "address" in entry and "address_start" in entry:
        raise KeyProblem(("hosts", index, "address_start"), "give address or address_start, not both")
    if "address_start" in entry:
        return _consecutive(index, entry["address_start"], name, wanted)
    pattern = entry.get("address")
    if not isinstance(pattern, str):
        raise KeyProblem(
            ("hosts", index, "address"),
            f"{name} needs address (a pattern giving {wanted} addresses, e.g. 10.0.0.[1-{wanted}]) or address_start",
        )
    addresses = _expanded(index, "address", pattern)
    if len(addresses) != wanted:
        what = "address" if len(addresses) == 1 else "addresses"
        raise KeyProblem(
            ("hosts", index, "address"),
            f"{pattern} gives {len(addresses)} {what} but {name} names {wanted} hosts",
        )
    for value in addresses:
        _check(index, "address", pattern, value, _address)
    return [_address(a) for a in addresses]


def _consecutive(index: int, start: Any, name: str, wanted: int) -> list[str]:
    path = ("hosts", index, "address_start")
    try:
        first = ipaddress.ip_address(str(start))
    except ValueError:
        raise KeyProblem(path, f"{start!r} is not an IP address (address_start counts up from an address)") from None
    top = (1 << first.max_prefixlen) - 1
    if int(first) + wanted - 1 > top:
        raise KeyProblem(path, f"{first} + {wanted} hosts runs past the last address {ipaddress.ip_address(top)}")
    addresses = [first + n for n in range(wanted)]
    if first.version == 4:
        # Counting across an octet boundary lands on x.x.x.255 and x.x.x.0, the broadcast and network addresses
        # of a /24; say which addresses exactly with the bracket form instead.
        edge = next((a for a in addresses if int(a) & 0xFF in (0, 0xFF)), None)
        if edge is not None:
            raise KeyProblem(
                path,
                f"{first} for the {wanted} hosts of {name} reaches {edge}, an address ending in .0 or .255; "
                "use address with ranges (e.g. 10.0.[0-1].[1-128]) to say exactly which addresses",
            )
    return [str(a) for a in addresses]


def _host_ids(index: int, entry: dict[str, Any], name: str, wanted: int) -> list[int | None]:
    if "host_id" in entry:
        raise KeyProblem(
            ("hosts", index, "host_id"),
            f"{name} names {wanted} hosts and one host_id cannot number them all; use host_id_start "
            "(the first host's id; the others follow)",
        )
    start = entry.get("host_id_start")
    if start is None:
        return [None] * wanted
    if isinstance(start, bool) or not isinstance(start, int) or start < 1 or start + wanted - 1 > 65534:
        raise KeyProblem(
            ("hosts", index, "host_id_start"),
            f"{start!r} must be a whole number from 1 to {65535 - wanted} for the {wanted} hosts of {name}",
        )
    return [start + n for n in range(wanted)]


def _describe(entries: list[Any], index: int, key: str) -> str:
    entry = entries[index]
    value = entry.get(key) if key != "address" or "address" in entry else f"address_start {entry['address_start']}"
    return f"hosts[{index}] ({value})"


def _twice(entries: list[Any], first: int, src: int, key: str) -> str:
    if first == src:
        return f"by {_describe(entries, src, key)}"
    return f"by {_describe(entries, first, key)} and {_describe(entries, src, key)}"


def _no_duplicates(entries: list[Any], hosts: list[Any], sources: list[int], default_port: Any) -> None:
    names: dict[str, int] = {}
    endpoints: dict[tuple[str, Any], int] = {}
    for host, src in zip(hosts, sources, strict=True):
        if not isinstance(host, dict):
            continue
        name, address = host.get("name"), host.get("address")
        if isinstance(name, str):
            if name in names:
                raise KeyProblem(
                    ("hosts", src, "name"), f"{name} is named twice: {_twice(entries, names[name], src, 'name')}"
                )
            names[name] = src
        if isinstance(address, str):
            endpoint = (address, host.get("port") or default_port)
            if endpoint in endpoints:
                key = "address_start" if "address_start" in entries[src] else "address"
                where = _twice(entries, endpoints[endpoint], src, "address")
                raise KeyProblem(("hosts", src, key), f"{address} port {endpoint[1]} is given twice: {where}")
            endpoints[endpoint] = src


# -- keeping ranges when saving ------------------------------------------------------------------------------
# The answers hold expanded hosts; the TUI saves through answers_io. Remember, content-addressed, the entries a
# loaded file gave for exactly these hosts, so a save writes the ranges back while the host list is unchanged and
# plain entries once it changed. Bounded, and it can only ever return entries that expand to the same hosts.
_compact: OrderedDict[str, list[Any]] = OrderedDict()


def _key(hosts_data: list[dict[str, Any]]) -> str:
    return json.dumps(hosts_data, sort_keys=True)


def remember(entries: list[Any], hosts_data: list[dict[str, Any]]) -> None:
    """Record that ``entries`` (as written in a file) expand to ``hosts_data`` (the validated hosts, dumped)."""
    key = _key(hosts_data)
    _compact[key] = json.loads(json.dumps(entries))
    _compact.move_to_end(key)
    while len(_compact) > _REMEMBERED:
        _compact.popitem(last=False)


def compact_form(hosts_data: list[dict[str, Any]]) -> list[Any] | None:
    """The range entries a loaded file gave for exactly these hosts, or None (then write plain entries)."""
    entries = _compact.get(_key(hosts_data))
    return json.loads(json.dumps(entries)) if entries is not None else None
