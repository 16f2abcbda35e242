"""iproute2 ``ip`` (link, addr, route) and iputils ``ping`` in their real output formats."""

from __future__ import annotations

import ipaddress

from wizard.lab import netops
from wizard.lab.commands import command
from wizard.lab.commands.ipformat import (
    NOT_PERMITTED,
    _addr_lines,
    _emit_json,
    _link_header,
    _link_lines,
    flags,
    link_json,
)
from wizard.lab.commands.iproute import _route, _rule
from wizard.lab.netdevs import BOND_MODES, BondParams, Netdev
from wizard.lab.streams import CommandFailed, Ctx


def _select(ctx: Ctx, words: list[str]) -> list[Netdev]:
    name = None
    only_up = False
    i = 0
    while i < len(words):
        w = words[i]
        if w == "dev" and i + 1 < len(words):
            name = words[i + 1]
            i += 2
            continue
        if w == "up":
            only_up = True
        elif w not in ("show", "list", "lst", "scope", "global", "link") and name is None:
            name = w
        i += 1
    devs = list(ctx.host.netdevs.values())
    if name is not None:
        if name not in ctx.host.netdevs:
            raise CommandFailed(f'Device "{name}" does not exist.', 1)
        devs = [ctx.host.netdevs[name]]
    if only_up:
        devs = [d for d in devs if d.admin_up]
    return devs


@command("ip")
async def ip(ctx: Ctx) -> int:
    args = list(ctx.args)
    opt = {"json": False, "details": False, "brief": False, "family": None, "pretty": False, "stats": False}
    while args and args[0].startswith("-"):
        a = args.pop(0).lstrip("-")
        if a in ("j", "json"):
            opt["json"] = True
        elif a in ("d", "details"):
            opt["details"] = True
        elif a in ("br", "brief"):
            opt["brief"] = True
        elif a in ("p", "pretty"):
            opt["pretty"] = True
        elif a == "4":
            opt["family"] = "inet"
        elif a == "6":
            opt["family"] = "inet6"
        elif a in ("s", "stats", "o", "oneline", "c", "color", "n", "N"):
            continue
        elif a == "force":
            opt["force"] = True
        elif a == "batch":
            if not args:
                raise CommandFailed('Error: argument "batch file" is required', 255)
            opt["batch"] = args.pop(0)
        elif all(ch in "jdps46" for ch in a):
            opt["json"] |= "j" in a
            opt["details"] |= "d" in a
        else:
            raise CommandFailed(f'Option "-{a}" is unknown, try "ip -help".', 255)
    if opt.get("batch"):
        from wizard.lab.commands.ipbatch import batch

        return await batch(ctx, str(opt["batch"]), opt, _dispatch)
    if not args:
        raise CommandFailed("Usage: ip [ OPTIONS ] OBJECT { COMMAND | help }", 255)
    return await _dispatch(ctx, args[0], args[1:], opt)


async def _dispatch(ctx: Ctx, obj: str, words: list[str], opt: dict) -> int:
    if "link".startswith(obj):
        return await _link(ctx, words, opt)
    if "address".startswith(obj) or obj == "addr":
        return await _addr(ctx, words, opt)
    if "route".startswith(obj):
        return await _route(ctx, words, opt)
    if "rule".startswith(obj) and len(obj) >= 2:
        return await _rule(ctx, words, opt)
    raise CommandFailed(f'Object "{obj}" is unknown, try "ip help".', 255)


async def _link(ctx: Ctx, words: list[str], opt: dict) -> int:
    verb = words[0] if words else "show"
    if verb in ("set", "add", "delete", "del"):
        if not ctx.root:
            raise CommandFailed(NOT_PERMITTED, 2)
        return _link_change(ctx, verb, words[1:])
    devs = _select(ctx, words[1:] if verb in ("show", "list") else words)
    if opt["json"]:
        _emit_json(ctx, [link_json(ctx, d, details=opt["details"], addrs=False) for d in devs], opt["pretty"])
        return 0
    for d in devs:
        if opt["brief"]:
            ctx.print(f"{d.name:<16} {ctx.host.operstate(d.name):<14} {d.mac} <{','.join(flags(ctx, d))}> ")
            continue
        ctx.print(_link_header(ctx, d, link_mode=True))
        for line in _link_lines(ctx, d, opt["details"]):
            ctx.print(line)
    return 0


def _link_change(ctx: Ctx, verb: str, words: list[str]) -> int:
    host = ctx.host
    if words and words[0] == "dev":
        words = words[1:]
    if not words:
        raise CommandFailed('Not enough information: "dev" argument is required.', 255)
    name, rest = words[0], words[1:]
    if verb == "add":
        if "type" in rest and rest[rest.index("type") + 1] == "bond":
            mode = rest[rest.index("mode") + 1] if "mode" in rest else "balance-rr"
            if mode not in BOND_MODES:
                raise CommandFailed(f'Error: invalid mode "{mode}".', 255)
            if name in host.netdevs:
                raise CommandFailed("RTNETLINK answers: File exists", 2)
            dev = netops.create_bond(host, name, BondParams(mode=mode))
            dev.managed = False
            return 0
        raise CommandFailed("Error: Unknown device type.", 2)
    if name not in host.netdevs:
        raise CommandFailed(f'Cannot find device "{name}"', 1)
    if verb in ("delete", "del"):
        netops.remove_netdev(host, name)
        return 0
    i = 0
    try:
        while i < len(rest):
            w = rest[i]
            if w in ("up", "down"):
                netops.set_up(host, name, w == "up")
            elif w == "mtu":
                netops.set_mtu(host, name, int(rest[i + 1]))
                i += 1
            elif w == "master":
                netops.enslave(host, name, rest[i + 1])
                i += 1
            elif w == "nomaster":
                netops.release(host, name)
            i += 1
    except netops.NetError as exc:
        raise CommandFailed(str(exc), 2) from None
    except (ValueError, IndexError, KeyError):
        raise CommandFailed(f'Error: argument "{rest[i] if i < len(rest) else ""}" is wrong.', 255) from None
    return 0


async def _addr(ctx: Ctx, words: list[str], opt: dict) -> int:
    verb = words[0] if words else "show"
    if verb in ("add", "del", "delete", "flush", "replace"):
        if not ctx.root:
            raise CommandFailed(NOT_PERMITTED, 2)
        return _addr_change(ctx, verb, words[1:])
    devs = _select(ctx, words[1:] if verb in ("show", "list", "lst") else words)
    fam = opt["family"]
    if opt["json"]:
        _emit_json(
            ctx, [link_json(ctx, d, details=opt["details"], addrs=True, family=fam) for d in devs], opt["pretty"]
        )
        return 0
    for d in devs:
        if opt["brief"]:
            addrs = " ".join(str(a.iface) for a in d.addrs if not fam or a.family == fam)
            ctx.print(f"{d.name:<16} {ctx.host.operstate(d.name):<14} {addrs} ")
            continue
        ctx.print(_link_header(ctx, d, link_mode=False))
        for line in _link_lines(ctx, d, opt["details"]):
            ctx.print(line)
        for line in _addr_lines(d, fam):
            ctx.print(line)
    return 0


def _addr_change(ctx: Ctx, verb: str, words: list[str]) -> int:
    host = ctx.host
    dev_name = words[words.index("dev") + 1] if "dev" in words and words.index("dev") + 1 < len(words) else None
    if dev_name is None:
        raise CommandFailed('Not enough information: "dev" argument is required.', 255)
    if dev_name not in host.netdevs:
        raise CommandFailed(f'Cannot find device "{dev_name}"', 1)
    if verb == "flush":
        host.netdevs[dev_name].addrs = [a for a in host.netdevs[dev_name].addrs if a.iface.version == 6]
        return 0
    cidr = next((w for w in words if w not in ("dev", dev_name, "local") and ("." in w or ":" in w)), None)
    if cidr is None:
        raise CommandFailed('Error: an inet prefix is expected rather than "".', 1)
    try:
        ipaddress.ip_interface(cidr if "/" in cidr else cidr + "/32")
    except ValueError:
        raise CommandFailed(f'Error: an inet prefix is expected rather than "{cidr}".', 1) from None
    try:
        if verb in ("add", "replace"):
            netops.add_addr(host, dev_name, cidr if "/" in cidr else cidr + "/32")
        else:
            netops.del_addr(host, dev_name, cidr)
    except netops.NetError as exc:
        if verb == "replace":
            return 0
        raise CommandFailed(str(exc), 2) from None
    return 0
