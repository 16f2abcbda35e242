"""mlnx_qos (DOCA/MLNX_OFED) and iproute2 ``dcb`` for PFC, trust and DSCP mapping on mlx5 ports."""

from __future__ import annotations

from wizard.lab.commands import command
from wizard.lab.netdevs import Netdev, Qos
from wizard.lab.streams import CommandFailed, Ctx

USAGE = "Usage: mlnx_qos -i <interface> [options]"
LLDPAD_WARNING = "****** WARNING: lldpad service is running and may overwrite your settings ******\n"
PRIO_TC = [1, 0, 2, 3, 4, 5, 6, 7]  # mlx5 default: priority 0 -> tc1, priority 1 -> tc0


def _mlx5(ctx: Ctx, name: str) -> Netdev | None:
    dev = ctx.host.netdevs.get(name)
    return dev if dev is not None and dev.qos is not None and dev.port_index is not None else None


def _lldpad_overwrites(ctx: Ctx, q: Qos) -> None:
    """lldpad (DCBX agent) pushes its own, all-disabled PFC config right after a change."""
    if ctx.host.lldpad_active():
        q.pfc = [0] * 8


def render(q: Qos) -> str:
    lines = ["DCBX mode: OS controlled", f"Priority trust state: {q.trust}"]
    if q.trust == "dscp":
        lines.append("dscp2prio mapping:")
        for prio in range(8):
            dscps = [d for d in range(63, -1, -1) if q.dscp2prio[d] == prio]
            if dscps:
                lines.append(f"\tprio:{prio} dscp:" + "".join(f"{d:02d}," for d in dscps))
    lines.append("default priority:")
    lossless = [p for p in range(8) if q.pfc[p]]
    sizes = [130944, 130944] if lossless else [262016, 0]
    lines.append("Receive buffer size (bytes): " + "".join(f"{s}," for s in sizes + [0] * 6))
    lines.append(f"Cable len: {q.cable_len}")
    lines.append("PFC configuration:")
    lines.append("\tpriority    0   1   2   3   4   5   6   7")
    lines.append("\tenabled     " + "".join(f"{b}   " for b in q.pfc))
    lines.append("\tbuffer      " + "".join(f"{1 if q.pfc[p] else 0}   " for p in range(8)))
    for tc in range(8):
        lines.append(f"tc: {tc} ratelimit: unlimited, tsa: vendor")
        for prio in range(8):
            if PRIO_TC[prio] == tc:
                lines.append(f"\t priority:  {prio}")
    return "\n".join(lines) + "\n"


@command("mlnx_qos")
async def mlnx_qos(ctx: Ctx) -> int:
    args = list(ctx.args)
    opts: dict[str, str] = {}
    i = 0
    while i < len(args):
        a = args[i]
        key, eq, value = a.partition("=")
        long_map = {
            "-i": "intf",
            "--interface": "intf",
            "-f": "pfc",
            "--pfc": "pfc",
            "--trust": "trust",
            "--cable_len": "cable_len",
            "--dscp2prio": "dscp2prio",
            "-d": "dcbx",
            "--dcbx": "dcbx",
            "-p": "prio_tc",
            "--prio_tc": "prio_tc",
            "-s": "tsa",
            "--tsa": "tsa",
            "-t": "tcbw",
            "--tcbw": "tcbw",
            "-r": "ratelimit",
            "--ratelimit": "ratelimit",
        }
        if key in long_map:
            if eq:
                opts[long_map[key]] = value
            elif i + 1 < len(args):
                opts[long_map[key]] = args[i + 1]
                i += 1
            else:
                raise CommandFailed(f"{USAGE}\n\nmlnx_qos: error: {a} option requires an argument", 2)
        elif a == "-a":
            pass
        elif a.startswith("-"):
            raise CommandFailed(f"{USAGE}\n\nmlnx_qos: error: no such option: {key}", 2)
        else:
            ctx.print("Bad arguments")
            raise CommandFailed(USAGE, 1)
        i += 1
    if "intf" not in opts:
        ctx.print("Interface name is required")
        ctx.print(USAGE)
        return 1
    if ctx.host.lldpad_active():
        ctx.print(LLDPAD_WARNING)
    name = opts["intf"]
    dev = _mlx5(ctx, name)
    if dev is None:
        exists = name in ctx.host.netdevs
        if "pfc" in opts:
            ctx.print("Netlink error: Operation not supported (95)" if exists else "Netlink error: No such device (19)")
            return 1
        ctx.print("Priority trust state is not supported on your system")
        if "trust" in opts:
            return 1
        ctx.print("Buffers commands are not supported on your system")
        ctx.print("ETS features are not supported on your system")
        return 1
    q = dev.qos
    assert q is not None
    changed_pfc = False
    if "cable_len" in opts:
        _set_cable_len(q, _int(ctx, opts["cable_len"], 0, 0xFFFF, "cable_len"))
    if "pfc" in opts:
        items = opts["pfc"].split(",")
        if len(items) > 8:
            ctx.print("Too many items for PFC")
            return 1
        values = [_int(ctx, t, 0, 1, "PFC") for t in items]
        if len(values) != 8:
            ctx.print("pfc list must have 8 items")
            return 1
        if not ctx.root:
            ctx.print("Netlink error: Operation not permitted (1)")
            return 1
        q.pfc = values
        changed_pfc = True
    if "trust" in opts:
        if opts["trust"] not in ("dscp", "pcp"):
            ctx.print("Invalid trust state command. Refer to the help.")
            return 1
        if not ctx.root:
            ctx.print("Priority trust state is not supported on your system")
            return 1
        q.trust = opts["trust"]
    if "dscp2prio" in opts:
        action, _, rest = opts["dscp2prio"].partition(",")
        dscp, _, prio = rest.partition(",")
        if action != "set" or not dscp.isdigit() or not prio.isdigit() or int(dscp) > 63 or int(prio) > 7:
            ctx.print("Invalid dscp2prio command. Refer to the help.")
            return 1
        q.dscp2prio[int(dscp)] = int(prio)
    ctx.out.write(render(q))
    if changed_pfc:
        _lldpad_overwrites(ctx, q)
    return 0


def _int(ctx: Ctx, text: str, lo: int, hi: int, what: str) -> int:
    try:
        v = int(text)
        if not lo <= v <= hi:
            raise ValueError(f"{v} is not in the range {lo}..{hi}")
        return v
    except ValueError as exc:
        msg = str(exc) if "range" in str(exc) else f"invalid literal for int() with base 10: '{text}'"
        ctx.print(f"Bad value for {what}: {msg}")
        raise CommandFailed(USAGE, 1) from None


def _set_cable_len(q: Qos, metres: int) -> None:
    """mlnx_qos --cable_len and DCB PFC `delay` both reach mlx5e_dcbnl_ieee_setpfc, which takes a length only when it
    is non-zero and under MLX5E_MAX_CABLE_LENGTH (1000): anything else is silently ignored (en_dcbnl.c)."""
    if 0 < metres < 1000:
        q.cable_len = metres


@command("dcb")
async def dcb(ctx: Ctx) -> int:
    """iproute2 dcb: ``dcb pfc show|set dev X [prio-pfc P:on ...]``, ``dcb app show|add|del dev X dscp-prio D:P``."""
    args = [a for a in ctx.args if not a.startswith("-")]
    if len(args) < 3 or args[0] not in ("pfc", "app") or "dev" not in args:
        raise CommandFailed(
            "Usage: dcb [ OPTIONS ] OBJECT { COMMAND | help }\nwhere  OBJECT := { app | buffer | dcbx "
            "| ets | maxrate | pfc }",
            255,
        )
    obj, verb = args[0], args[1]
    name = args[args.index("dev") + 1]
    if name not in ctx.host.netdevs:
        raise CommandFailed(f'Cannot find device "{name}"', 1)
    dev = _mlx5(ctx, name)
    if dev is None:
        raise CommandFailed("Error: Operation not supported", 1)
    q = dev.qos
    assert q is not None
    pairs = [a for a in args[args.index("dev") + 2 :] if ":" in a]
    if verb in ("set", "add", "del", "replace", "flush") and not ctx.root:
        raise CommandFailed("Error: Operation not permitted", 1)
    if obj == "pfc":
        if verb == "set":
            for p in pairs:
                prio, _, state = p.partition(":")
                q.pfc[int(prio)] = 1 if state == "on" else 0
            rest = args[args.index("dev") + 2 :]
            if "delay" in rest:
                value = rest[rest.index("delay") + 1] if rest.index("delay") + 1 < len(rest) else ""
                if not value.isdigit():
                    raise CommandFailed(f'Error: Argument "{value}" is not an integer', 1)
                _set_cable_len(q, int(value))
            _lldpad_overwrites(ctx, q)
            return 0
        # mlx5 reports its cable length as the PFC delay (en_dcbnl.c mlx5e_dcbnl_ieee_getpfc)
        ctx.print(f"pfc-cap 8 macsec-bypass off delay {q.cable_len} ")
        ctx.print("prio-pfc " + " ".join(f"{p}:{'on' if q.pfc[p] else 'off'}" for p in range(8)) + " ")
        return 0
    # The kernel keeps DCB APP entries per netdev (net/dcb/dcbnl.c, by ifindex) and mlx5 drops its DSCP entries
    # with the netdev (en_dcbnl.c mlx5e_dcbnl_delete_app): they live on the netdev and vanish on a driver reload.
    apps: dict[int, int] = dev.__dict__.setdefault("dcb_apps", {})
    if verb in ("add", "replace"):
        for p in pairs:
            dscp, _, prio = p.partition(":")
            apps[int(dscp)] = int(prio)
            q.dscp2prio[int(dscp)] = int(prio)
        q.trust = "dscp" if apps else q.trust  # a DSCP app entry switches mlx5 to trust dscp
        return 0
    if verb in ("del", "flush"):
        for p in pairs or [f"{d}:{v}" for d, v in apps.items()]:
            apps.pop(int(p.partition(":")[0]), None)
        if not apps:
            q.trust = "pcp"
        return 0
    ctx.print("dscp-prio " + " ".join(f"{d}:{p}" for d, p in sorted(apps.items())) + " ")
    return 0
