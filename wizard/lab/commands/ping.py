"""iputils ping: IPv4/IPv6 unicast over the lab's cables and switches, and ff02::1 neighbour discovery."""

from __future__ import annotations

import asyncio
import ipaddress
import random

from wizard.lab import reach
from wizard.lab.commands import command
from wizard.lab.streams import CommandFailed, Ctx


@command("ping", "ping6")
async def ping(ctx: Ctx) -> int:
    args = list(ctx.args)
    count, size, iface, dont_frag, deadline, interval = None, 56, None, False, None, 1.0
    target = None
    force6 = ctx.name == "ping6"
    while args:
        a = args.pop(0)
        if a in ("-c", "-s", "-I", "-M", "-W", "-w", "-i", "-t", "-Q") and args:
            v = args.pop(0)
            if a == "-c":
                count = int(v)
            elif a == "-s":
                size = int(v)
            elif a == "-I":
                iface = v
            elif a == "-M":
                dont_frag = v == "do"
            elif a == "-w":
                deadline = float(v)
            elif a == "-i":
                interval = float(v)
        elif a.startswith("-c") and a[2:].isdigit():
            count = int(a[2:])
        elif a == "-6":
            force6 = True
        elif a in ("-q", "-n", "-4", "-D", "-O"):
            continue
        elif not a.startswith("-"):
            target = a
    if target is None:
        raise CommandFailed("ping: usage error: Destination address required", 2)
    try:
        addr = ipaddress.ip_address(target.split("%")[0])
    except ValueError:
        raise CommandFailed(f"ping: {target}: Name or service not known", 2) from None
    if force6 and addr.version == 4:
        raise CommandFailed(f"ping: {target}: Address family for hostname not supported", 2)
    count = count or (int(deadline) if deadline else 4)
    source = _source(ctx, iface, addr.version)
    if source is not None:
        iface = None  # -I ADDRESS binds the source address, not a device (ping(8), -I interface)
    if iface and iface not in ctx.host.netdevs:
        raise CommandFailed(f"ping: SO_BINDTODEVICE {iface}: No such device", 2)
    if addr.version == 6 and addr.is_multicast:
        return await _ping_multicast(ctx, target, iface, count, size, interval)
    res = reach.probe(ctx.host, target, iface=iface, size=size, dont_frag=dont_frag, src=source)
    if res.outcome == "no_route":
        raise CommandFailed("ping: connect: Network is unreachable", 2)
    v6 = addr.version == 6
    hdr = 48 if v6 else 28
    if v6:
        frm = f" from {res.src}{'%' + iface if addr.is_link_local and iface else ''} {iface}:" if iface else ":"
        ctx.print(f"PING {target}({target}){frm} {size} data bytes")
    else:
        frm = f"from {res.src} {iface}: " if iface else f"from {source} : " if source else ""
        ctx.print(f"PING {target} ({target}) {frm}{size}({size + hdr}) bytes of data.")
    rng = random.Random(f"{ctx.host.name}{target}{size}")
    times: list[float] = []
    errors = 0
    for seq in range(1, count + 1):
        if seq > 1:
            await asyncio.sleep(interval * ctx.host.time_scale)
        if res.outcome == "ok":
            t = res.rtt_ms * rng.uniform(0.8, 1.3)
            times.append(t)
            ctx.print(f"{size + 8} bytes from {target}: icmp_seq={seq} ttl=64 time={t:.3f} ms")
        elif res.outcome == "local_mtu":
            errors += 1
            ctx.print(f"ping: local error: message too long, mtu={res.mtu}")
        elif res.outcome == "unreachable":
            errors += 1
            what = "unreachable: Address unreachable" if v6 else "Host Unreachable"
            ctx.print(f"From {res.src or target} icmp_seq={seq} Destination {what}")
    _summary(ctx, target, count, len(times), times, errors, 0, interval, rng)
    if not times and res.outcome == "unreachable" and count > 1:
        ctx.print(f"pipe {min(count, 3)}")
    elif not times:
        ctx.print("")
    return 0 if times else 1


def _summary(
    ctx: Ctx,
    target: str,
    count: int,
    received: int,
    times: list[float],
    errors: int,
    dups: int,
    interval: float,
    rng: random.Random,
) -> None:
    elapsed = int((count - 1) * 1000 * interval + rng.randint(1, 60))
    loss = round(100 * (count - received) / count)
    ctx.print(f"\n--- {target} ping statistics ---")
    extra = (f", +{dups} duplicates" if dups else "") + (f", +{errors} errors" if errors else "")
    ctx.print(f"{count} packets transmitted, {received} received{extra}, {loss}% packet loss, time {elapsed}ms")
    if times:
        avg = sum(times) / len(times)
        mdev = (sum((t - avg) ** 2 for t in times) / len(times)) ** 0.5
        ctx.print(f"rtt min/avg/max/mdev = {min(times):.3f}/{avg:.3f}/{max(times):.3f}/{mdev:.3f} ms")


async def _ping_multicast(ctx: Ctx, target: str, iface: str | None, count: int, size: int, interval: float) -> int:
    if iface is None:
        raise CommandFailed("ping: connect: Invalid argument", 2)
    dev = ctx.host.netdevs[iface]
    mine = [a for a in dev.ipv6 if a.ip.is_link_local]
    if not mine:
        raise CommandFailed("ping: bind icmp socket: Cannot assign requested address", 2)
    ctx.print(f"PING {target}({target}) from {mine[0].ip}%{iface} {iface}: {size} data bytes")
    rng = random.Random(f"{ctx.host.name}{iface}")
    times: list[float] = []
    dups = 0
    answered = 0
    for seq in range(1, count + 1):
        if seq > 1:
            await asyncio.sleep(interval * ctx.host.time_scale)
        replies = reach.multicast_neighbors(ctx.host, iface)
        if replies:
            answered += 1
        for k, (who, rtt) in enumerate(replies):
            t = rtt * rng.uniform(0.8, 1.3)
            times.append(t)
            dup = " (DUP!)" if k else ""
            dups += 1 if k else 0
            ctx.print(f"{size + 8} bytes from {who}%{iface}: icmp_seq={seq} ttl=64 time={t:.3f} ms{dup}")
    _summary(ctx, target, count, answered, times, 0, dups, interval, rng)
    if not times:
        ctx.print("")
    return 0 if answered else 1


def _source(ctx: Ctx, iface: str | None, version: int) -> str | None:
    """The address ``-I`` names, when it is one; it must be local (else bind fails as in iputils)."""
    if iface is None:
        return None
    try:
        ip = ipaddress.ip_address(iface)
    except ValueError:
        return None
    if ip.version != version or not any(d.admin_up and d.has_addr(iface) for d in ctx.host.netdevs.values()):
        raise CommandFailed("ping: bind: Cannot assign requested address", 2)
    return iface
