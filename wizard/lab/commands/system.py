"""System commands: sudo, shells, env/timeout/sleep, identity (uname, hostname, id), ps, sysctl, dmesg."""

from __future__ import annotations

import re
import time

from wizard.lab.commands import command, getopts
from wizard.lab.streams import CommandFailed, Ctx
from wizard.lab.vfs import FsError


@command("id")
async def id_(ctx: Ctx) -> int:
    opts, rest = getopts(ctx, "ugnG")
    name = rest[0] if rest else ctx.cred.user
    uid = ctx.host.users.get(name)
    if uid is None:
        raise CommandFailed(f"id: '{name}': no such user")
    groups = f"{uid}({name})" + (",27(sudo)" if uid else "")
    if "u" in opts or "g" in opts:
        ctx.print(name if "n" in opts else str(uid))
    elif "G" in opts:
        ctx.print(str(uid) + (" 27" if uid else ""))
    else:
        ctx.print(f"uid={uid}({name}) gid={uid}({name}) groups={groups}")
    return 0


@command("whoami")
async def whoami(ctx: Ctx) -> int:
    ctx.print(ctx.cred.user)
    return 0


@command("uname")
async def uname(ctx: Ctx) -> int:
    p, host = ctx.host.profile, ctx.host
    opts, _ = getopts(ctx, "asnrvmpio", ["all"])
    fields = {
        "s": "Linux",
        "n": host.hostname,
        "r": p.kernel,
        "v": "#135-Ubuntu SMP Fri Sep 27 13:53:58 UTC 2024",
        "m": p.arch,
        "p": p.arch,
        "i": p.arch,
        "o": "GNU/Linux",
    }
    if "a" in opts or "all" in opts:
        keys = list("snrvmpio")
    else:
        keys = [k for k in "snrvmpio" if k in opts] or ["s"]
    ctx.print(" ".join(fields[k] for k in keys))
    return 0


@command("hostname")
async def hostname(ctx: Ctx) -> int:
    host = ctx.host
    if "-I" in ctx.args or "--all-ip-addresses" in ctx.args:
        ips = [str(a.ip) for d in host.netdevs.values() if d.kind != "loopback" and d.admin_up for a in d.ipv4]
        ctx.print(" ".join(ips) + " ")
        return 0
    names = [a for a in ctx.args if not a.startswith("-")]
    if names:
        if not ctx.root:
            raise CommandFailed("hostname: you must be root to change the host name")
        host.hostname = names[0]
        return 0
    ctx.print(host.hostname)
    return 0


@command("hostnamectl")
async def hostnamectl(ctx: Ctx) -> int:
    host = ctx.host
    if ctx.args[:1] == ["set-hostname"] and len(ctx.args) > 1:
        if not ctx.root:
            raise CommandFailed("Could not set static hostname: Interactive authentication required.")
        host.hostname = ctx.args[1]
        host.fs.install("/etc/hostname", ctx.args[1] + "\n")
        return 0
    p = host.profile
    ctx.print(f" Static hostname: {host.fs.read_text('/etc/hostname').strip()}")
    ctx.print(f"Operating System: {p.os_pretty}\n          Kernel: Linux {p.kernel}\n    Architecture: x86-64")
    return 0


@command("date")
async def date(ctx: Ctx) -> int:
    fmt = next((a[1:] for a in ctx.args if a.startswith("+")), "%a %b %e %H:%M:%S UTC %Y")
    ctx.print(time.strftime(fmt.replace("%N", "000000000"), time.gmtime()))
    return 0


@command("nproc")
async def nproc(ctx: Ctx) -> int:
    total = 0
    for spec in ctx.host.profile.numa_cpus:
        for part in spec.split(","):
            a, _, b = part.partition("-")
            total += int(b or a) - int(a) + 1
    ctx.print(str(total))
    return 0


@command("lscpu")
async def lscpu(ctx: Ctx) -> int:
    p = ctx.host.profile
    ctx.print(f"Architecture:            {p.arch}\nModel name:              {p.cpu_model}")
    ctx.print(f"Socket(s):               {p.sockets}")
    ctx.print(f"NUMA node(s):            {len(p.numa_cpus)}")
    for i, cpus in enumerate(p.numa_cpus):
        ctx.print(f"NUMA node{i} CPU(s):       {cpus}")
    return 0


@command("dmesg")
async def dmesg(ctx: Ctx) -> int:
    if not ctx.root:
        raise CommandFailed("dmesg: read kernel buffer failed: Operation not permitted")
    for line in ctx.host.dmesg:
        ctx.print(line)
    return 0


def _processes(ctx: Ctx) -> list[tuple[int, str]]:
    procs = [(1, "systemd"), (2, "kthreadd")]
    for name, rt in sorted(ctx.host.units.items()):
        if rt.state == "active" and rt.sub == "running":
            procs.append((rt.pid, {"ssh.service": "sshd", "lldpad.service": "lldpad"}.get(name, name.split(".")[0])))
    procs.append((ctx.host.pid_hint + 1, "bash"))
    return procs


PS_FIELDS = ("pid", "etimes", "comm", "args")


@command("ps")
async def ps(ctx: Ctx) -> int:
    """``ps`` and procps' ``ps -eo FIELD[=],...`` with the fields pid, etimes (seconds since the process started),
    comm and args (its full command line: a service's ExecStart= as systemd ran it, wizard/lab/procfs.py)."""
    fields = _format(list(ctx.args))
    if fields is None:
        ctx.print("    PID TTY          TIME CMD")
        for pid, name in _processes(ctx):
            ctx.print(f"{pid:>7} ?        00:00:00 {name}")
        return 0
    from wizard.lab.procfs import running_commands

    argvs = running_commands(ctx.host)
    started = {rt.pid: rt.since for rt in ctx.host.units.values()}
    now = time.time()
    names = [f.rstrip("=") for f in fields]
    if not all(f.endswith("=") for f in fields):
        ctx.print(" ".join(n.upper() for n in names))
    for pid, name in _processes(ctx):
        since = started.get(pid) or ctx.host.boot_time
        values = {
            "pid": str(pid),
            "etimes": str(max(0, int(now - since))),
            "comm": name[:15],
            "args": " ".join(argvs.get(pid, [name])),
        }
        ctx.print(" ".join(values[n] for n in names))
    return 0


def _format(args: list[str]) -> list[str] | None:
    """The -o/-eo field list, or None for plain ps; unknown fields fail as procps does."""
    fields: list[str] = []
    while args:
        a = args.pop(0)
        if a in ("-o", "-eo", "-ao"):
            fields += args.pop(0).split(",") if args else []
        elif a.startswith(("-eo", "-o")) and len(a) > 3:
            fields += a.split("o", 1)[1].split(",")
    if not fields:
        return None
    bad = [f for f in fields if f.rstrip("=") not in PS_FIELDS]
    if bad:
        raise CommandFailed(f'error: unknown user-defined format specifier "{bad[0].rstrip("=")}"', 1)
    return fields


@command("pgrep", "pkill")
async def pgrep(ctx: Ctx) -> int:
    opts, rest = getopts(ctx, "xlfa")
    if not rest:
        raise CommandFailed(
            f"{ctx.name}: no matching criteria specified\nTry `{ctx.name} --help' for more information.", 2
        )
    pattern = rest[0]
    hits = [(pid, n) for pid, n in _processes(ctx) if (n == pattern if "x" in opts else re.search(pattern, n))]
    if ctx.name == "pkill":
        if hits and not ctx.root:
            raise CommandFailed(f"pkill: killing pid {hits[0][0]} failed: Operation not permitted")
        for _, name in hits:
            rt = ctx.host.units.get(f"{'ssh' if name == 'sshd' else name}.service")
            if rt is not None:
                rt.state, rt.sub = "failed", "failed"
        return 0 if hits else 1
    for pid, name in hits:
        ctx.print(f"{pid} {name}" if "l" in opts else str(pid))
    return 0 if hits else 1


@command("sysctl")
async def sysctl(ctx: Ctx) -> int:
    from wizard.lab import sysctl as sc

    args = list(ctx.args)
    values_only = ignore_unknown = quiet = False
    load: list[str] | None = None
    rest: list[str] = []
    while args:
        a = args.pop(0)
        if a in ("-p", "--load"):
            load = (load or []) + ([args.pop(0)] if args and not args[0].startswith("-") else ["/etc/sysctl.conf"])
        elif a == "--system":
            load = ["/etc/sysctl.d/*.conf"]
        elif a.startswith("-") and len(a) > 1 and not a.startswith("--"):
            values_only |= "n" in a
            ignore_unknown |= "e" in a
            quiet |= "q" in a
        else:
            rest.append(a)
    status = 0
    assignments: list[tuple[str, str | None]] = []
    if load is not None:
        for pattern in load:
            for path in ctx.fs.glob(pattern) or [pattern]:
                try:
                    assignments += sc.parse_conf(ctx.read_text(path))
                except FsError as exc:
                    ctx.eprint(f'sysctl: cannot open "{path}": {exc.reason}')
                    status = 255
    for a in rest:
        key, eq, value = a.partition("=")
        assignments.append((sc.normalize(key), value if eq else None))
    for key, value in assignments:
        try:
            if value is None:
                v = sc.get(ctx.host, key)
                ctx.print(v if values_only else f"{key} = {v}")
                continue
            if not ctx.root:
                ctx.eprint(f'sysctl: permission denied on key "{key}"')
                status = 255
                continue
            sc.set_(ctx.host, key, value)
            if not quiet:
                ctx.print(value.strip() if values_only else f"{key} = {value.strip()}")
        except sc.SysctlError:
            if not ignore_unknown:
                ctx.eprint(f"sysctl: cannot stat /proc/sys/{key.replace('.', '/')}: No such file or directory")
                status = 255
    return status


@command("uptime")
async def uptime(ctx: Ctx) -> int:
    up = int(ctx.host.uptime())
    ctx.print(
        f" {time.strftime('%H:%M:%S', time.gmtime())} up {up // 60} min,  1 user,  load average: 0.08, 0.03, 0.01"
    )
    return 0


@command("free")
async def free(ctx: Ctx) -> int:
    ctx.print("               total        used        free      shared  buff/cache   available")
    ctx.print("Mem:       791202168    14203412   770311220       12336     6687536   773522948")
    ctx.print("Swap:        8388604           0     8388604")
    return 0


@command("python3")
async def python3(ctx: Ctx) -> int:
    raise CommandFailed("python3: the roce-wizard simulated host does not run Python programs", 1)
