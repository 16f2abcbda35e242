"""ip route / ip rule: main, numbered (netplan policy) and local tables, text and JSON."""

from __future__ import annotations

import ipaddress

from wizard.lab import netops, routing
from wizard.lab.commands.ipformat import NOT_PERMITTED, _emit_json
from wizard.lab.streams import CommandFailed, Ctx


def route_text(e: dict[str, object]) -> str:
    typ = e.get("type")
    text = f"{typ} {e['dst']}" if typ else str(e["dst"])
    if e.get("gateway"):
        text += f" via {e['gateway']}"
    text += f" dev {e['dev']}"
    if e.get("table") and e["table"] != "main":
        text += f" table {e['table']}"
    text += f" proto {e['protocol']}"
    if e.get("scope"):
        text += f" scope {e['scope']}"
    if e.get("prefsrc"):
        text += f" src {e['prefsrc']}"
    return text + " "


async def _route(ctx: Ctx, words: list[str], opt: dict) -> int:
    host = ctx.host
    if words[:1] == ["get"] and len(words) > 1:
        return _get(ctx, words[1:], opt)
    if words[:1] in (["add"], ["del"], ["delete"], ["replace"], ["flush"]):
        if not ctx.root:
            raise CommandFailed(NOT_PERMITTED, 2)
        raise CommandFailed("roce-wizard lab: ip route changes are not simulated; use netplan", 2)
    table = words[words.index("table") + 1] if "table" in words and words.index("table") + 1 < len(words) else "main"
    if opt["family"] == "inet6":
        entries: list[dict[str, object]] = []
    else:
        entries = netops.route_entries(host, table)
    if opt["json"]:
        _emit_json(ctx, entries, opt["pretty"])
    else:
        for e in entries:
            ctx.print(route_text(e))
    return 0


async def _rule(ctx: Ctx, words: list[str], opt: dict) -> int:
    if words[:1] in (["add"], ["del"], ["delete"], ["flush"]):
        if not ctx.root:
            raise CommandFailed(NOT_PERMITTED, 2)
        raise CommandFailed("roce-wizard lab: ip rule changes are not simulated; use netplan routing-policy", 2)
    rules = netops.rule_entries(ctx.host) if opt["family"] != "inet6" else []
    if opt["json"]:
        _emit_json(ctx, rules, opt["pretty"])
        return 0
    for r in rules:
        dst = f" to {r['dst']}" if r.get("dst") else ""
        proto = f" proto {r['protocol']}" if r.get("protocol") else ""
        ctx.print(f"{r['priority']}:\tfrom {r['src']}{dst} lookup {r['table']}{proto} ")
    return 0


def _get(ctx: Ctx, words: list[str], opt: dict) -> int:
    """ip route get [to] DST [from SRC] [oif|dev DEV]: the kernel's lookup, rules included (wizard/lab/routing.py)."""
    if words[0] == "to":
        words = words[1:]
    if not words:
        raise CommandFailed('Error: argument "to" is wrong: Invalid address', 1)
    args = dict(zip(words[1::2], words[2::2], strict=False))
    dst, src, oif = words[0], args.get("from"), args.get("oif") or args.get("dev")
    for value in (dst, src):
        if value is None:
            continue
        try:
            ipaddress.IPv4Address(value)
        except ValueError:
            raise CommandFailed(f'Error: any valid prefix is expected rather than "{value}".', 1) from None
    try:
        found = routing.lookup(ctx.host, dst, src=src, oif=oif)
    except routing.RouteError as exc:
        raise CommandFailed(str(exc), 2 if str(exc).startswith("RTNETLINK") else 1) from None
    if opt["json"]:
        _emit_json(ctx, [found.json()], opt["pretty"])
    else:
        ctx.print(found.text())
    return 0
